/* AMD GPUs as the kernel's KFD driver (amdkfd) describes them, without ROCm: the
 * topology below /sys/class/kfd/kfd/topology/nodes has one node per CPU socket and
 * one per ROCm device (simd_count > 0), and each node's io_links say what joins it
 * to the others. Node properties are "key value" lines; "location_id" is the PCI
 * address ((partition << 28) | (bus << 8) | devfn, the partition in bits 31:28) and
 * "domain" the PCI domain (rocm_smi_lib include/rocm_smi/rocm_smi.h, BDFID); an
 * io_link of type 11 is XGMI (CRAT_IOLINK_TYPE_XGMI, Linux drivers/gpu/drm/amd/amdkfd
 * kfd_crat.h), max_bandwidth its MB/s when the kernel knows it.
 *
 * Static: read with hwloc's discovery, kept in the per-boot cache. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "llmlaunch/file.h"
#include "annotate.h"
#include "annotations.h"
#include "sysfs.h"

#define KFD_IOLINK_XGMI 11
/* hwloc's RSMI backend's figure for an XGMI link whose bandwidth nobody states
 * (hwloc/topology-rsmi.c, "XGMI links are 100GB/s"), and its diagonal. */
#define XGMI_DEFAULT_MBPS 100000
#define XGMI_LOCAL_MBPS 1000000

struct kfd_node {
	unsigned id;
	hwloc_obj_t pci;   /* NULL: a CPU node, or a device hwloc does not have */
};

/* The value of `key` in a properties text, -1 when absent. */
static long long prop(const char *text, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, n) == 0 && p[n] == ' ')
			return strtoll(p + n + 1, NULL, 10);
	return -1;
}

static char *read_props(const char *dir)
{
	_cleanup_free_ char *path = ll_asprintf("%s/properties", dir);
	char *text = NULL;

	return ll_read_file(path, 1 << 16, &text) == 0 ? text : NULL;
}

static bool has_rsmi(hwloc_obj_t pci)
{
	for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling)
		if (c->type == HWLOC_OBJ_OS_DEVICE && c->name && ll_startswith(c->name, "rsmi"))
			return true;
	return false;
}

int ll_annotate_kfd(hwloc_topology_t topo, const char *fsroot, struct ll_error *err)
{
	_cleanup_free_ char *dir = ll_sysfs_path(fsroot, "/sys/class/kfd/kfd/topology/nodes");
	_cleanup_free_ struct kfd_node *nodes = NULL;
	_cleanup_free_ hwloc_obj_t *gpus = NULL;
	_cleanup_free_ long *bw = NULL;
	char **names = NULL;
	size_t n_names = 0, n_nodes = 0, n_gpus = 0;
	bool any_xgmi = false;
	int r = 0;

	if (ll_sysfs_list(dir, &names, &n_names) < 0)
		return 0;
	for (size_t i = 0; i < n_names; i++) {
		_cleanup_free_ char *ndir = ll_asprintf("%s/%s", dir, names[i]);
		_cleanup_free_ char *text = NULL;
		struct kfd_node *nd;
		unsigned id;
		long long loc, dom;

		if (!ll_parse_uint(names[i], &id) || !(text = read_props(ndir)))
			continue;
		nd = ll_array_push(&nodes, &n_nodes, sizeof(*nd));
		nd->id = id;
		loc = prop(text, "location_id");
		dom = prop(text, "domain");
		if (prop(text, "simd_count") <= 0 || loc < 0)
			continue;
		nd->pci = hwloc_get_pcidev_by_busid(topo, dom > 0 ? (unsigned)dom : 0, (unsigned)(loc >> 8) & 0xff,
						    (unsigned)(loc >> 3) & 0x1f, (unsigned)loc & 0x7);
		if (!nd->pci)
			continue;
		{
			bool seen = false;

			for (size_t k = 0; k < n_gpus; k++)
				seen |= gpus[k] == nd->pci;
			if (!seen)
				*(hwloc_obj_t *)ll_array_push(&gpus, &n_gpus, sizeof(hwloc_obj_t)) = nd->pci;
		}
	}
	bw = ll_calloc(n_gpus * n_gpus + 1, sizeof(long));
	for (size_t i = 0; i < n_nodes; i++) {
		_cleanup_free_ char *ldir = NULL;
		char **links = NULL;
		size_t n_links = 0, gi = 0;

		if (!nodes[i].pci)
			continue;
		while (gpus[gi] != nodes[i].pci)
			gi++;
		ldir = ll_asprintf("%s/%u/io_links", dir, nodes[i].id);
		if (ll_sysfs_list(ldir, &links, &n_links) < 0)
			continue;
		for (size_t l = 0; l < n_links; l++) {
			_cleanup_free_ char *ld = ll_asprintf("%s/%s", ldir, links[l]);
			_cleanup_free_ char *text = read_props(ld);
			long long to, mbps;

			if (!text || prop(text, "type") != KFD_IOLINK_XGMI)
				continue;
			to = prop(text, "node_to");
			mbps = prop(text, "max_bandwidth");
			for (size_t k = 0; k < n_nodes; k++) {
				size_t gj = 0;

				if ((long long)nodes[k].id != to || !nodes[k].pci || nodes[k].pci == nodes[i].pci)
					continue;
				while (gpus[gj] != nodes[k].pci)
					gj++;
				if (mbps <= 0)
					mbps = XGMI_DEFAULT_MBPS;
				/* Partitions of two devices: the devices' link is their best. */
				if (mbps > bw[gi * n_gpus + gj])
					bw[gi * n_gpus + gj] = (long)mbps;
				any_xgmi = true;
			}
		}
		ll_strv_free(links, n_links);
	}
	for (size_t g = 0; g < n_gpus; g++) {
		size_t parts = 0, peers = 0;

		for (size_t i = 0; i < n_nodes; i++)
			parts += nodes[i].pci == gpus[g];
		for (size_t k = 0; k < n_gpus; k++)
			peers += bw[g * n_gpus + k] > 0;
		if (parts > 1 && !has_rsmi(gpus[g]))
			ll_obj_info_oncef(gpus[g], LL_INFO_AMD_PARTITIONS, "%zu", parts);
		ll_obj_info_oncef(gpus[g], LL_INFO_XGMI_LINKS, "%zu", peers);
	}
	if (any_xgmi && !ll_topo_has_distances(topo, LL_DIST_XGMI))
		r = ll_topo_add_bandwidth(topo, LL_DIST_XGMI, gpus, n_gpus, bw, n_gpus, XGMI_LOCAL_MBPS, err);
	ll_strv_free(names, n_names);
	return r;
}
