/* Names of the facts llmlaunch stores in an hwloc topology (info attributes and
 * distances). This is a file format: snapshots written by one version are read by
 * later ones and attached to bug reports. Document every name in
 * docs/snapshot-format.md; never rename, only add.
 *
 * Absence of an attribute means "unknown", never "no". Where hwloc itself already
 * records a fact (HostName, DMIProductName, PortNState, PortNLID, PortNGIDk,
 * Address, GPUModel, NVIDIAUUID), that name is used and not duplicated. */
#ifndef LLMLAUNCH_PROBE_ANNOTATIONS_H
#define LLMLAUNCH_PROBE_ANNOTATIONS_H

/* Root object. */
#define LL_INFO_SNAPSHOT        "LLMLaunchSnapshot"    /* annotation format version, "1" */
#define LL_INFO_HOSTNAME        "HostName"             /* hwloc's own */
#define LL_INFO_DMI_PRODUCT     "DMIProductName"       /* hwloc's own */
#define LL_INFO_GDR_MODULE      "GPUDirectRDMAModule"  /* "nvidia_peermem", "nv_peer_mem" or "none" */
#define LL_INFO_AMD_PEER_MEMORY "AMDPeerMemory"       /* "amdkfd": RCCL's memory_peers/amdkfd/version is there */
#define LL_INFO_KERNEL_RELEASE  "KernelRelease"       /* /proc/sys/kernel/osrelease */
#define LL_INFO_NVIDIA_MODULE   "NVIDIAKernelModule"  /* "open" or "proprietary" (/proc/driver/nvidia/version) */
#define LL_INFO_PCI_SCANNED     "PCIBusScanned"       /* "1": /sys/bus/pci/devices was there to read */
#define LL_INFO_NET_PLUGINS_KNOWN "NCCLNetPluginsKnown" /* "1": the library path was searched */
#define LL_INFO_NET_PLUGIN      "NCCLNetPlugin"        /* repeated: a plugin the dynamic linker finds */
#define LL_INFO_NET_PLUGIN_OFF_PATH "NCCLNetPluginOffPath" /* repeated: one only in a vendor directory */
#define LL_INFO_IMEX_CHANNELS   "IMEXChannels"         /* number of /dev/nvidia-caps-imex-channels/channelN ("0": none) */
#define LL_INFO_IMEX_ACCESS     "IMEXChannelAccess"    /* "ok" | "denied": the first channel, read and write */
/* The IMEX service's configuration, as far as a user can read it (/etc/nvidia-imex): */
#define LL_INFO_IMEX_NODES_FILE "IMEXNodesFile"        /* the node list config.cfg names (IMEX_NODE_CONFIG_FILE) */
#define LL_INFO_IMEX_NODES      "IMEXNodes"            /* its addresses, comma-separated; "" none; absent: unreadable */
#define LL_INFO_IMEX_NODES_MISSING "IMEXNodesMissing"  /* "yes": the node list does not exist */
#define LL_INFO_IMEX_BIND       "IMEXBindAddress"      /* BIND_INTERFACE_IP, when config.cfg sets one */

/* OpenFabrics OS devices (mlx5_0, ...), per port N ("Port1LinkLayer"). hwloc's own:
 * PortNState (number), PortNLID, PortNLMC, PortNGIDk. */
#define LL_INFO_PORT_FMT_LINK_LAYER  "Port%uLinkLayer"   /* "InfiniBand" | "Ethernet" */
#define LL_INFO_PORT_FMT_RATE        "Port%uRate"        /* "200 Gb/sec (4X HDR)" verbatim */
#define LL_INFO_PORT_FMT_PHYS_STATE  "Port%uPhysState"   /* "5: LinkUp" verbatim */
#define LL_INFO_PORT_FMT_STATE_NAME  "Port%uStateName"   /* "4: ACTIVE" verbatim */
#define LL_INFO_PORT_FMT_GID_TYPE    "Port%uGID%uType"   /* "IB/RoCE v1" | "RoCE v2" */
#define LL_INFO_PORT_FMT_NETDEV      "Port%uNetdev"      /* interface bound to the port */
#define LL_INFO_PORT_FMT_GID         "Port%uGID%u"       /* hwloc's own */
#define LL_INFO_PORT_FMT_STATE       "Port%uState"       /* hwloc's own, first digit */
#define LL_INFO_PORT_FMT_LID         "Port%uLID"         /* hwloc's own */
#define LL_INFO_PORT_FMT_LMC         "Port%uLMC"         /* hwloc's own */
/* A RoCE port's QoS state (probe/qos.c, docs/roce.md): what class its traffic gets. */
#define LL_INFO_PORT_FMT_QOS_READ    "Port%uQoSRead"     /* "1": the QoS reader looked at this port */
#define LL_INFO_PORT_FMT_QOS_FORCED  "Port%uQoSForcedTClass" /* MLNX_OFED tc/N/traffic_class: "106", "none" */
#define LL_INFO_PORT_FMT_QOS_DCB     "Port%uQoSDCB"      /* "ieee", "unsupported", "not-recorded", "error: ..." */
#define LL_INFO_PORT_FMT_QOS_TRUST   "Port%uQoSTrust"    /* "dscp" | "pcp" */
#define LL_INFO_PORT_FMT_QOS_DSCP    "Port%uQoSDSCPMap"  /* "26:3,48:6" DSCP:priority; "" none */
#define LL_INFO_PORT_FMT_QOS_PFC     "Port%uQoSPFC"      /* "3": priorities with PFC, comma list; "" none */
#define LL_INFO_PORT_FMT_QOS_ECN_RP  "Port%uQoSECNRP"    /* priorities whose ECN reaction point is on */
#define LL_INFO_PORT_FMT_QOS_ECN_NP  "Port%uQoSECNNP"    /* priorities whose ECN notification point is on */
#define LL_INFO_PORT_FMT_QOS_CNP     "Port%uQoSCNPDSCP"  /* DSCP of the congestion notification packets */
#define LL_INFO_PORT_FMT_QOS_CM_TOS  "Port%uQoSRdmaCmToS" /* rdma_cm's default_roce_tos (configfs) */
#define LL_INFO_RDMA_NODE_GUID       "NodeGUID"          /* hwloc's own */
#define LL_INFO_RDMA_DRIVER          "RDMADriver"        /* basename of device/driver: "mlx5_core", "efa" */
#define LL_INFO_RDMA_NODE_TYPE       "RDMANodeType"      /* node_type verbatim: "1: CA", "7: unspecified" */
#define LL_INFO_RDMA_UVERBS          "RDMAUverbs"        /* "uverbs0", or "none" */
#define LL_INFO_RDMA_UVERBS_ACCESS   "RDMAUverbsAccess"  /* "ok", "missing", "denied" */
#define LL_INFO_RDMA_VIRTUAL         "RDMAVirtual"       /* stand-ins: "1" below /sys/devices/virtual (rxe, siw), "0" */

/* Network OS devices. */
#define LL_INFO_NET_KIND        "NetKind"      /* ethernet, infiniband, loopback, bridge, veth, docker, virbr, vlan, bond, tunnel, virtual */
#define LL_INFO_NET_VIRTUAL     "NetVirtual"   /* "1" | "0" */
#define LL_INFO_NET_OPERSTATE   "NetOperState" /* sysfs operstate verbatim */
#define LL_INFO_NET_FLAGS       "NetFlags"     /* comma list: UP,RUNNING,LOOPBACK,... */
#define LL_INFO_NET_MTU         "NetMTU"
#define LL_INFO_NET_SPEED       "NetSpeed"     /* Mb/s */
#define LL_INFO_NET_ADDRS_KNOWN "NetAddrsKnown"/* "1" when addresses were read (live only) */
#define LL_INFO_NET_ADDR        "NetAddr"      /* repeated: "10.0.0.1/24", "fe80::1/64" */
#define LL_INFO_NET_ADDRESS     "Address"      /* hwloc's own (MAC) */

/* Stand-ins: a Misc object directly below the root, named after a device that
 * /sys shows but for which hwloc created no OS device (virtual interfaces and
 * rxe0/siw0, as live probes load without HWLOC_VIRTUAL_LINUX_OSDEV; an RDMA device
 * that is neither PCI nor virtual, like scif0).
 * It carries the same infos as the OS device would, plus this marker whose value
 * is the hwloc OS device type it stands for: "OpenFabrics" or "Network". */
#define LL_INFO_STANDIN         "LLMLaunchStandIn"

/* GPU PCI devices (or their nvml/cuda OS devices, as hwloc's own backends write). */
#define LL_INFO_GPU_MODEL       "GPUModel"        /* hwloc's own name */
#define LL_INFO_GPU_UUID        "NVIDIAUUID"      /* hwloc's own name */
#define LL_INFO_NVLINKS_ACTIVE  "NVLinksActive"
#define LL_INFO_NVLINKS_INACTIVE "NVLinksInactive"
/* NVML's GPU fabric (nvmlDeviceGetGpuFabricInfoV): multi-node NVLink (GB200 NVL72). */
#define LL_INFO_FABRIC_STATE    "NVLinkFabricState"      /* not-supported, not-started, in-progress, completed */
#define LL_INFO_FABRIC_STATUS   "NVLinkFabricStatus"     /* nvmlReturn_t of the registration, "0" success (completed only) */
#define LL_INFO_FABRIC_CLUSTER  "NVLinkFabricClusterUUID" /* the NVLink domain, UUID text (completed only) */
#define LL_INFO_FABRIC_CLIQUE   "NVLinkFabricCliqueID"   /* decimal (completed only) */
#define LL_INFO_FABRIC_HEALTH   "NVLinkFabricHealthMask" /* "0x%08x" (completed, version 2 call only) */
#define LL_FABRIC_STATE_NOT_SUPPORTED "not-supported"
#define LL_FABRIC_STATE_NOT_STARTED   "not-started"
#define LL_FABRIC_STATE_IN_PROGRESS   "in-progress"
#define LL_FABRIC_STATE_COMPLETED     "completed"

#define LL_INFO_AMD_UUID        "AMDUUID"         /* hwloc's own (ROCm SMI backend) */
#define LL_INFO_AMD_PARTITIONS  "AMDPartitions"   /* on an AMD GPU PCI object: ROCm devices on it (KFD) */
#define LL_INFO_XGMI_LINKS      "XGMILinks"       /* on an AMD GPU PCI object: GPUs it has XGMI links to */
#define LL_INFO_XGMI_HIVE       "XGMIHiveID"      /* hwloc's own (ROCm SMI backend): "0" outside any XGMI hive */

/* Distances. */
#define LL_DIST_NVLINK          "NVLinkBandwidth" /* hwloc's own NVML backend name, MB/s */
#define LL_DIST_XGMI            "XGMIBandwidth"   /* hwloc's own RSMI backend name, MB/s */

#endif
