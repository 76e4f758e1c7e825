/* The small part of the NVML ABI that llmlaunch uses. NVIDIA's nvml.h is not free
 * software and is not installed on build machines, so the types are declared here
 * from the public NVML API reference ("Device Structs", "Device Enums",
 * "NvLink Methods"). probe/nvml.c loads the library with dlopen and the test double
 * tests/fake-nvml/fake_nvml.c implements the same entry points, so both include this
 * header. Only add to it; every value below is part of NVIDIA's ABI. */
#ifndef LLMLAUNCH_PROBE_NVML_ABI_H
#define LLMLAUNCH_PROBE_NVML_ABI_H

#include <stddef.h>

typedef int nvmlReturn_t; /* an enum in nvml.h: int-sized */
#define NVML_SUCCESS                    0
#define NVML_ERROR_UNINITIALIZED        1
#define NVML_ERROR_INVALID_ARGUMENT     2
#define NVML_ERROR_NOT_SUPPORTED        3
#define NVML_ERROR_NO_PERMISSION        4
#define NVML_ERROR_NOT_FOUND            6
#define NVML_ERROR_INSUFFICIENT_SIZE    7
#define NVML_ERROR_DRIVER_NOT_LOADED    9
#define NVML_ERROR_FUNCTION_NOT_FOUND   13
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH 25
#define NVML_ERROR_UNKNOWN              999

typedef struct nvmlDevice_st *nvmlDevice_t;

typedef int nvmlEnableState_t;
#define NVML_FEATURE_DISABLED 0
#define NVML_FEATURE_ENABLED  1

typedef int nvmlIntNvLinkDeviceType_t;
#define NVML_NVLINK_DEVICE_TYPE_GPU     0x00
#define NVML_NVLINK_DEVICE_TYPE_IBMNPU  0x01 /* IBM POWER CPU (NVLink to the host) */
#define NVML_NVLINK_DEVICE_TYPE_SWITCH  0x02
#define NVML_NVLINK_DEVICE_TYPE_UNKNOWN 0xFF

/* 18 since Hopper (NVML 12); older drivers answer an error for the higher links. */
#define NVML_NVLINK_MAX_LINKS 18

#define NVML_DEVICE_NAME_V2_BUFFER_SIZE        96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE        96
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE     32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE  16

/* nvmlPciInfo_t as the _v3 (device) and _v2 (NVLink remote) calls fill it. The legacy
 * 16-byte id comes first; the full "00000000:07:00.0" id is at the end. Older entry
 * points write only the first 36 bytes, so callers zero the struct first. */
typedef struct nvmlPciInfo_st {
	char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;     /* device id << 16 | vendor id */
	unsigned int pciSubSystemId;
	char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

_Static_assert(offsetof(nvmlPciInfo_t, domain) == 16, "nvmlPciInfo_t.domain offset");
_Static_assert(offsetof(nvmlPciInfo_t, pciSubSystemId) == 32, "nvmlPciInfo_t.pciSubSystemId offset");
_Static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "nvmlPciInfo_t.busId offset");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t size");

/* GPU fabric (multi-node NVLink: GB200 NVL72 and its kind), per NVML's "Device
 * Structs" for nvmlGpuFabricInfo_t / nvmlGpuFabricInfo_v2_t and the same declarations
 * in NCCL 2.30's src/include/nvmlwrap.h. The registration state is an unsigned char;
 * status is an nvmlReturn_t that means something only once the state is COMPLETED. */
#define NVML_GPU_FABRIC_UUID_LEN 16

typedef unsigned char nvmlGpuFabricState_t;
#define NVML_GPU_FABRIC_STATE_NOT_SUPPORTED 0
#define NVML_GPU_FABRIC_STATE_NOT_STARTED   1
#define NVML_GPU_FABRIC_STATE_IN_PROGRESS   2
#define NVML_GPU_FABRIC_STATE_COMPLETED     3

/* Version 1 (nvmlDeviceGetGpuFabricInfo): no version field, no health mask. */
typedef struct {
	unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
	nvmlReturn_t status;
	unsigned int cliqueId;
	nvmlGpuFabricState_t state;
} nvmlGpuFabricInfo_t;

/* Version 2 (nvmlDeviceGetGpuFabricInfoV): a version word first, the health mask last.
 * Not layout-compatible with version 1. */
typedef struct {
	unsigned int version;
	unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
	nvmlReturn_t status;
	unsigned int cliqueId;
	nvmlGpuFabricState_t state;
	unsigned int healthMask;
} nvmlGpuFabricInfo_v2_t;
typedef nvmlGpuFabricInfo_v2_t nvmlGpuFabricInfoV_t;

/* NVML_STRUCT_VERSION(GpuFabricInfo, 2): the struct's size in the low 24 bits, the
 * version above them. */
#define nvmlGpuFabricInfo_v2 ((unsigned int)(sizeof(nvmlGpuFabricInfo_v2_t) | (2u << 24)))

_Static_assert(sizeof(nvmlGpuFabricInfo_t) == 28, "nvmlGpuFabricInfo_t size");
_Static_assert(offsetof(nvmlGpuFabricInfo_t, state) == 24, "nvmlGpuFabricInfo_t.state offset");
_Static_assert(offsetof(nvmlGpuFabricInfo_v2_t, clusterUuid) == 4, "nvmlGpuFabricInfo_v2_t.clusterUuid offset");
_Static_assert(offsetof(nvmlGpuFabricInfo_v2_t, cliqueId) == 24, "nvmlGpuFabricInfo_v2_t.cliqueId offset");
_Static_assert(offsetof(nvmlGpuFabricInfo_v2_t, healthMask) == 32, "nvmlGpuFabricInfo_v2_t.healthMask offset");
_Static_assert(sizeof(nvmlGpuFabricInfo_v2_t) == 36, "nvmlGpuFabricInfo_v2_t size");

/* The health mask: 2-bit fields, each 0 not supported, 1 true, 2 false (current
 * nvml.h: width 0x3; NCCL 2.30's copy of an older header writes the width 0x11,
 * which reads bit 4 into the degraded-bandwidth field: not followed here). */
#define NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW         0
#define NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_RECOVERY      2
#define NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_UNHEALTHY     4
#define NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ACCESS_TIMEOUT_RECOVERY 6
#define NVML_GPU_FABRIC_HEALTH_MASK_WIDTH_2BIT                0x3
#define NVML_GPU_FABRIC_HEALTH_TRUE                           1

/* Entry points, by their exported (versioned) symbol names. */
typedef nvmlReturn_t (*nvmlInit_v2_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char *(*nvmlErrorString_fn)(nvmlReturn_t result);
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2_fn)(unsigned int *count);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int index, nvmlDevice_t *device);
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t device, char *name, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetUUID_fn)(nvmlDevice_t device, char *uuid, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_fn)(nvmlDevice_t device, nvmlPciInfo_t *pci);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkState_fn)(nvmlDevice_t device, unsigned int link,
						     nvmlEnableState_t *is_active);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkVersion_fn)(nvmlDevice_t device, unsigned int link,
						       unsigned int *version);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkRemotePciInfo_fn)(nvmlDevice_t device, unsigned int link,
							     nvmlPciInfo_t *pci);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkRemoteDeviceType_fn)(nvmlDevice_t device, unsigned int link,
								nvmlIntNvLinkDeviceType_t *type);

typedef nvmlReturn_t (*nvmlDeviceGetGpuFabricInfoV_fn)(nvmlDevice_t device, nvmlGpuFabricInfoV_t *info);
typedef nvmlReturn_t (*nvmlDeviceGetGpuFabricInfo_fn)(nvmlDevice_t device, nvmlGpuFabricInfo_t *info);

#endif
