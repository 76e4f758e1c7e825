/* Annotators: each adds llmlaunch info attributes (probe/annotations.h) to a live
 * hwloc topology after hwloc_topology_load(). fsroot NULL means the live machine;
 * otherwise sysfs/procfs paths are read below that directory. Each returns 0 when
 * there is simply nothing to find, -errno (and fills err) on a real failure. */
#ifndef LLMLAUNCH_PROBE_ANNOTATE_H
#define LLMLAUNCH_PROBE_ANNOTATE_H

#include <hwloc.h>

#include "llmlaunch/util.h"

/* Sysfs annotators (probe/host.c, probe/sysfs-rdma.c, probe/netif.c; names in
 * docs/snapshot-format.md, "Annotations written by the live probe").
 *
 * Where the annotated objects live, for facts.c:
 * - Live probes load without HWLOC_VIRTUAL_LINUX_OSDEV (load.c: with it hwloc
 *   also walks every virtual block device), so hwloc 2.9 makes OS devices of
 *   physical devices only. Snapshots loaded with it have OS devices of virtual
 *   interfaces and RDMA devices (lo, veth*, rxe0) below the root object.
 * - A device /sys shows but hwloc makes no OS device of (virtual interfaces,
 *   rxe0/siw0 with LL_INFO_RDMA_VIRTUAL "1", an RDMA device that is neither PCI nor
 *   virtual like scif0) becomes a Misc object directly below the root, named after the
 *   device, carrying the same infos plus LL_INFO_STANDIN = "OpenFabrics" or
 *   "Network". Read those with the OS devices; identify them by the marker, not by
 *   type Misc (hwloc adds Misc MemoryModule objects too). Creating them needs the
 *   Misc type filter at KEEP_ALL for the load (hwloc's default refuses them).
 * - Under an fsroot, hwloc's HostName/OSRelease root infos come from uname() of the
 *   machine running the probe, not from the tree; addresses are unknown there
 *   (no NetAddrsKnown). hwloc's own PortNState/PortNGIDk are copied unchecked
 *   from the files, so garbage there ("h", "") reaches the topology: validate. */
int ll_annotate_host(hwloc_topology_t topo, const char *fsroot, struct ll_error *err);
int ll_annotate_rdma(hwloc_topology_t topo, const char *fsroot, struct ll_error *err);
/* A RoCE port's QoS state (probe/qos.c): the Port%uQoS* infos on obj. Called by
 * ll_annotate_rdma() for Ethernet ports; netdev NULL when the port has none known. */
void ll_annotate_port_qos(hwloc_obj_t obj, const char *fsroot, const char *dev, unsigned port, const char *netdev);
int ll_annotate_netifs(hwloc_topology_t topo, const char *fsroot, struct ll_error *err);
/* NCCL net plugin libraries on the dynamic linker's path (probe/netplugin.c):
 * NCCLNetPlugin, NCCLNetPluginOffPath, NCCLNetPluginsKnown on the root. Called by
 * ll_annotate_host(); nothing under an fsroot that holds no /lib or /usr/lib. */
int ll_annotate_net_plugins(hwloc_topology_t topo, const char *fsroot, struct ll_error *err);
/* IMEX channels (probe/imex.c): IMEXChannels and IMEXChannelAccess on the root, read
 * below fsroot; nothing when fsroot has no /dev. Called by ll_annotate_host(). */
int ll_annotate_imex(hwloc_topology_t topo, const char *fsroot, struct ll_error *err);

/* Read the dynamic facts again (probe/dynamic.c): drop every info the three
 * annotators above write, and hwloc's own per-port RDMA infos, then run them anew;
 * refresh hwloc's HostName (live), ProcessName and network Address in place. For a
 * topology restored from the probe cache, or annotated earlier: after it, port
 * states, GID tables, interface state and addresses, the GPUDirect module and the
 * host name are those of now. Static facts (and NVML's) stay as they were. */
int ll_annotate_dynamic(hwloc_topology_t topo, const char *fsroot, struct ll_error *err);

/* probe/distances.c: a GPU bandwidth matrix as hwloc's backends write it (MB/s, the
 * diagonal `diagonal`), bw[i * stride + j] between objs[i] and objs[j]. Returns 0, or
 * -errno with err set when hwloc refuses it. */
bool ll_topo_has_distances(hwloc_topology_t topo, const char *name);
int ll_topo_add_bandwidth(hwloc_topology_t topo, const char *name, hwloc_obj_t *objs, size_t n, const long *bw,
			  size_t stride, long diagonal, struct ll_error *err);

/* AMD GPUs from the kernel's KFD topology (probe/kfd.c): for each GPU PCI object the
 * number of ROCm devices on it (AMDPartitions, when hwloc has no rsmiN for it) and of
 * XGMI peers (XGMILinks), and an XGMIBandwidth matrix between the GPUs' PCI objects
 * when the topology has none. Nothing when there is no /sys/class/kfd. */
int ll_annotate_kfd(hwloc_topology_t topo, const char *fsroot, struct ll_error *err);

/* ROCm SMI (probe/rsmi.c, dlopen of librocm_smi64): GPUModel and AMDUUID on AMD GPU
 * PCI objects, XGMILinks, and XGMIBandwidth when the topology has none. library NULL:
 * $LLMLAUNCH_ROCM_SMI_LIBRARY, else the usual names. Failure is a warning, never an
 * error (as for NVML). */
int ll_annotate_rsmi(hwloc_topology_t topo, const char *library, char **ret_warning, struct ll_error *err);

/* NVML (probe/nvml.c, docs/nvml.md): GPUModel, NVIDIAUUID, NVLinksActive/Inactive on
 * the GPU PCI objects, NVSwitch PCI objects marked with subtype "NVSwitch", and the
 * NVLinkBandwidth distances matrix. library NULL: $LLMLAUNCH_NVML_LIBRARY, else
 * "libnvidia-ml.so.1". NVSwitches are PCI devices of class 0680 that hwloc keeps only
 * when PCI devices are not filtered to the "important" ones.
 * Returns 0 also when NVML is absent (nothing recorded, no warning unless the library
 * was named explicitly) or unusable (nvmlInit fails, symbols missing, a query fails
 * midway: nothing recorded). -errno only when hwloc refuses the distances matrix. */
int ll_annotate_nvml(hwloc_topology_t topo, const char *library, char **ret_warning, struct ll_error *err);
/* A GPU's NVLink fabric registration is still under way (probe/nvml-fabric.c): its
 * state will change while the machine is up, so such a topology is not cached. */
bool ll_topo_fabric_pending(hwloc_topology_t topo);
/* *ret_warning (optional) is replaced by the warning (struct ll_probe_report's
 * nvml_warning), or NULL when there is none. */

#endif
