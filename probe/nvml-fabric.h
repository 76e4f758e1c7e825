/* A GPU's multi-node NVLink fabric as NVML reports it (probe/nvml-fabric.c), between
 * the NVML reader (probe/nvml.c) and the topology. Internal to probe/. */
#ifndef LLMLAUNCH_PROBE_NVML_FABRIC_H
#define LLMLAUNCH_PROBE_NVML_FABRIC_H

#include <stdbool.h>

#include <hwloc.h>

#include "nvml-abi.h"

/* The two entry points; either may be missing (drivers before fabric support). */
struct nvml_fabric_api {
	nvmlDeviceGetGpuFabricInfoV_fn get_v;  /* version 2: health mask too */
	nvmlDeviceGetGpuFabricInfo_fn get_v1;
};

struct nvml_fabric {
	bool known;               /* a call answered: state (and the rest, below) are NVML's */
	bool has_health;          /* healthMask came from the version 2 call */
	nvmlGpuFabricState_t state;
	nvmlReturn_t status;
	unsigned char cluster_uuid[NVML_GPU_FABRIC_UUID_LEN];
	unsigned clique_id;
	unsigned health_mask;
};

/* Ask NVML about one GPU. Never fails: what NVML does not answer stays unknown. */
void nvml_fabric_read(const struct nvml_fabric_api *api, nvmlDevice_t dev, struct nvml_fabric *ret);

/* Record a read on the GPU's PCI object (NVLinkFabric* infos, docs/snapshot-format.md). */
void nvml_fabric_apply(hwloc_obj_t gpu, const struct nvml_fabric *f);

#endif
