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

#endif
