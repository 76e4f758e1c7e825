/* Facts from a topology: struct ll_facts is a pure function of the hwloc tree, its
 * info attributes and its distances, so live probes, their saved snapshots and
 * plain lstopo exports all go through the same code. Names of the attributes are
 * in annotations.h and docs/snapshot-format.md. This file: host, GPUs, NVLink and
 * the whole; RDMA and interfaces are in facts-net.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmlaunch/probe.h"
#include "annotations.h"
#include "facts-internal.h"
#include "pci-path.h"

/* ---- small helpers ---- */

static char *bitmap_list(hwloc_const_bitmap_t set)
{
	char *s = NULL;

	if (!set || hwloc_bitmap_list_asprintf(&s, set) < 0)
		return NULL;
	/* hwloc allocates with malloc; hand it on as ours. */
	return s;
}

char *ll_facts_busid(hwloc_obj_t pci)
{
	return ll_asprintf("%04x:%02x:%02x.%x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
			   pci->attr->pcidev.dev, pci->attr->pcidev.func);
}

hwloc_obj_t ll_facts_pci_parent(hwloc_obj_t o)
{
	return o->parent && o->parent->type == HWLOC_OBJ_PCI_DEVICE ? o->parent : NULL;
}

/* NUMA node of the nearest non-I/O ancestor, when that locality is one node. */
int ll_facts_numa(hwloc_topology_t topo, hwloc_obj_t o)
{
	hwloc_obj_t a = hwloc_get_non_io_ancestor_obj(topo, o);

	if (!a || !a->nodeset || hwloc_bitmap_weight(a->nodeset) != 1)
		return -1;
	return hwloc_bitmap_first(a->nodeset);
}

static char *cpuset_of(hwloc_topology_t topo, hwloc_obj_t o)
{
	hwloc_obj_t a = hwloc_get_non_io_ancestor_obj(topo, o);

	return a ? bitmap_list(a->cpuset) : NULL;
}

long ll_facts_parse_long(const char *s, int base)
{
	char *end;
	long v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtol(s, &end, base);
	if (errno || end == s || v < 0)
		return -1;
	return v;
}

/* ---- host ---- */

static void host_facts(hwloc_topology_t topo, struct ll_facts *f)
{
	hwloc_obj_t root = hwloc_get_root_obj(topo), o;
	int n_numa = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
	int n_cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);

	f->hostname = ll_strdup(hwloc_obj_get_info_by_name(root, LL_INFO_HOSTNAME));
	f->dmi_product_name = ll_strdup(hwloc_obj_get_info_by_name(root, LL_INFO_DMI_PRODUCT));
	f->n_packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
	f->n_pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);

	if (n_numa > 0)
		f->numa_nodes = ll_calloc((size_t)n_numa, sizeof(*f->numa_nodes));
	for (int i = 0; i < n_numa; i++) {
		struct ll_numa_node *nn = &f->numa_nodes[f->n_numa_nodes++];

		o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
		nn->os_index = (int)o->os_index;
		nn->cpuset = bitmap_list(o->cpuset);
		nn->n_cores = o->cpuset ? hwloc_get_nbobjs_inside_cpuset_by_type(topo, o->cpuset, HWLOC_OBJ_CORE) : 0;
		/* hwloc answers -1 when Cores sit on several levels. */
		if (nn->n_cores < 0)
			nn->n_cores = -1;
	}
	f->cores_unknown = n_cores < 0;
	if (n_cores > 0)
		f->cores = ll_calloc((size_t)n_cores, sizeof(*f->cores));
	for (int i = 0; i < n_cores; i++) {
		struct ll_core *c = &f->cores[f->n_cores++];

		o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned)i);
		c->cpuset = bitmap_list(o->cpuset);
		c->numa_node = -1;
		if (o->nodeset && hwloc_bitmap_weight(o->nodeset) == 1)
			c->numa_node = hwloc_bitmap_first(o->nodeset);
	}
}

/* ---- GPUs and NVSwitches ---- */

static bool is_nvswitch(hwloc_obj_t pci)
{
	if (pci->subtype && strcmp(pci->subtype, "NVSwitch") == 0)
		return true;
	return pci->attr->pcidev.vendor_id == 0x10de && pci->attr->pcidev.class_id == 0x0680;
}

/* Display (0x0300 VGA, 0x0302 3D, 0x0380 other) devices of the GPU vendors, and
 * AMD's processing accelerators (0x1200: MI300A and MI300X, PCI class 1200 in
 * flux-core's tuo.SPX.xml export). Intel's 0x0300 VGA devices are integrated
 * graphics on every server CPU and never train models; its data-center GPUs (Max,
 * Flex) report 0x0380/0x0302. */
/* AMD's server-management VGAs, the board's display beside the BMC (HP ProLiant
 * G6/G7 in hwloc's 24em64t-2n6c2t-pci.xml carries an ES1000): R100-family and
 * Mach64 parts that only the radeon and mach64 display drivers know (Linux
 * include/drm/drm_pciids.h lists 0x5159, 0x515A, 0x515E as CHIP_RV100; pci.ids:
 * 0x515e and 0x5969 "ES1000", 0x4752 "Rage XL PCI"). ROCm never drives them. */
static bool amd_management_vga(unsigned device)
{
	static const unsigned ids[] = { 0x4752, 0x5159, 0x515a, 0x515e, 0x5969 };

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		if (ids[i] == device)
			return true;
	return false;
}

static enum ll_gpu_vendor gpu_vendor(hwloc_obj_t pci)
{
	unsigned cls = pci->attr->pcidev.class_id;
	unsigned vendor = pci->attr->pcidev.vendor_id;

	if (vendor == 0x1002 && cls == 0x1200)
		return LL_GPU_VENDOR_AMD;
	if (vendor == 0x1002 && amd_management_vga(pci->attr->pcidev.device_id))
		return LL_GPU_VENDOR_OTHER;
	if (cls != 0x0300 && cls != 0x0302 && cls != 0x0380)
		return LL_GPU_VENDOR_OTHER;
	switch (vendor) {
	case 0x10de:
		return LL_GPU_VENDOR_NVIDIA;
	case 0x1002:
		return LL_GPU_VENDOR_AMD;
	case 0x8086:
		return cls == 0x0300 ? LL_GPU_VENDOR_OTHER : LL_GPU_VENDOR_INTEL;
	default:
		return LL_GPU_VENDOR_OTHER;
	}
}

/* An info of the PCI object, else of its OS devices (nvml0, cuda0, opencl0d0). */
static const char *gpu_info(hwloc_obj_t pci, const char *name)
{
	const char *v = hwloc_obj_get_info_by_name(pci, name);

	for (hwloc_obj_t c = pci->io_first_child; c && !v; c = c->next_sibling)
		v = hwloc_obj_get_info_by_name(c, name);
	return v;
}

/* hwloc's ROCm SMI backend makes one GPU OS device per ROCm device, "rsmiN",
 * subtype "RSMI" (hwloc/topology-rsmi.c; hwloc 1.x exports carry no subtype). A
 * partitioned MI300 (CPX, TPX) has several below one PCI function. */
static bool is_rsmi_osdev(hwloc_obj_t o)
{
	return o->type == HWLOC_OBJ_OS_DEVICE && o->name &&
	       (ll_streq(o->subtype, "RSMI") || (!o->subtype && ll_startswith(o->name, "rsmi")));
}

struct gpu_tmp {
	hwloc_obj_t pci;
	hwloc_obj_t osdev;       /* the rsmiN of an AMD GPU, NULL otherwise */
	struct ll_gpu gpu;
};

static int gpu_tmp_cmp(const void *a, const void *b)
{
	const struct gpu_tmp *x = a, *y = b;
	int c = strcmp(x->gpu.busid, y->gpu.busid);

	return c ? c : x->gpu.partition < y->gpu.partition ? -1 : x->gpu.partition > y->gpu.partition;
}

/* NVML's fabric registration, as nvml-fabric.c recorded it; unknown when absent. */
static void gpu_fabric_fill(hwloc_obj_t pci, struct ll_gpu_fabric_info *fi)
{
	const char *state = hwloc_obj_get_info_by_name(pci, LL_INFO_FABRIC_STATE);
	const char *uuid = hwloc_obj_get_info_by_name(pci, LL_INFO_FABRIC_CLUSTER);

	fi->state = ll_streq(state, LL_FABRIC_STATE_NOT_SUPPORTED) ? LL_FABRIC_NOT_SUPPORTED
		    : ll_streq(state, LL_FABRIC_STATE_NOT_STARTED) ? LL_FABRIC_NOT_STARTED
		    : ll_streq(state, LL_FABRIC_STATE_IN_PROGRESS) ? LL_FABRIC_IN_PROGRESS
		    : ll_streq(state, LL_FABRIC_STATE_COMPLETED)   ? LL_FABRIC_COMPLETED
								   : LL_FABRIC_UNKNOWN;
	fi->status = (int)ll_facts_parse_long(hwloc_obj_get_info_by_name(pci, LL_INFO_FABRIC_STATUS), 10);
	/* A UUID of 36 characters in the 8-4-4-4-12 form; anything else is unknown. */
	fi->cluster_uuid = uuid && strlen(uuid) == 36 && strspn(uuid, "0123456789abcdef-") == 36 ? ll_strdup(uuid) : NULL;
	fi->clique_id = ll_facts_parse_long(hwloc_obj_get_info_by_name(pci, LL_INFO_FABRIC_CLIQUE), 10);
	fi->health_mask = ll_facts_parse_long(hwloc_obj_get_info_by_name(pci, LL_INFO_FABRIC_HEALTH), 16);
}

static void gpu_fill(hwloc_topology_t topo, struct gpu_tmp *t, hwloc_obj_t pci, enum ll_gpu_vendor v,
		     hwloc_obj_t osdev, int partition)
{
	const char *model = osdev ? hwloc_obj_get_info_by_name(osdev, LL_INFO_GPU_MODEL) : NULL;
	const char *uuid = osdev ? hwloc_obj_get_info_by_name(osdev, LL_INFO_AMD_UUID) : NULL;

	t->pci = pci;
	t->osdev = osdev;
	t->gpu.busid = ll_facts_busid(pci);
	t->gpu.partition = partition;
	t->gpu.vendor = v;
	t->gpu.vendor_id = pci->attr->pcidev.vendor_id;
	t->gpu.device_id = pci->attr->pcidev.device_id;
	/* CPX partitions carry an empty GPUModel: the device's name stands for them. */
	if (!model || !*model)
		model = gpu_info(pci, LL_INFO_GPU_MODEL);
	t->gpu.model = ll_strdup(model ? model : hwloc_obj_get_info_by_name(pci, "PCIDevice"));
	/* A partition without an OS device of its own has no id of its own: the
	 * device's would select another partition. */
	if (!uuid && (osdev || partition == 0))
		uuid = v == LL_GPU_VENDOR_AMD ? gpu_info(pci, LL_INFO_AMD_UUID) : gpu_info(pci, LL_INFO_GPU_UUID);
	/* ROCm SMI answers all zeros where the device has no unique id (tuo.SPX.xml). */
	if (uuid && strspn(uuid, "0") == strlen(uuid))
		uuid = NULL;
	t->gpu.uuid = ll_strdup(uuid);
	t->gpu.numa_node = ll_facts_numa(topo, pci);
	t->gpu.cpuset = cpuset_of(topo, pci);
	t->gpu.nvlinks_active = (int)ll_facts_parse_long(gpu_info(pci, LL_INFO_NVLINKS_ACTIVE), 10);
	t->gpu.nvlinks_inactive = (int)ll_facts_parse_long(gpu_info(pci, LL_INFO_NVLINKS_INACTIVE), 10);
	/* llmlaunch's NVML reader records the counts, zero included, whenever it
	 * could ask: zero active links is "no NVLink". Active links that are not in
	 * the matrix (a version it cannot map) leave the peers unknown. */
	t->gpu.links_known = t->gpu.nvlinks_active == 0;
	gpu_fabric_fill(pci, &t->gpu.nvfabric);
	/* The same for AMD: the KFD or ROCm SMI reader counted no XGMI peer. */
	if (ll_facts_parse_long(hwloc_obj_get_info_by_name(pci, LL_INFO_XGMI_LINKS), 10) == 0)
		t->gpu.links_known = true;
	/* hwloc's RSMI backend records ROCm SMI's XGMI hive id, the KFD node's hive_id
	 * (rocm_smi.cc rsmi_dev_xgmi_hive_id_get), which amdgpu leaves 0 for a GPU in no
	 * XGMI hive; it then writes no XGMIBandwidth either (topology-rsmi.c writes the
	 * matrix only when some pair is XGMI-linked). Hive 0: no XGMI, a fact (LLNL
	 * Corona's MI50 exports, hwloc 2.5 and 2.7). */
	if (v == LL_GPU_VENDOR_AMD && osdev && ll_streq(hwloc_obj_get_info_by_name(osdev, LL_INFO_XGMI_HIVE), "0"))
		t->gpu.links_known = true;
}

/* A display-class PCI device whose vendor id is not recorded (0000, which no
 * vendor holds: hwloc's trimmed nvidiagpunumanodes tarball of a POWER9 AC922 with
 * six V100) may be any vendor's GPU: the node's GPUs are then unknown. */
static bool display_without_vendor(hwloc_topology_t topo)
{
	for (hwloc_obj_t o = hwloc_get_next_pcidev(topo, NULL); o; o = hwloc_get_next_pcidev(topo, o)) {
		unsigned cls = o->attr->pcidev.class_id;

		if (o->attr->pcidev.vendor_id == 0 && (cls == 0x0300 || cls == 0x0302 || cls == 0x0380))
			return true;
	}
	return false;
}

static void gpu_facts(hwloc_topology_t topo, struct ll_facts *f, hwloc_obj_t **ret_objs, hwloc_obj_t **ret_osdevs)
{
	struct gpu_tmp *tmp = NULL;
	size_t n = 0;

	for (hwloc_obj_t o = hwloc_get_next_pcidev(topo, NULL); o; o = hwloc_get_next_pcidev(topo, o)) {
		enum ll_gpu_vendor v;
		size_t n_rsmi = 0;
		long parts;

		if (is_nvswitch(o)) {
			f->n_nvswitches++;
			continue;
		}
		v = gpu_vendor(o);
		if (v == LL_GPU_VENDOR_OTHER)
			continue;
		for (hwloc_obj_t c = o->io_first_child; v == LL_GPU_VENDOR_AMD && c; c = c->next_sibling)
			if (is_rsmi_osdev(c))
				gpu_fill(topo, ll_array_push(&tmp, &n, sizeof(*tmp)), o, v, c, (int)++n_rsmi);
		if (n_rsmi == 1)
			tmp[n - 1].gpu.partition = 0;
		if (n_rsmi)
			continue;
		/* No ROCm SMI data, but the KFD topology counted the partitions. */
		parts = ll_facts_parse_long(hwloc_obj_get_info_by_name(o, LL_INFO_AMD_PARTITIONS), 10);
		for (long k = 0; k < (parts > 1 ? parts : 1); k++)
			gpu_fill(topo, ll_array_push(&tmp, &n, sizeof(*tmp)), o, v, NULL, parts > 1 ? (int)k + 1 : 0);
	}
	if (n > 1)
		qsort(tmp, n, sizeof(*tmp), gpu_tmp_cmp);
	*ret_objs = n ? ll_calloc(n, sizeof(hwloc_obj_t)) : NULL;
	*ret_osdevs = n ? ll_calloc(n, sizeof(hwloc_obj_t)) : NULL;
	f->gpus = n ? ll_calloc(n, sizeof(*f->gpus)) : NULL;
	for (size_t i = 0; i < n; i++) {
		(*ret_objs)[i] = tmp[i].pci;
		(*ret_osdevs)[i] = tmp[i].osdev;
		f->gpus[i] = tmp[i].gpu;
	}
	f->n_gpus = n;
	free(tmp);
}

/* The GPU a matrix end stands for: its own OS device (rsmiN), or its PCI object
 * or another OS device below it (hwloc's nvmlN). A PCI end of a partitioned
 * device stands for its first partition (ll_facts_gpu_domain joins the others). */
static int gpu_index_of(hwloc_obj_t end, hwloc_obj_t *gpu_objs, hwloc_obj_t *gpu_osdevs, size_t n_gpus)
{
	hwloc_obj_t pci;

	if (!end)
		return -1;
	for (size_t i = 0; end->type == HWLOC_OBJ_OS_DEVICE && i < n_gpus; i++)
		if (gpu_osdevs[i] == end)
			return (int)i;
	pci = end->type == HWLOC_OBJ_OS_DEVICE ? ll_facts_pci_parent(end) : end;
	for (size_t i = 0; pci && i < n_gpus; i++)
		if (gpu_objs[i] == pci && (!gpu_osdevs[i] || end == pci))
			return (int)i;
	return -1;
}

/* GPUs first (by index), then NVSwitches (by bus id), then CPUs: matrix order
 * is hwloc's object order, which means nothing to a reader. */
static int nvlink_cmp(const void *a, const void *b)
{
	const struct ll_nvlink *x = a, *y = b;

	if (x->remote != y->remote)
		return x->remote < y->remote ? -1 : 1;
	if (x->remote_gpu != y->remote_gpu)
		return x->remote_gpu < y->remote_gpu ? -1 : 1;
	return strcmp(x->remote_busid ? x->remote_busid : "", y->remote_busid ? y->remote_busid : "");
}

/* The GPU-link matrices: NVLinkBandwidth names GPUs by their PCI object or by an OS
 * device below it (hwloc's NVML backend uses nvmlN), NVSwitches by PCI object, and
 * the CPU end by a package or machine; XGMIBandwidth (hwloc's RSMI backend) names
 * AMD GPUs by their rsmiN OS devices, or llmlaunch's KFD reader by PCI objects. */
static void link_matrix_facts(hwloc_topology_t topo, struct ll_facts *f, hwloc_obj_t *gpu_objs,
			      hwloc_obj_t *gpu_osdevs, const char *name, enum ll_gpu_fabric fabric)
{
	struct hwloc_distances_s *dist[4];
	unsigned nr = LL_ARRAY_SIZE(dist);

	if (f->n_gpus == 0 || hwloc_distances_get_by_name(topo, name, &nr, dist, 0) < 0)
		return;
	for (unsigned d = 0; d < nr && d < LL_ARRAY_SIZE(dist); d++) {
		struct hwloc_distances_s *m = dist[d];

		for (unsigned i = 0; i < m->nbobjs; i++) {
			int gi = gpu_index_of(m->objs[i], gpu_objs, gpu_osdevs, f->n_gpus);
			struct ll_gpu *g;

			if (gi < 0)
				continue;
			g = &f->gpus[gi];
			/* An end of the matrix: its row is the whole truth about its links. */
			g->links_known = true;
			for (size_t k = 0; m->objs[i]->type != HWLOC_OBJ_OS_DEVICE && k < f->n_gpus; k++)
				if (gpu_objs[k] == gpu_objs[gi])
					f->gpus[k].links_known = true;
			for (unsigned j = 0; j < m->nbobjs; j++) {
				hwloc_obj_t oj = m->objs[j];
				hwloc_obj_t pj = oj && oj->type == HWLOC_OBJ_OS_DEVICE ? ll_facts_pci_parent(oj) : oj;
				long bw = (long)m->values[i * m->nbobjs + j];
				enum ll_nvlink_remote kind;
				struct ll_nvlink *l = NULL;
				int gj;

				if (i == j || !oj || bw <= 0)
					continue;
				gj = gpu_index_of(oj, gpu_objs, gpu_osdevs, f->n_gpus);
				if (gj == gi)
					continue;
				if (gj >= 0)
					kind = LL_NVLINK_REMOTE_GPU;
				else if (fabric == LL_GPU_FABRIC_NVLINK && pj && pj->type == HWLOC_OBJ_PCI_DEVICE &&
					 is_nvswitch(pj))
					kind = LL_NVLINK_REMOTE_NVSWITCH;
				else if (fabric == LL_GPU_FABRIC_NVLINK && !hwloc_obj_type_is_io(oj->type))
					kind = LL_NVLINK_REMOTE_CPU;
				else
					kind = LL_NVLINK_REMOTE_UNKNOWN;
				/* Two OS devices of one GPU may both be in the matrix: one entry per remote end. */
				_cleanup_free_ char *busid = pj && pj->type == HWLOC_OBJ_PCI_DEVICE ? ll_facts_busid(pj) : NULL;
				for (size_t k = 0; k < g->n_nvlinks; k++)
					if (g->nvlinks[k].remote == kind && g->nvlinks[k].remote_gpu == gj &&
					    ll_streq(g->nvlinks[k].remote_busid, busid))
						l = &g->nvlinks[k];
				if (l) {
					if (bw > l->bandwidth_mbps)
						l->bandwidth_mbps = bw;
					continue;
				}
				l = ll_array_push(&g->nvlinks, &g->n_nvlinks, sizeof(*l));
				l->fabric = fabric;
				l->remote = kind;
				l->remote_gpu = gj;
				l->remote_busid = LL_TAKE(busid);
				l->bandwidth_mbps = bw;
			}
		}
		hwloc_distances_release(topo, m);
	}
	for (size_t i = 0; i < f->n_gpus; i++)
		if (f->gpus[i].n_nvlinks > 1)
			qsort(f->gpus[i].nvlinks, f->gpus[i].n_nvlinks, sizeof(struct ll_nvlink), nvlink_cmp);
}

/* ---- NCCL net plugins ---- */

static void net_plugin_facts(hwloc_obj_t root, struct ll_facts *f)
{
	f->net_plugins_known = ll_streq(hwloc_obj_get_info_by_name(root, LL_INFO_NET_PLUGINS_KNOWN), "1");
	for (unsigned i = 0; f->net_plugins_known && i < root->infos_count; i++) {
		const char *name = root->infos[i].name, *value = root->infos[i].value;

		if (!value || !*value)
			continue;
		if (strcmp(name, LL_INFO_NET_PLUGIN) == 0)
			*(char **)ll_array_push(&f->net_plugins, &f->n_net_plugins, sizeof(char *)) = ll_strdup(value);
		else if (strcmp(name, LL_INFO_NET_PLUGIN_OFF_PATH) == 0)
			*(char **)ll_array_push(&f->net_plugins_off_path, &f->n_net_plugins_off_path,
						sizeof(char *)) = ll_strdup(value);
	}
}

/* ---- DMA-BUF ---- */

/* Linux gained RDMA memory registration of DMA-BUFs in 5.12 (ib_umem_dmabuf), and
 * only NVIDIA's open kernel module exports GPU memory as DMA-BUF (NCCL docs,
 * troubleshooting/gpu_troubleshooting.rst: "recent Linux kernels combined with the
 * open source Nvidia GPU driver"). */
static void imex_facts(hwloc_obj_t root, struct ll_facts *f)
{
	const char *access = hwloc_obj_get_info_by_name(root, LL_INFO_IMEX_ACCESS);

	f->imex_channels = (int)ll_facts_parse_long(hwloc_obj_get_info_by_name(root, LL_INFO_IMEX_CHANNELS), 10);
	f->imex_access = ll_streq(access, "ok") ? LL_YES : ll_streq(access, "denied") ? LL_NO : LL_UNKNOWN;
	f->imex_nodes_file = ll_strdup(hwloc_obj_get_info_by_name(root, LL_INFO_IMEX_NODES_FILE));
	f->imex_nodes = ll_strdup(hwloc_obj_get_info_by_name(root, LL_INFO_IMEX_NODES));
	f->imex_nodes_missing = ll_streq(hwloc_obj_get_info_by_name(root, LL_INFO_IMEX_NODES_MISSING), "yes");
	f->imex_bind = ll_strdup(hwloc_obj_get_info_by_name(root, LL_INFO_IMEX_BIND));
}

static void dmabuf_facts(hwloc_obj_t root, struct ll_facts *f)
{
	const char *rel = hwloc_obj_get_info_by_name(root, LL_INFO_KERNEL_RELEASE);
	const char *mod = hwloc_obj_get_info_by_name(root, LL_INFO_NVIDIA_MODULE);
	enum ll_tristate kernel = LL_UNKNOWN;
	unsigned major, minor;

	f->kernel_release = ll_strdup(rel);
	f->nvidia_open_module = ll_streq(mod, "open") ? LL_YES : ll_streq(mod, "proprietary") ? LL_NO : LL_UNKNOWN;
	if (rel && sscanf(rel, "%u.%u", &major, &minor) == 2)
		kernel = major > 5 || (major == 5 && minor >= 12) ? LL_YES : LL_NO;
	if (kernel == LL_NO || f->nvidia_open_module == LL_NO)
		f->dmabuf = LL_NO;
	else if (kernel == LL_YES && f->nvidia_open_module == LL_YES)
		f->dmabuf = LL_YES;
	else
		f->dmabuf = LL_UNKNOWN;
}

/* On a node whose GPUs are mostly AMD's, GPUDirect RDMA is RCCL's: the amdkfd peer
 * memory client (host.c), never NVIDIA's modules or driver. */
static void amd_gdr_facts(hwloc_obj_t root, struct ll_facts *f)
{
	size_t amd = 0;

	for (size_t i = 0; i < f->n_gpus; i++)
		amd += f->gpus[i].vendor == LL_GPU_VENDOR_AMD;
	if (amd == 0 || amd * 2 < f->n_gpus)
		return;
	free(f->gdr_module);
	f->gdr_module = NULL;
	f->dmabuf = LL_UNKNOWN;
	if (ll_streq(hwloc_obj_get_info_by_name(root, LL_INFO_AMD_PEER_MEMORY), "amdkfd")) {
		f->gdr_ready = LL_YES;
		f->gdr_module = ll_strdup("amdkfd peer memory");
	} else {
		f->gdr_ready = LL_UNKNOWN;
	}
}

/* ---- the whole ---- */

int ll_probe_facts(hwloc_topology_t topo, const char *source, struct ll_facts **ret, struct ll_error *err)
{
	_cleanup_free_ hwloc_obj_t *gpu_objs = NULL, *gpu_osdevs = NULL, *rdma_objs = NULL;
	struct ll_facts *f;
	const char *gdr;

	(void)err;
	f = ll_calloc(1, sizeof(*f));
	f->source = ll_strdup(source);
	/* GPUs are PCI devices: without any PCI object (an export made with I/O
	 * filtered out) whether the node has GPUs is unknown. */
	f->gpus_known = hwloc_get_next_pcidev(topo, NULL) != NULL ||
			ll_streq(hwloc_obj_get_info_by_name(hwloc_get_root_obj(topo), LL_INFO_PCI_SCANNED), "1");
	if (!f->gpus_known)
		f->gpus_unknown_why = "the topology has no PCI objects (an export without I/O)";
	host_facts(topo, f);
	gpu_facts(topo, f, &gpu_objs, &gpu_osdevs);
	if (f->gpus_known && display_without_vendor(topo)) {
		f->gpus_known = false;
		f->gpus_unknown_why = "display devices without a PCI vendor id in the topology";
	}
	link_matrix_facts(topo, f, gpu_objs, gpu_osdevs, LL_DIST_NVLINK, LL_GPU_FABRIC_NVLINK);
	link_matrix_facts(topo, f, gpu_objs, gpu_osdevs, LL_DIST_XGMI, LL_GPU_FABRIC_XGMI);
	ll_facts_rdma_extract(topo, f, &rdma_objs);
	ll_facts_netifs_extract(topo, f);
	ll_facts_port_qos_finish(f);

	net_plugin_facts(hwloc_get_root_obj(topo), f);
	gdr = hwloc_obj_get_info_by_name(hwloc_get_root_obj(topo), LL_INFO_GDR_MODULE);
	if (!gdr) {
		f->gdr_ready = LL_UNKNOWN;
	} else if (strcmp(gdr, "none") == 0) {
		f->gdr_ready = LL_NO;
	} else {
		f->gdr_ready = LL_YES;
		f->gdr_module = ll_strdup(gdr);
	}

	dmabuf_facts(hwloc_get_root_obj(topo), f);
	imex_facts(hwloc_get_root_obj(topo), f);
	amd_gdr_facts(hwloc_get_root_obj(topo), f);
	if (f->n_gpus && f->n_rdma) {
		f->gpu_nic = ll_calloc(f->n_gpus * f->n_rdma, sizeof(*f->gpu_nic));
		for (size_t i = 0; i < f->n_gpus; i++)
			for (size_t j = 0; j < f->n_rdma; j++)
				f->gpu_nic[i * f->n_rdma + j] = ll_pci_path(gpu_objs[i], rdma_objs[j]);
	}
	*ret = f;
	return 0;
}
