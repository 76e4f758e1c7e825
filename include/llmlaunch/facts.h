/* Facts about one node, as the probe learned them. Plain C data, derived entirely
 * from an annotated hwloc topology (see docs/snapshot-format.md), so a live probe and
 * the replay of its saved snapshot give identical facts.
 *
 * Unknown is never guessed: strings are NULL, numbers are -1 (or LL_UNKNOWN for
 * tri-states), enums have an _UNKNOWN member. */
#ifndef LLMLAUNCH_FACTS_H
#define LLMLAUNCH_FACTS_H

#include <stdbool.h>
#include <stddef.h>

enum ll_tristate { LL_UNKNOWN = -1, LL_NO = 0, LL_YES = 1 };

/* nvidia-smi's PCIe path classes, ordered from closest to farthest. NCCL has no
 * NODE class: it counts NODE as PHB. */
enum ll_path {
	LL_PATH_UNKNOWN = 0,
	LL_PATH_PIX,  /* at most one PCIe switch (bridge) between the two */
	LL_PATH_PXB,  /* several bridges, not through the host bridge */
	LL_PATH_PHB,  /* through one PCIe host bridge */
	LL_PATH_NODE, /* between host bridges of one NUMA node */
	LL_PATH_SYS,  /* across the inter-socket link (different NUMA nodes) */
};
const char *ll_path_name(enum ll_path p);        /* "PIX"...; "?" for unknown */
enum ll_path ll_path_from_name(const char *s);   /* LL_PATH_UNKNOWN if not a class */

enum ll_gpu_vendor { LL_GPU_VENDOR_OTHER = 0, LL_GPU_VENDOR_NVIDIA, LL_GPU_VENDOR_AMD, LL_GPU_VENDOR_INTEL };
const char *ll_gpu_vendor_name(enum ll_gpu_vendor v);

enum ll_nvlink_remote {
	LL_NVLINK_REMOTE_UNKNOWN = 0,
	LL_NVLINK_REMOTE_GPU,
	LL_NVLINK_REMOTE_NVSWITCH,
	LL_NVLINK_REMOTE_CPU,
};
const char *ll_nvlink_remote_name(enum ll_nvlink_remote r);

/* The fabric of a GPU-GPU link: NVIDIA's NVLink (NVLinkBandwidth) or AMD's XGMI
 * (Infinity Fabric links, hwloc's XGMIBandwidth). */
enum ll_gpu_fabric { LL_GPU_FABRIC_NVLINK = 0, LL_GPU_FABRIC_XGMI };
const char *ll_gpu_fabric_name(enum ll_gpu_fabric f); /* "NVLink", "XGMI" */

/* One GPU link (NVLink or XGMI), aggregated per remote end as hwloc's bandwidth
 * matrices record it. */
struct ll_nvlink {
	enum ll_gpu_fabric fabric;
	enum ll_nvlink_remote remote;
	int remote_gpu;          /* index into ll_facts.gpus, or -1 */
	char *remote_busid;      /* PCI bus id of the remote end, NULL if unknown */
	long bandwidth_mbps;     /* MB/s as in NVLinkBandwidth, -1 unknown */
};

/* A GPU's registration with a multi-node NVLink fabric (NVML's GPU fabric info;
 * GB200 NVL72: 72 GPUs of 18 nodes in one NVLink domain). */
enum ll_fabric_state {
	LL_FABRIC_UNKNOWN = 0,        /* NVML did not say (no NVML, an older driver, a snapshot without it) */
	LL_FABRIC_NOT_SUPPORTED,      /* the GPU is in no such fabric */
	LL_FABRIC_NOT_STARTED,
	LL_FABRIC_IN_PROGRESS,
	LL_FABRIC_COMPLETED,
};
const char *ll_fabric_state_name(enum ll_fabric_state s); /* "completed" ...; NULL unknown */

/* The degraded-bandwidth field of NVML's fabric health mask (bits 0-1: 1 true). */
#define LL_FABRIC_HEALTH_DEGRADED_BW(mask) (((mask) & 0x3) == 1)

struct ll_gpu_fabric_info {
	enum ll_fabric_state state;
	int status;               /* nvmlReturn_t of the registration (completed only), -1 unknown */
	char *cluster_uuid;       /* the NVLink domain, NULL unknown */
	long clique_id;           /* -1 unknown */
	long health_mask;         /* -1 unknown (older drivers have none) */
};

struct ll_gpu {
	char *busid;             /* "0000:07:00.0" */
	/* An AMD GPU split into partitions (MI300 CPX/TPX: several ROCm devices on one
	 * PCI function, hwloc's rsmiN OS devices): each is a GPU of its own here, the
	 * partition's number on its device; -1 for a whole device. */
	int partition;
	enum ll_gpu_vendor vendor;
	unsigned vendor_id, device_id;
	char *model;             /* "NVIDIA A100-SXM4-40GB", NULL if unknown */
	char *uuid;              /* NVML UUID ("GPU-..."), AMD's unique id (ROCm SMI); NULL if unknown */
	int numa_node;           /* OS index of the nearest NUMA node, -1 unknown */
	char *cpuset;            /* hwloc list string of local PUs, e.g. "0-15,64-79" */
	struct ll_nvlink *nvlinks;
	size_t n_nvlinks;
	int nvlinks_active;      /* from NVML: active links, -1 unknown */
	int nvlinks_inactive;    /* from NVML: links present but down, -1 unknown */
	/* The GPU's links are known: it is an end of a GPU-link matrix (NVLinkBandwidth),
	 * or NVML's link counts were recorded. False: nvlinks says nothing, not "none". */
	bool links_known;
	struct ll_gpu_fabric_info nvfabric; /* multi-node NVLink; state UNKNOWN when not known */
};

enum ll_link_layer { LL_LINK_LAYER_UNKNOWN = 0, LL_LINK_LAYER_INFINIBAND, LL_LINK_LAYER_ETHERNET };
const char *ll_link_layer_name(enum ll_link_layer l); /* "InfiniBand", "Ethernet", NULL */

enum ll_gid_type { LL_GID_TYPE_UNKNOWN = 0, LL_GID_TYPE_IB_ROCE_V1, LL_GID_TYPE_ROCE_V2 };
const char *ll_gid_type_name(enum ll_gid_type t); /* "IB/RoCE v1", "RoCE v2" as sysfs spells them */

/* Bounds on what a topology may claim, beyond which a value is unknown rather than
 * a fact: a GID table has at most 256 entries (NCCL_IB_GID_INDEX is -1..255), and no
 * port runs at more than 10 Tb/s (XDR InfiniBand is 800 Gb/s per 4x port). */
#define LL_GID_INDEX_MAX 255
#define LL_PORT_RATE_MAX_GBPS 10000.0

struct ll_gid {
	unsigned index;          /* 0..LL_GID_INDEX_MAX */
	char *gid;               /* "fe80:0000:...", as sysfs prints it */
	enum ll_gid_type type;
	bool ipv4_mapped;        /* ::ffff:a.b.c.d */
	bool link_local;         /* fe80::/10 */
};

/* Port state numbers as the kernel reports them ("4: ACTIVE"). */
enum ll_port_state {
	LL_PORT_STATE_UNKNOWN = 0, LL_PORT_DOWN = 1, LL_PORT_INIT = 2, LL_PORT_ARMED = 3,
	LL_PORT_ACTIVE = 4, LL_PORT_ACTIVE_DEFER = 5,
};
const char *ll_port_state_name(enum ll_port_state s);

/* A RoCE port's QoS state (probe/qos.c, docs/roce.md). Each fact is known, or unknown
 * with a reason (static text) the planner and explain repeat. Nothing below `read`
 * means anything while it is false (facts built by hand start zeroed). */
struct ll_port_qos {
	bool read;               /* the snapshot has the QoS reader's annotations for this port */
	int forced_tclass;       /* MLNX_OFED's forced class 0-255; -1 none forced; -2 unknown */
	const char *forced_why;  /* why unknown, NULL when known */
	const char *dcb;         /* "ieee", "unsupported", "not-recorded", "error: ..."; NULL unknown */
	enum ll_qos_trust { LL_QOS_TRUST_UNKNOWN = 0, LL_QOS_TRUST_PCP, LL_QOS_TRUST_DSCP } trust;
	signed char dscp_prio[64]; /* priority of each DSCP, -1 unmapped (meaningful with trust known) */
	int pfc_mask;            /* bit p: PFC on priority p; -1 unknown */
	int ecn_rp_mask, ecn_np_mask; /* ECN reaction / notification point per priority; -1 unknown */
	const char *ecn_why;     /* why ECN is unknown, NULL when known */
	int cnp_dscp;            /* -1 unknown */
	int cm_tos;              /* rdma_cm's default ToS, -1 unknown or not configured */
	long netdev_mtu;         /* the port's interface MTU, -1 unknown */
	int active_mtu;          /* the RoCE path MTU that interface allows (256..4096), -1 unknown */
};
/* Why DCB facts are unknown on q ("no DCB support ..."), NULL when they are known. */
const char *ll_port_qos_dcb_why(const struct ll_port_qos *q);

struct ll_rdma_port {
	unsigned number;
	enum ll_port_state state;
	char *phys_state;        /* "5: LinkUp", NULL unknown */
	enum ll_link_layer link_layer;
	char *rate;              /* "200 Gb/sec (4X HDR)", NULL unknown */
	double rate_gbps;        /* parsed from rate, -1 unknown (or beyond LL_PORT_RATE_MAX_GBPS) */
	long lid;                /* -1 unknown */
	struct ll_gid *gids;
	size_t n_gids;
	char *netdev;            /* network interface of this port, NULL if none known */
	struct ll_port_qos qos;  /* Ethernet ports */
};

/* What can drive an RDMA device (ll_rdma_classify): decided from the driver, the
 * kernel's node type and the PCI vendor/device, never from the device's name (udev
 * renames mlx5_0 to ibp12s0 and efa_0 to rdmap197s0). */
enum ll_rdma_class {
	LL_RDMA_CLASS_UNKNOWN = 0, /* nothing recorded tells */
	LL_RDMA_CLASS_VERBS,       /* an RC verbs device NCCL's own IB transport drives */
	LL_RDMA_CLASS_PLUGIN,      /* usable only through a net plugin (aws-ofi-nccl + libfabric) */
	LL_RDMA_CLASS_SOFTWARE,    /* rxe, siw: the CPU does the transport; only on request */
	LL_RDMA_CLASS_UNUSABLE,    /* NCCL cannot use it (usNIC, switches, bridges) */
};
const char *ll_rdma_class_name(enum ll_rdma_class c); /* "verbs", "plugin", ...; NULL unknown */

/* node_type: the number of the kernel's node_type file ("1: CA" is 1), -1 unknown.
 * on_pci: the device has a PCI parent; virtual_: it lives below /sys/devices/virtual.
 * *ret_why (static text, naming the source of the rule) and *ret_provider (the
 * libfabric provider of a PLUGIN device: "efa", "cxi"; NULL otherwise) may be NULL. */
enum ll_rdma_class ll_rdma_classify(const char *driver, int node_type, unsigned vendor_id, unsigned device_id,
				    bool on_pci, bool virtual_, const char **ret_why, const char **ret_provider);

struct ll_rdma_device {
	char *name;              /* "mlx5_0" */
	char *busid;             /* PCI bus id, NULL for virtual devices */
	unsigned vendor_id, device_id;
	char *model;             /* PCI name when known */
	int numa_node;           /* -1 unknown */
	char *node_guid;
	struct ll_rdma_port *ports;
	size_t n_ports;
	char **netdevs;          /* every interface of the device */
	size_t n_netdevs;
	char *driver;            /* sysfs device/driver ("mlx5_core", "efa"), NULL unknown */
	int node_type;           /* the kernel's node type number (1 CA, 4 RNIC, 6 usNIC UDP, 7 unspecified), -1 */
	enum ll_rdma_class rdma_class;
	const char *class_why;   /* static text: what the class was decided from, with its source */
	const char *provider;    /* libfabric provider of a PLUGIN device ("efa"), NULL otherwise */
	/* User-space access (rdma-core opens /dev/infiniband/uverbsN): the uverbs device
	 * ("uverbs0"; "" when the kernel has none for it: ib_uverbs not loaded; NULL
	 * unknown) and whether this process can open it. */
	char *uverbs;
	enum ll_uverbs_access { LL_UVERBS_UNKNOWN = 0, LL_UVERBS_OK, LL_UVERBS_MISSING, LL_UVERBS_DENIED } uverbs_access;
};

enum ll_netif_kind {
	LL_NETIF_UNKNOWN = 0,
	LL_NETIF_ETHERNET,
	LL_NETIF_INFINIBAND,     /* IPoIB */
	LL_NETIF_LOOPBACK,
	LL_NETIF_BRIDGE,
	LL_NETIF_VETH,
	LL_NETIF_DOCKER,
	LL_NETIF_VIRBR,
	LL_NETIF_VLAN,
	LL_NETIF_BOND,
	LL_NETIF_TUNNEL,
	LL_NETIF_OTHER_VIRTUAL,
};
const char *ll_netif_kind_name(enum ll_netif_kind k);

/* The kind a record tells when no probe annotated it (a plain lstopo export, an
 * address list from getifaddrs): the loopback's name, the names container and VM
 * tools give their devices (docker*, veth*, virbr*, br-*), and the hardware address
 * (`mac` as text: 20 bytes is IPoIB; 6 bytes on a PCI function, Ethernet).
 * UNKNOWN when none of these tells. The one place interface kinds are inferred:
 * the facts, the planner and the agreement all take the kind from here. */
enum ll_netif_kind ll_netif_kind_infer(const char *name, const char *mac, bool on_pci_device);

/* What an interface may carry between nodes, in the planner's and the agreement's
 * one view. Container and VM interfaces (docker*, veth*, virbr*) and loopback never
 * join nodes (NCCL's own default skips docker, lo and virbr too); bridges, VLANs,
 * bonds and tunnels do, after physical ports. */
enum ll_netif_role {
	LL_NETIF_ROLE_PHYSICAL = 0, /* Ethernet or another device-backed interface */
	LL_NETIF_ROLE_IPOIB,
	LL_NETIF_ROLE_VIRTUAL,      /* bridges, VLANs, bonds, tunnels: usable, less preferred */
	LL_NETIF_ROLE_CONTAINER,    /* docker, virbr, veth: never chosen */
	LL_NETIF_ROLE_LOOPBACK,     /* only when every node is this same host */
};
enum ll_netif_role ll_netif_role(enum ll_netif_kind kind, bool virtual_);

struct ll_addr {
	int family;              /* AF_INET or AF_INET6 */
	char *addr;              /* numeric text */
	unsigned prefixlen;
};

struct ll_netif {
	char *name;
	enum ll_netif_kind kind;
	bool kind_inferred;      /* kind from ll_netif_kind_infer(), not from the probe */
	bool virtual_;           /* no physical device behind it (lo, docker0, veth*, virbr*, bridges) */
	char *operstate;         /* "up", "down", ... NULL unknown */
	enum ll_tristate up;     /* IFF_UP */
	enum ll_tristate running;/* IFF_RUNNING */
	long mtu;                /* -1 unknown */
	long speed_mbps;         /* -1 unknown */
	char *mac;               /* NULL unknown */
	char *busid;             /* PCI bus id, NULL if none */
	char *rdma_device;       /* owning RDMA device, NULL if none */
	/* An HPE Slingshot (Cassini, CXI) NIC: hwloc's subtype "Slingshot", or a PCI
	 * function of vendor 17db (Cray). Not a verbs device: NCCL reaches the fabric
	 * only through aws-ofi-nccl and libfabric's cxi provider. */
	bool slingshot;
	int numa_node;           /* -1 unknown */
	bool addrs_known;        /* false under --fsroot or for snapshots without addresses */
	struct ll_addr *addrs;
	size_t n_addrs;
};

struct ll_numa_node {
	int os_index;
	char *cpuset;            /* hwloc list string */
	int n_cores;             /* -1 unknown (cores_unknown) */
};

struct ll_core {
	int numa_node;           /* OS index, -1 if the machine has no NUMA info */
	char *cpuset;            /* PUs of this core, hwloc list string */
};

struct ll_facts {
	/* What the topology can tell at all. A plain lstopo export may hold no I/O
	 * objects (hwloc's I/O filters, or an excerpt): then the lists below are empty
	 * because nothing was recorded, not because the node has nothing. */
	bool gpus_known;         /* PCI objects exist: gpus[] is every GPU of the node */
	const char *gpus_unknown_why; /* static text when !gpus_known: what the topology lacks */
	bool netdevs_known;      /* network or RDMA OS devices exist: rdma[] and netifs[] are complete */
	char *hostname;          /* NULL unknown */
	char *dmi_product_name;  /* /sys/class/dmi/id/product_name, NULL unknown */
	char *source;            /* "live", "fsroot:DIR" or "snapshot:FILE" */
	int n_packages;
	int n_pus;
	struct ll_numa_node *numa_nodes;
	size_t n_numa_nodes;
	struct ll_core *cores;   /* in logical order */
	size_t n_cores;
	/* The topology has Core objects on more than one level (a Core inside a Core:
	 * no real machine, a damaged or crafted file): the count is unknown and the
	 * list empty, never a "0 cores" that reads as a fact. */
	bool cores_unknown;

	struct ll_gpu *gpus;     /* in PCI bus id order */
	size_t n_gpus;
	size_t n_nvswitches;

	struct ll_rdma_device *rdma;  /* in name order (natural: mlx5_2 before mlx5_10) */
	size_t n_rdma;

	struct ll_netif *netifs;  /* in name order */
	size_t n_netifs;

	/* NCCL net plugin libraries the dynamic linker would find (LD_LIBRARY_PATH, the
	 * ld.so.conf directories, the default ones), in its order: "libnccl-net.so" and
	 * the "libnccl-net-NAME.so" forms. net_plugins_off_path: the same names found
	 * only in vendor directories NCCL does not search (/opt/amazon/ofi-nccl/lib).
	 * Unknown (false) for plain exports. */
	bool net_plugins_known;
	char **net_plugins;
	size_t n_net_plugins;
	char **net_plugins_off_path;
	size_t n_net_plugins_off_path;

	enum ll_tristate gdr_ready;   /* GPUDirect RDMA kernel module loaded */
	char *gdr_module;             /* "nvidia_peermem", "nv_peer_mem", NULL */
	/* DMA-BUF, NCCL's other way to GPUDirect RDMA: Linux 5.12 or later and NVIDIA's
	 * open kernel module (NCCL docs, troubleshooting/gpu_troubleshooting.rst). */
	char *kernel_release;         /* "6.1.0-18-amd64", NULL unknown */
	enum ll_tristate nvidia_open_module; /* the loaded nvidia.ko is the open one */
	enum ll_tristate dmabuf;      /* derived from the two above */
	/* IMEX channels (/dev/nvidia-caps-imex-channels/channelN), which multi-node
	 * NVLink needs: how many, -1 unknown; whether this user may open the first. */
	int imex_channels;
	enum ll_tristate imex_access;
	/* The IMEX service's node list (/etc/nvidia-imex/config.cfg names it), as far as
	 * this user can read it: the file (NULL: IMEX's config unknown), its addresses
	 * ("a,b,c" as inet_ntop writes them; NULL: not readable), whether it is missing,
	 * and BIND_INTERFACE_IP (NULL: unset, the service finds this node in the list). */
	char *imex_nodes_file;
	char *imex_nodes;
	bool imex_nodes_missing;
	char *imex_bind;

	/* PCIe path class between gpus[i] and rdma[j]: gpu_nic[i * n_rdma + j]. */
	enum ll_path *gpu_nic;
};

/* Why the GPUs are unknown: the facts' own words, else the usual cause. */
static inline const char *ll_facts_gpus_unknown_why(const struct ll_facts *f)
{
	return f->gpus_unknown_why ? f->gpus_unknown_why : "the topology has no PCI objects (an export without I/O)";
}

void ll_facts_free(struct ll_facts *f);
static inline void ll_facts_freep(struct ll_facts **f) { if (*f) { ll_facts_free(*f); *f = NULL; } }

static inline enum ll_path ll_facts_gpu_nic(const struct ll_facts *f, size_t gpu, size_t nic)
{
	return f->gpu_nic ? f->gpu_nic[gpu * f->n_rdma + nic] : LL_PATH_UNKNOWN;
}

/* GPUDirect RDMA can work: a peer-memory module is loaded or DMA-BUF is usable;
 * NO when both are known not to be; else unknown. */
enum ll_tristate ll_facts_gdr_usable(const struct ll_facts *f);

/* Nearest RDMA device to a GPU (lowest path class, then lowest index); -1 if none. */
int ll_facts_nearest_rdma(const struct ll_facts *f, size_t gpu);

/* Size of the NVLink domain of the GPUs gpus[0..n) (indices into f->gpus; NULL:
 * every GPU): the largest set of them joined by NVLink, directly or through
 * NVSwitches. 1 when every one of them is known to have no link to another; 0
 * without GPUs (known); -1 unknown: GPUs unknown, or some GPU's links unknown. */
int ll_facts_gpu_domain(const struct ll_facts *f, const int *gpus, size_t n);
/* The fabric the links of those GPUs are of (the first link's), or -1 when none is
 * known to have a link. */
int ll_facts_gpu_fabric(const struct ll_facts *f, const int *gpus, size_t n);

/* Is net_plugins[i] aws-ofi-nccl? Its install names libnccl-net-ofi.so and
 * libnccl-net-aws-ofi.so, or a libnccl-net.so beside one of them or in an ofi-nccl
 * directory (another libnccl-net.so, HPC-X's IBext plugin, is not it). */
bool ll_facts_net_plugin_is_ofi(const struct ll_facts *f, size_t i);

const struct ll_netif *ll_facts_netif(const struct ll_facts *f, const char *name);
const struct ll_rdma_device *ll_facts_rdma(const struct ll_facts *f, const char *name);

#endif
