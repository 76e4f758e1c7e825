/* NVML at run time: GPU names, UUIDs and NVLink, loaded with dlopen so that one
 * binary runs on CPU nodes (no NVML at all) and GPU nodes alike.
 *
 * The work is done in two phases so a failing NVML leaves nothing half-written:
 * first every answer is read into memory and the library is closed again; only
 * then is the topology changed (the distances matrix first, because it is the one
 * step that can fail, then the info attributes).
 *
 * The NVLinkBandwidth matrix follows hwloc's own NVML backend (hwloc/topology-nvml.c)
 * so snapshots look the same as exports from an hwloc built with NVML: GPUs,
 * NVSwitch PCI objects and, for NVLink to an IBM POWER CPU, the GPU's first CPU-side
 * ancestor (a Package in hwloc-v2x-power8gpudistances.xml); 20000 MB/s per NVLink 1
 * link, 25000 per NVLink 2-4 link, summed per remote end; 1000000 on the diagonal.
 * One difference: Debian's hwloc has no NVML backend, so there are no nvmlN OS
 * devices and the GPU ends are the GPU PCI objects. */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <hwloc.h>

#include "llmlaunch/file.h"
#include "llmlaunch/probe.h"

#include "annotate.h"
#include "annotations.h"
#include "nvml-abi.h"
#include "nvml-fabric.h"

#define LL_NVML_DEFAULT_LIBRARY "libnvidia-ml.so.1"
#define LL_NVML_LIBRARY_ENV     "LLMLAUNCH_NVML_LIBRARY"

/* hwloc's choice for the diagonal: local memory is faster than any link. */
#define LL_NVLINK_LOCAL_BW 1000000

struct nvml_api {
	void *dl;
	nvmlInit_v2_fn init;
	nvmlShutdown_fn shutdown;
	nvmlDeviceGetCount_v2_fn get_count;
	nvmlDeviceGetHandleByIndex_v2_fn get_handle;
	nvmlDeviceGetPciInfo_fn get_pci;
	/* Optional: without them the facts they give stay unknown. */
	nvmlErrorString_fn error_string;
	nvmlDeviceGetName_fn get_name;
	nvmlDeviceGetUUID_fn get_uuid;
	nvmlDeviceGetNvLinkState_fn link_state;
	nvmlDeviceGetNvLinkVersion_fn link_version;
	nvmlDeviceGetNvLinkRemotePciInfo_fn link_remote_pci;
	nvmlDeviceGetNvLinkRemoteDeviceType_fn link_remote_type; /* R460 and later */
	struct nvml_fabric_api fabric;                           /* multi-node NVLink drivers */
};

struct pci_addr {
	unsigned domain, bus, dev, func;
};

struct nvml_link {
	bool exists;              /* the state query answered for this link number */
	bool active;
	bool remote_known;
	struct pci_addr remote;
	nvmlIntNvLinkDeviceType_t remote_type;
	unsigned version;         /* 0: unknown */
};

struct nvml_gpu {
	struct pci_addr pci;
	char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
	char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
	bool links_known;         /* NVLink state could be asked */
	int n_active, n_inactive;
	struct nvml_link links[NVML_NVLINK_MAX_LINKS];
	struct nvml_fabric fabric;
};

struct nvml_scan {
	struct nvml_gpu *gpus;
	unsigned n;
};

static void *nvml_sym(void *dl, const char *const *names)
{
	for (; *names; names++) {
		void *p = dlsym(dl, *names);
		if (p)
			return p;
	}
	return NULL;
}

#define NVML_SYMS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* Resolve the entry points. Returns the name of the first missing required symbol,
 * or NULL when the library is usable. */
static const char *nvml_api_resolve(struct nvml_api *api)
{
	const struct {
		size_t offset;
		const char *const *names;
		bool required;
	} syms[] = {
#define SYM(field, req, ...) { offsetof(struct nvml_api, field), NVML_SYMS(__VA_ARGS__), req }
		SYM(init, true, "nvmlInit_v2"),
		SYM(shutdown, true, "nvmlShutdown"),
		SYM(get_count, true, "nvmlDeviceGetCount_v2"),
		SYM(get_handle, true, "nvmlDeviceGetHandleByIndex_v2"),
		/* _v3 adds the full bus id; _v2 still has the numeric fields. */
		SYM(get_pci, true, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"),
		SYM(error_string, false, "nvmlErrorString"),
		SYM(get_name, false, "nvmlDeviceGetName"),
		SYM(get_uuid, false, "nvmlDeviceGetUUID"),
		SYM(link_state, false, "nvmlDeviceGetNvLinkState"),
		SYM(link_version, false, "nvmlDeviceGetNvLinkVersion"),
		SYM(link_remote_pci, false, "nvmlDeviceGetNvLinkRemotePciInfo_v2",
		    "nvmlDeviceGetNvLinkRemotePciInfo"),
		SYM(link_remote_type, false, "nvmlDeviceGetNvLinkRemoteDeviceType"),
		SYM(fabric.get_v, false, "nvmlDeviceGetGpuFabricInfoV"),
		SYM(fabric.get_v1, false, "nvmlDeviceGetGpuFabricInfo"),
#undef SYM
	};
	for (size_t i = 0; i < LL_ARRAY_SIZE(syms); i++) {
		void *p = nvml_sym(api->dl, syms[i].names);
		if (!p && syms[i].required)
			return syms[i].names[0];
		memcpy((char *)api + syms[i].offset, &p, sizeof(p));
	}
	return NULL;
}

static const char *nvml_strerror(const struct nvml_api *api, nvmlReturn_t r)
{
	const char *s = api->error_string ? api->error_string(r) : NULL;
	return s ? s : "unknown error";
}

/* NVML spells bus ids "00000000:07:00.0" (32-bit domain) in busId and
 * "0000:07:00.0" in busIdLegacy; older entry points fill only the numbers. */
static struct pci_addr nvml_pci_addr(const nvmlPciInfo_t *pci)
{
	struct pci_addr a = { pci->domain, pci->bus, pci->device, 0 };
	const char *texts[] = { pci->busId, pci->busIdLegacy };
	for (size_t i = 0; i < LL_ARRAY_SIZE(texts); i++) {
		size_t cap = i == 0 ? sizeof(pci->busId) : sizeof(pci->busIdLegacy);
		char buf[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE + 1];
		struct pci_addr t;
		memcpy(buf, texts[i], cap);
		buf[cap] = '\0';
		if (sscanf(buf, "%x:%x:%x.%x", &t.domain, &t.bus, &t.dev, &t.func) == 4)
			return t;
	}
	return a;
}

static bool pci_addr_same_device(const struct pci_addr *a, const struct pci_addr *b)
{
	/* NVLink peers are matched on domain, bus and device as hwloc does:
	 * the remote end reports function 0 of a multi-function device. */
	return a->domain == b->domain && a->bus == b->bus && a->dev == b->dev;
}

static void nvml_read_links(const struct nvml_api *api, nvmlDevice_t dev, struct nvml_gpu *g)
{
	if (!api->link_state)
		return;
	g->links_known = true;
	for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
		struct nvml_link *link = &g->links[l];
		nvmlEnableState_t state = NVML_FEATURE_DISABLED;
		/* Links a GPU does not have answer an error (NOT_SUPPORTED or
		 * INVALID_ARGUMENT), and they need not be the last numbers. */
		if (api->link_state(dev, l, &state) != NVML_SUCCESS)
			continue;
		link->exists = true;
		link->active = state == NVML_FEATURE_ENABLED;
		if (!link->active) {
			g->n_inactive++;
			continue;
		}
		g->n_active++;
		link->remote_type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
		if (api->link_remote_type) {
			nvmlIntNvLinkDeviceType_t t;
			if (api->link_remote_type(dev, l, &t) == NVML_SUCCESS)
				link->remote_type = t;
		}
		if (api->link_remote_pci) {
			nvmlPciInfo_t pci;
			memset(&pci, 0, sizeof(pci));
			if (api->link_remote_pci(dev, l, &pci) == NVML_SUCCESS) {
				link->remote_known = true;
				link->remote = nvml_pci_addr(&pci);
			}
		}
		if (api->link_version) {
			unsigned v = 0;
			if (api->link_version(dev, l, &v) == NVML_SUCCESS)
				link->version = v;
		}
	}
}

/* Phase 1: read everything NVML knows into memory. Returns 0, or -1 with the
 * reason in *warn when NVML cannot be used (then scan is left empty). */
static int nvml_scan_read(const struct nvml_api *api, struct nvml_scan *scan, struct ll_buf *warn)
{
	nvmlReturn_t r;
	unsigned n = 0;

	if ((r = api->init()) != NVML_SUCCESS) {
		ll_buf_addf(warn, "nvmlInit_v2 failed: %s (%d)", nvml_strerror(api, r), r);
		return -1;
	}
	if ((r = api->get_count(&n)) != NVML_SUCCESS) {
		ll_buf_addf(warn, "nvmlDeviceGetCount_v2 failed: %s (%d)", nvml_strerror(api, r), r);
		goto fail;
	}
	scan->gpus = n ? ll_calloc(n, sizeof(*scan->gpus)) : NULL;
	scan->n = n;
	for (unsigned i = 0; i < n; i++) {
		struct nvml_gpu *g = &scan->gpus[i];
		nvmlDevice_t dev = NULL;
		nvmlPciInfo_t pci;

		if ((r = api->get_handle(i, &dev)) != NVML_SUCCESS) {
			ll_buf_addf(warn, "nvmlDeviceGetHandleByIndex_v2 failed for GPU %u: %s (%d)", i,
				    nvml_strerror(api, r), r);
			goto fail;
		}
		memset(&pci, 0, sizeof(pci));
		if ((r = api->get_pci(dev, &pci)) != NVML_SUCCESS) {
			ll_buf_addf(warn, "nvmlDeviceGetPciInfo failed for GPU %u: %s (%d)", i,
				    nvml_strerror(api, r), r);
			goto fail;
		}
		g->pci = nvml_pci_addr(&pci);
		/* Name and UUID may be unsupported on old boards: then they stay unknown. */
		if (api->get_name && api->get_name(dev, g->name, sizeof(g->name)) != NVML_SUCCESS)
			g->name[0] = '\0';
		if (api->get_uuid && api->get_uuid(dev, g->uuid, sizeof(g->uuid)) != NVML_SUCCESS)
			g->uuid[0] = '\0';
		g->name[sizeof(g->name) - 1] = '\0';
		g->uuid[sizeof(g->uuid) - 1] = '\0';
		nvml_read_links(api, dev, g);
		nvml_fabric_read(&api->fabric, dev, &g->fabric);
	}
	api->shutdown();
	return 0;

fail:
	api->shutdown();
	free(scan->gpus);
	scan->gpus = NULL;
	scan->n = 0;
	return -1;
}

/* Per-link unidirectional bandwidth in MB/s, as hwloc's NVML backend counts it
 * (NVIDIA's figures are bidirectional and per GPU). 0: version not known. */
static uint64_t nvlink_link_bandwidth(unsigned version)
{
	if (version == 1)
		return 20000;
	if (version >= 2 && version <= 4)
		return 25000;
	return 0;
}

struct nvlink_matrix {
	hwloc_obj_t *objs;
	size_t n, cap;
	uint64_t *bw;        /* cap x cap, row-major with stride cap */
	hwloc_obj_t *switches; /* NVSwitch PCI objects to mark with subtype NVSwitch */
	size_t n_switches;
};

static size_t matrix_index(struct nvlink_matrix *m, hwloc_obj_t obj)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->objs[i] == obj)
			return i;
	m->objs[m->n] = obj;
	return m->n++;
}

static void pci_addr_format(const struct pci_addr *a, char buf[static 24])
{
	snprintf(buf, 24, "%04x:%02x:%02x.%x", a->domain & 0xffffffffu, a->bus & 0xffu, a->dev & 0xffu,
		 a->func & 0xfu);
}

/* The hwloc object at the far end of a GPU's active link, or NULL when it is not in
 * the topology (then *why says so) or not an end hwloc would record. */
static hwloc_obj_t nvlink_peer(hwloc_topology_t topo, hwloc_obj_t gpu_obj, const struct nvml_link *link,
			       bool *is_switch, const char **why)
{
	hwloc_obj_t obj = hwloc_get_pcidev_by_busid(topo, link->remote.domain, link->remote.bus,
						    link->remote.dev, link->remote.func);
	nvmlIntNvLinkDeviceType_t type = link->remote_type;

	*is_switch = false;
	*why = NULL;
	if (type == NVML_NVLINK_DEVICE_TYPE_UNKNOWN) {
		/* Drivers before R460 do not say: hwloc guesses from the PCI class
		 * (0x06xx bridge: IBM 1014 is the POWER CPU, NVIDIA 10de an NVSwitch). */
		if (!obj || (obj->attr->pcidev.class_id >> 8) != 0x06)
			return NULL;
		if (obj->attr->pcidev.vendor_id == 0x1014)
			type = NVML_NVLINK_DEVICE_TYPE_IBMNPU;
		else if (obj->attr->pcidev.vendor_id == 0x10de)
			type = NVML_NVLINK_DEVICE_TYPE_SWITCH;
		else
			return NULL;
	}
	switch (type) {
	case NVML_NVLINK_DEVICE_TYPE_IBMNPU:
		/* The NPU bridge's own locality is the whole machine on POWER8; the
		 * GPU's locality is right, as hwloc notes. */
		return hwloc_get_non_io_ancestor_obj(topo, gpu_obj);
	case NVML_NVLINK_DEVICE_TYPE_SWITCH:
		if (!obj) {
			*why = "NVSwitch";
			return NULL;
		}
		*is_switch = true;
		return obj;
	default:
		/* A GPU NVML does not list (hidden by cgroups or CUDA_VISIBLE_DEVICES
		 * handling in the driver): not an end we can name. */
		return NULL;
	}
}

/* Phase 2a: the NVLinkBandwidth matrix over the GPU PCI objects gpu_objs[] (NULL for
 * GPUs not in the topology) and their peers. Returns the number of links counted. */
static unsigned nvlink_matrix_build(hwloc_topology_t topo, const struct nvml_scan *scan, hwloc_obj_t *gpu_objs,
				    struct nvlink_matrix *m, struct ll_buf *warn)
{
	unsigned counted = 0;
	bool warned_version = false, warned_peer = false;

	m->cap = scan->n * (NVML_NVLINK_MAX_LINKS + 1);
	m->objs = ll_calloc(m->cap ? m->cap : 1, sizeof(*m->objs));
	m->bw = ll_calloc(m->cap ? m->cap * m->cap : 1, sizeof(*m->bw));
	m->switches = ll_calloc(m->cap ? m->cap : 1, sizeof(*m->switches));
	for (unsigned i = 0; i < scan->n; i++)
		if (gpu_objs[i])
			matrix_index(m, gpu_objs[i]);

	for (unsigned i = 0; i < scan->n; i++) {
		const struct nvml_gpu *g = &scan->gpus[i];
		if (!gpu_objs[i])
			continue;
		size_t gi = matrix_index(m, gpu_objs[i]);
		for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
			const struct nvml_link *link = &g->links[l];
			hwloc_obj_t peer = NULL;
			bool is_switch = false;
			char a[24], b[24];

			if (!link->active || !link->remote_known)
				continue;
			for (unsigned j = 0; j < scan->n; j++) {
				if (pci_addr_same_device(&scan->gpus[j].pci, &link->remote)) {
					/* Both GPUs report a GPU-GPU link: count it once,
					 * from the lower index, as hwloc does. */
					if (j < i || !gpu_objs[j])
						goto next_link;
					peer = gpu_objs[j];
					break;
				}
			}
			if (!peer) {
				const char *why;
				peer = nvlink_peer(topo, gpu_objs[i], link, &is_switch, &why);
				if (!peer) {
					if (why && !warned_peer) {
						pci_addr_format(&link->remote, a);
						pci_addr_format(&g->pci, b);
						ll_buf_addf(warn, "%sNVLink peer %s '%s' of GPU '%s' is not in the topology"
							    " (are PCI bridges of class 0680 filtered out?)",
							    warn->len ? "; " : "", why, a, b);
						warned_peer = true;
					}
					continue;
				}
			}
			uint64_t bw = nvlink_link_bandwidth(link->version);
			if (!bw) {
				if (!warned_version) {
					pci_addr_format(&g->pci, b);
					ll_buf_addf(warn, "%sunknown NVLink version %u on GPU '%s' link %u: its bandwidth"
						    " is left out of " LL_DIST_NVLINK, warn->len ? "; " : "",
						    link->version, b, l);
					warned_version = true;
				}
				continue;
			}
			size_t pi = matrix_index(m, peer);
			m->bw[gi * m->cap + pi] += bw;
			m->bw[pi * m->cap + gi] += bw;
			if (is_switch) {
				bool seen = false;
				for (size_t s = 0; s < m->n_switches; s++)
					seen |= m->switches[s] == peer;
				if (!seen)
					m->switches[m->n_switches++] = peer;
			}
			counted++;
next_link:;
		}
	}
	return counted;
}

static void nvlink_matrix_release(struct nvlink_matrix *m)
{
	free(m->objs);
	free(m->bw);
	free(m->switches);
}

static int nvlink_matrix_commit(hwloc_topology_t topo, struct nvlink_matrix *m, struct ll_error *err)
{
	_cleanup_free_ long *bw = ll_calloc(m->n * m->cap + 1, sizeof(long));

	for (size_t i = 0; i < m->n; i++)
		for (size_t j = 0; j < m->n; j++)
			bw[i * m->cap + j] = (long)m->bw[i * m->cap + j];
	return ll_topo_add_bandwidth(topo, LL_DIST_NVLINK, m->objs, m->n, bw, m->cap, LL_NVLINK_LOCAL_BW, err);
}

static void obj_add_info_once(hwloc_obj_t obj, const char *name, const char *value)
{
	if (!hwloc_obj_get_info_by_name(obj, name))
		hwloc_obj_add_info(obj, name, value);
}

/* Phase 2: record the scan in the topology. */
static int nvml_apply(hwloc_topology_t topo, const struct nvml_scan *scan, struct ll_buf *warn,
		      struct ll_error *err)
{
	_cleanup_free_ hwloc_obj_t *gpu_objs = ll_calloc(scan->n ? scan->n : 1, sizeof(*gpu_objs));
	struct nvlink_matrix m = { 0 };
	int r = 0;

	for (unsigned i = 0; i < scan->n; i++) {
		const struct pci_addr *p = &scan->gpus[i].pci;
		gpu_objs[i] = hwloc_get_pcidev_by_busid(topo, p->domain, p->bus, p->dev, p->func);
		if (!gpu_objs[i]) {
			char a[24];
			pci_addr_format(p, a);
			ll_buf_addf(warn, "%sNVML GPU %u '%s' is not in the topology", warn->len ? "; " : "", i, a);
		}
	}

	/* A topology from an hwloc built with NVML already has hwloc's own matrix. */
	if (!ll_topo_has_distances(topo, LL_DIST_NVLINK) && nvlink_matrix_build(topo, scan, gpu_objs, &m, warn) > 0) {
		r = nvlink_matrix_commit(topo, &m, err);
		if (r < 0)
			goto out;
		for (size_t s = 0; s < m.n_switches; s++)
			if (!m.switches[s]->subtype)
				m.switches[s]->subtype = ll_strdup("NVSwitch"); /* hwloc's marker */
	}

	for (unsigned i = 0; i < scan->n; i++) {
		const struct nvml_gpu *g = &scan->gpus[i];
		hwloc_obj_t obj = gpu_objs[i];
		char num[16];
		if (!obj)
			continue;
		if (g->name[0])
			obj_add_info_once(obj, LL_INFO_GPU_MODEL, g->name);
		if (g->uuid[0])
			obj_add_info_once(obj, LL_INFO_GPU_UUID, g->uuid);
		if (g->links_known) {
			snprintf(num, sizeof(num), "%d", g->n_active);
			obj_add_info_once(obj, LL_INFO_NVLINKS_ACTIVE, num);
			snprintf(num, sizeof(num), "%d", g->n_inactive);
			obj_add_info_once(obj, LL_INFO_NVLINKS_INACTIVE, num);
		}
		nvml_fabric_apply(obj, &g->fabric);
	}
out:
	nvlink_matrix_release(&m);
	return r;
}

int ll_annotate_nvml(hwloc_topology_t topo, const char *library, char **ret_warning, struct ll_error *err)
{
	struct nvml_api api = { 0 };
	struct nvml_scan scan = { 0 };
	struct ll_buf warn, why;
	bool explicit_library;
	const char *missing;
	int r = 0;

	ll_buf_init(&warn);
	ll_buf_init(&why);

	if (!library || !*library)
		library = getenv(LL_NVML_LIBRARY_ENV);
	if (!library || !*library)
		library = LL_NVML_DEFAULT_LIBRARY;
	/* Callers may pass the default name themselves: absent, it is still the
	 * quiet "no NVIDIA driver here" case. */
	explicit_library = strcmp(library, LL_NVML_DEFAULT_LIBRARY) != 0;
	errno = 0;
	api.dl = dlopen(library, RTLD_NOW | RTLD_LOCAL);
	if (!api.dl) {
		ll_io_resource_note(-errno);
		/* No NVML is the normal state of a CPU node; a library the user
		 * named and that cannot be loaded is worth a word. */
		if (explicit_library) {
			const char *e = dlerror();
			ll_buf_addf(&warn, "cannot load NVML library '%s': %s", library, e ? e : "unknown error");
		}
		goto out;
	}
	if ((missing = nvml_api_resolve(&api))) {
		ll_buf_addf(&warn, "'%s' is not a usable NVML library: it lacks '%s'", library, missing);
		goto out;
	}
	if (nvml_scan_read(&api, &scan, &why) < 0) {
		ll_buf_addf(&warn, "NVML library '%s' is unusable: %s; GPU names, UUIDs and NVLink are unknown",
			    library, why.s);
		goto out;
	}
	/* Close before touching the topology: nothing below calls NVML. */
	dlclose(api.dl);
	api.dl = NULL;
	r = nvml_apply(topo, &scan, &warn, err);

out:
	if (api.dl)
		dlclose(api.dl);
	free(scan.gpus);
	if (ret_warning) {
		free(*ret_warning);
		*ret_warning = warn.len ? ll_buf_detach(&warn) : NULL;
	}
	ll_buf_release(&warn);
	ll_buf_release(&why);
	return r;
}
