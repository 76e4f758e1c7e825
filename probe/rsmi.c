/* ROCm SMI at run time: AMD GPU names, unique ids and XGMI links, loaded with
 * dlopen so that one binary runs on nodes without ROCm (the same two phases as
 * probe/nvml.c: everything is read first and the library closed, then the topology
 * is changed, so a failing library leaves nothing half-written).
 *
 * What is written follows hwloc's own RSMI backend (hwloc/topology-rsmi.c), on the
 * GPUs' PCI objects where hwloc's would be rsmiN OS devices (Debian's hwloc has no
 * RSMI backend): GPUModel, AMDUUID, and an XGMIBandwidth matrix of 100000 MB/s per
 * XGMI-connected pair (1000000 on the diagonal) when the topology has none; plus
 * XGMILinks (peers counted) and AMDPartitions (ROCm devices on one PCI function:
 * MI300 in CPX or TPX mode), as the KFD reader writes them. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "annotate.h"
#include "annotations.h"
#include "rsmi-abi.h"
#include "sysfs.h"

#define LL_RSMI_LIBRARY_ENV "LLMLAUNCH_ROCM_SMI_LIBRARY"
#define XGMI_MBPS 100000
#define XGMI_LOCAL_MBPS 1000000

/* ROCm installs librocm_smi64.so.N in /opt/rocm/lib (usually on the linker's path
 * through ld.so.conf.d); the unversioned name needs the -dev package. */
static const char *const default_libraries[] = {
	"librocm_smi64.so.7", "librocm_smi64.so.6", "librocm_smi64.so.5", "librocm_smi64.so",
	"/opt/rocm/lib/librocm_smi64.so.7", "/opt/rocm/lib/librocm_smi64.so.6",
};

struct rsmi_api {
	void *dl;
	rsmi_init_fn init;
	rsmi_shut_down_fn shut_down;
	rsmi_num_monitor_devices_fn num_devices;
	rsmi_dev_pci_id_get_fn pci_id;
	/* Optional: without them the facts they give stay unknown. */
	rsmi_dev_name_get_fn name;
	rsmi_dev_unique_id_get_fn unique_id;
	rsmi_topo_get_link_type_fn link_type;
	rsmi_status_string_fn status_string;
};

struct rsmi_dev {
	uint64_t bdfid;
	char name[256];
	uint64_t uuid;
	bool uuid_known;
};

struct rsmi_scan {
	struct rsmi_dev *devs;
	uint32_t n;
	bool *xgmi;           /* n x n; NULL when link types cannot be asked */
};

static const char *status_text(const struct rsmi_api *a, rsmi_status_t st)
{
	const char *s = NULL;

	if (a->status_string && a->status_string(st, &s) == RSMI_STATUS_SUCCESS && s)
		return s;
	return "unknown error";
}

/* Returns the name of the first required symbol that is missing, or NULL. */
static const char *api_resolve(struct rsmi_api *a)
{
	struct {
		void **fn;
		const char *name;
		bool required;
	} syms[] = {
		{ (void **)&a->init, "rsmi_init", true },
		{ (void **)&a->shut_down, "rsmi_shut_down", true },
		{ (void **)&a->num_devices, "rsmi_num_monitor_devices", true },
		{ (void **)&a->pci_id, "rsmi_dev_pci_id_get", true },
		{ (void **)&a->name, "rsmi_dev_name_get", false },
		{ (void **)&a->unique_id, "rsmi_dev_unique_id_get", false },
		{ (void **)&a->link_type, "rsmi_topo_get_link_type", false },
		{ (void **)&a->status_string, "rsmi_status_string", false },
	};

	for (size_t i = 0; i < LL_ARRAY_SIZE(syms); i++) {
		*syms[i].fn = dlsym(a->dl, syms[i].name);
		if (!*syms[i].fn && syms[i].required)
			return syms[i].name;
	}
	return NULL;
}

/* Phase 1. Returns 0, or -1 with the reason in *why (scan left empty). */
static int scan_read(const struct rsmi_api *a, struct rsmi_scan *s, struct ll_buf *why)
{
	rsmi_status_t st;
	uint32_t n = 0;

	st = a->init(0);
	if (st != RSMI_STATUS_SUCCESS) {
		ll_buf_addf(why, "rsmi_init failed: %s (%d)", status_text(a, st), st);
		return -1;
	}
	st = a->num_devices(&n);
	if (st != RSMI_STATUS_SUCCESS || n > 1024) {
		ll_buf_addf(why, "rsmi_num_monitor_devices failed: %s (%d)", status_text(a, st), st);
		goto fail;
	}
	s->devs = ll_calloc(n ? n : 1, sizeof(*s->devs));
	s->n = n;
	for (uint32_t i = 0; i < n; i++) {
		struct rsmi_dev *d = &s->devs[i];

		st = a->pci_id(i, &d->bdfid);
		if (st != RSMI_STATUS_SUCCESS) {
			ll_buf_addf(why, "rsmi_dev_pci_id_get failed for GPU %u: %s (%d)", i, status_text(a, st), st);
			goto fail;
		}
		if (a->name && a->name(i, d->name, sizeof(d->name)) != RSMI_STATUS_SUCCESS)
			d->name[0] = '\0';
		d->name[sizeof(d->name) - 1] = '\0';
		d->uuid_known = a->unique_id && a->unique_id(i, &d->uuid) == RSMI_STATUS_SUCCESS && d->uuid;
	}
	if (a->link_type && n > 1) {
		s->xgmi = ll_calloc((size_t)n * n, sizeof(bool));
		for (uint32_t i = 0; i < n; i++)
			for (uint32_t j = 0; j < n; j++) {
				uint64_t hops = 0;
				RSMI_IO_LINK_TYPE t = 0;

				if (i != j && a->link_type(i, j, &hops, &t) == RSMI_STATUS_SUCCESS)
					s->xgmi[(size_t)i * n + j] = t == RSMI_IOLINK_TYPE_XGMI;
			}
	}
	a->shut_down();
	return 0;
fail:
	a->shut_down();
	free(s->devs);
	*s = (struct rsmi_scan){ 0 };
	return -1;
}

static hwloc_obj_t pci_of(hwloc_topology_t topo, uint64_t bdfid)
{
	return hwloc_get_pcidev_by_busid(topo, (unsigned)(bdfid >> 32), (unsigned)(bdfid >> 8) & 0xff,
					 (unsigned)(bdfid >> 3) & 0x1f, (unsigned)bdfid & 0x7);
}

static bool has_rsmi_osdev(hwloc_obj_t pci)
{
	for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling)
		if (c->type == HWLOC_OBJ_OS_DEVICE && c->name && ll_startswith(c->name, "rsmi"))
			return true;
	return false;
}

/* Phase 2: record the scan on the GPUs' PCI objects. */
static int scan_apply(hwloc_topology_t topo, const struct rsmi_scan *s, struct ll_buf *warn, struct ll_error *err)
{
	_cleanup_free_ hwloc_obj_t *objs = ll_calloc(s->n + 1, sizeof(hwloc_obj_t));
	_cleanup_free_ hwloc_obj_t *uniq = ll_calloc(s->n + 1, sizeof(hwloc_obj_t));
	_cleanup_free_ long *bw = ll_calloc((size_t)s->n * s->n + 1, sizeof(long));
	size_t n_uniq = 0;
	bool any_xgmi = false;

	for (uint32_t i = 0; i < s->n; i++) {
		size_t k = 0;

		objs[i] = pci_of(topo, s->devs[i].bdfid);
		if (!objs[i]) {
			ll_buf_addf(warn, "%sROCm SMI GPU %u (%04x:%02x:%02x.%x) is not in the topology", warn->len ? "; " : "",
				    i, (unsigned)(s->devs[i].bdfid >> 32), (unsigned)(s->devs[i].bdfid >> 8) & 0xff,
				    (unsigned)(s->devs[i].bdfid >> 3) & 0x1f, (unsigned)s->devs[i].bdfid & 0x7);
			continue;
		}
		while (k < n_uniq && uniq[k] != objs[i])
			k++;
		if (k == n_uniq)
			uniq[n_uniq++] = objs[i];
	}
	for (uint32_t i = 0; s->xgmi && i < s->n; i++)
		for (uint32_t j = 0; j < s->n; j++) {
			size_t a = 0, b = 0;

			if (!objs[i] || !objs[j] || objs[i] == objs[j] || !s->xgmi[(size_t)i * s->n + j])
				continue;
			while (uniq[a] != objs[i])
				a++;
			while (uniq[b] != objs[j])
				b++;
			bw[a * s->n + b] = XGMI_MBPS;
			any_xgmi = true;
		}
	if (any_xgmi && !ll_topo_has_distances(topo, LL_DIST_XGMI)) {
		int r = ll_topo_add_bandwidth(topo, LL_DIST_XGMI, uniq, n_uniq, bw, s->n, XGMI_LOCAL_MBPS, err);

		if (r < 0)
			return r;
	}
	for (size_t u = 0; u < n_uniq; u++) {
		size_t parts = 0, peers = 0;

		for (uint32_t i = 0; i < s->n; i++) {
			if (objs[i] != uniq[u])
				continue;
			if (parts++ == 0) {
				if (s->devs[i].name[0])
					ll_obj_info_once(uniq[u], LL_INFO_GPU_MODEL, s->devs[i].name);
				if (s->devs[i].uuid_known)
					ll_obj_info_oncef(uniq[u], LL_INFO_AMD_UUID, "%016llx",
							  (unsigned long long)s->devs[i].uuid);
			}
		}
		for (size_t k = 0; k < n_uniq; k++)
			peers += bw[u * s->n + k] > 0;
		if (parts > 1 && !has_rsmi_osdev(uniq[u]))
			ll_obj_info_oncef(uniq[u], LL_INFO_AMD_PARTITIONS, "%zu", parts);
		if (s->xgmi || s->n == 1)
			ll_obj_info_oncef(uniq[u], LL_INFO_XGMI_LINKS, "%zu", peers);
	}
	return 0;
}

int ll_annotate_rsmi(hwloc_topology_t topo, const char *library, char **ret_warning, struct ll_error *err)
{
	struct rsmi_api api = { 0 };
	struct rsmi_scan scan = { 0 };
	struct ll_buf warn, why;
	const char *missing;
	bool explicit_library = library && *library;
	int r = 0;

	ll_buf_init(&warn);
	ll_buf_init(&why);
	/* Only the kernel's KFD driver makes ROCm devices: without it, ROCm SMI has
	 * nothing to say, and loading it (a C++ library) is not worth its cost. */
	if (!explicit_library && !ll_sysfs_is_dir("/sys/class/kfd"))
		goto out;
	if (explicit_library) {
		api.dl = dlopen(library, RTLD_NOW | RTLD_LOCAL);
		if (!api.dl) {
			const char *e = dlerror();

			ll_buf_addf(&warn, "cannot load ROCm SMI library '%s': %s", library, e ? e : "unknown error");
			goto out;
		}
	} else {
		for (size_t i = 0; i < LL_ARRAY_SIZE(default_libraries) && !api.dl; i++) {
			library = default_libraries[i];
			api.dl = dlopen(library, RTLD_NOW | RTLD_LOCAL);
		}
		if (!api.dl)
			goto out; /* KFD without ROCm's libraries: the KFD reader said it all */
	}
	if ((missing = api_resolve(&api))) {
		ll_buf_addf(&warn, "'%s' is not a usable ROCm SMI library: it lacks '%s'", library, missing);
		goto out;
	}
	if (scan_read(&api, &scan, &why) < 0) {
		ll_buf_addf(&warn, "ROCm SMI library '%s' is unusable: %s; AMD GPU names, ids and XGMI links come from "
				   "KFD alone", library, why.s);
		goto out;
	}
	dlclose(api.dl);
	api.dl = NULL;
	r = scan_apply(topo, &scan, &warn, err);
out:
	if (api.dl)
		dlclose(api.dl);
	free(scan.devs);
	free(scan.xgmi);
	if (ret_warning) {
		free(*ret_warning);
		*ret_warning = warn.len ? ll_buf_detach(&warn) : NULL;
	}
	ll_buf_release(&warn);
	ll_buf_release(&why);
	return r;
}
