/* The GPU fabric of rack-scale NVLink systems (GB200 NVL72: 18 nodes, one NVLink
 * domain through switch trays): NVML's nvmlDeviceGetGpuFabricInfoV, or the older
 * nvmlDeviceGetGpuFabricInfo where a driver lacks it, per GPU. NCCL reads the same
 * call for every rank and enables multi-node NVLink only when every rank's state is
 * COMPLETED and the cluster UUIDs are not zero (NCCL 2.30, src/mnnvl.cc
 * ncclMnnvlCheck, src/init.cc): so the state, the status, the cluster UUID and the
 * clique id are recorded as NVML gives them, and the decisions are the planner's. */
#include <stdio.h>
#include <string.h>

#include "annotations.h"
#include "nvml-fabric.h"
#include "sysfs.h"

void nvml_fabric_read(const struct nvml_fabric_api *api, nvmlDevice_t dev, struct nvml_fabric *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (api->get_v) {
		nvmlGpuFabricInfoV_t v;

		memset(&v, 0, sizeof(v));
		v.version = nvmlGpuFabricInfo_v2;
		/* NCCL presets NOT_SUPPORTED the same way: a driver that answers an
		 * error leaves the struct alone. */
		v.state = NVML_GPU_FABRIC_STATE_NOT_SUPPORTED;
		nvmlReturn_t r = api->get_v(dev, &v);
		if (r == NVML_SUCCESS) {
			ret->known = true;
			ret->has_health = true;
			ret->state = v.state;
			ret->status = v.status;
			memcpy(ret->cluster_uuid, v.clusterUuid, sizeof(ret->cluster_uuid));
			ret->clique_id = v.cliqueId;
			ret->health_mask = v.healthMask;
			return;
		}
		if (r == NVML_ERROR_NOT_SUPPORTED) {
			/* A GPU outside any NVLink fabric (PCIe boards, HGX without NVL). */
			ret->known = true;
			ret->state = NVML_GPU_FABRIC_STATE_NOT_SUPPORTED;
			return;
		}
		/* Another error (a struct version this driver does not take): the
		 * version 1 call may still answer. */
	}
	if (api->get_v1) {
		nvmlGpuFabricInfo_t v1;
		nvmlReturn_t r;

		memset(&v1, 0, sizeof(v1));
		v1.state = NVML_GPU_FABRIC_STATE_NOT_SUPPORTED;
		r = api->get_v1(dev, &v1);
		if (r == NVML_SUCCESS) {
			ret->known = true;
			ret->state = v1.state;
			ret->status = v1.status;
			memcpy(ret->cluster_uuid, v1.clusterUuid, sizeof(ret->cluster_uuid));
			ret->clique_id = v1.cliqueId;
		} else if (r == NVML_ERROR_NOT_SUPPORTED) {
			ret->known = true;
			ret->state = NVML_GPU_FABRIC_STATE_NOT_SUPPORTED;
		}
	}
}

static const char *state_name(nvmlGpuFabricState_t s)
{
	switch (s) {
	case NVML_GPU_FABRIC_STATE_NOT_SUPPORTED: return LL_FABRIC_STATE_NOT_SUPPORTED;
	case NVML_GPU_FABRIC_STATE_NOT_STARTED: return LL_FABRIC_STATE_NOT_STARTED;
	case NVML_GPU_FABRIC_STATE_IN_PROGRESS: return LL_FABRIC_STATE_IN_PROGRESS;
	case NVML_GPU_FABRIC_STATE_COMPLETED: return LL_FABRIC_STATE_COMPLETED;
	default: return NULL;
	}
}

void nvml_fabric_apply(hwloc_obj_t gpu, const struct nvml_fabric *f)
{
	const char *state = f->known ? state_name(f->state) : NULL;
	const unsigned char *u = f->cluster_uuid;

	/* A state this header does not know is not guessed at: nothing is recorded. */
	if (!state)
		return;
	ll_obj_info_once(gpu, LL_INFO_FABRIC_STATE, state);
	if (f->state == NVML_GPU_FABRIC_STATE_NOT_SUPPORTED)
		return;
	/* The rest means something only once registration completed (NVML: "status
	 * must be checked only if state returns complete"); before that NVML has no
	 * cluster and no clique to report. */
	if (f->state != NVML_GPU_FABRIC_STATE_COMPLETED)
		return;
	ll_obj_info_oncef(gpu, LL_INFO_FABRIC_STATUS, "%d", f->status);
	ll_obj_info_oncef(gpu, LL_INFO_FABRIC_CLUSTER,
			  "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
			  u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	ll_obj_info_oncef(gpu, LL_INFO_FABRIC_CLIQUE, "%u", f->clique_id);
	if (f->has_health)
		ll_obj_info_oncef(gpu, LL_INFO_FABRIC_HEALTH, "0x%08x", f->health_mask);
}

bool ll_topo_fabric_pending(hwloc_topology_t topo)
{
	for (hwloc_obj_t o = NULL; (o = hwloc_get_next_pcidev(topo, o));) {
		const char *state = hwloc_obj_get_info_by_name(o, LL_INFO_FABRIC_STATE);

		if (ll_streq(state, LL_FABRIC_STATE_NOT_STARTED) || ll_streq(state, LL_FABRIC_STATE_IN_PROGRESS))
			return true;
	}
	return false;
}
