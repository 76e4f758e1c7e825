/* A test double of libnvidia-ml.so.1 for machines without an NVIDIA GPU. It exports
 * the entry points probe/nvml.c resolves with dlsym, with NVIDIA's ABI (probe/nvml-abi.h),
 * and answers from a scenario chosen by $FAKE_NVML_SCENARIO:
 *
 *   dgx8 (default)   8 H100 GPUs, 18 NVLink 4 links each: 5, 4, 4 and 5 links to the
 *                    4 NVSwitches (as on a DGX H100)
 *   inactive-link    dgx8, but link 17 of GPU 3 is down
 *   no-nvlink        8 GPUs whose NVLink queries answer NOT_SUPPORTED (PCIe boards)
 *   unknown-version  dgx8, but every link reports NVLink version 9
 *   p2p              4 P100 GPUs (NVLink 1, 4 links): 0-1 and 2-3 joined by 2 links
 *                    each, 2 links from each GPU to the IBM POWER CPU
 *   init-fails       nvmlInit_v2 answers DRIVER_NOT_LOADED
 *   handle-fails     nvmlDeviceGetHandleByIndex_v2 fails for GPU 5
 *
 * The bus ids match tests/fixtures/gen-dgx-sysfs.sh. Built twice more by
 * tests/cmake/fake-nvml.cmake: with FAKE_NVML_NO_INIT (no nvmlInit_v2: a library that
 * is not NVML) and FAKE_NVML_OLD (a pre-R460 driver: no remote device type, no _v3/_v2
 * PCI entry points, only the numeric PCI fields).
 *
 * GPU fabric (multi-node NVLink, GB200 NVL72), when FAKE_NVML_FABRIC_CLIQUE is set
 * (otherwise both fabric calls answer FUNCTION_NOT_FOUND, and nothing is recorded):
 *   FAKE_NVML_FABRIC_CLUSTER  the NVLink domain: the UUID's last byte (default 1)
 *   FAKE_NVML_FABRIC_CLIQUE   the clique id of every GPU
 *   FAKE_NVML_FABRIC_STATE    0-3, NVML's registration state (default 3, completed),
 *   FAKE_NVML_FABRIC_STATUS   the registration's nvmlReturn_t (default 0),
 *   FAKE_NVML_FABRIC_HEALTH   the health mask (default 0x2: bandwidth not degraded),
 *                             these three for GPU FAKE_NVML_FABRIC_GPU only when set
 *                             (the others completed and healthy), else for all
 *   FAKE_NVML_FABRIC_V1_ONLY  1: nvmlDeviceGetGpuFabricInfoV refuses the struct
 *                             version, so the reader falls back to the version 1 call
 * Not in the FAKE_NVML_OLD build (drivers of that age have no fabric calls).
 *
 * $FAKE_NVML_LOG, when set, names a file that gets one line per init and shutdown so
 * tests can check they are balanced. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml-abi.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

struct nvmlDevice_st {
	unsigned index;
};

static struct nvmlDevice_st devices[8] = { { 0 }, { 1 }, { 2 }, { 3 }, { 4 }, { 5 }, { 6 }, { 7 } };
static const unsigned gpu_bus[8] = { 0x1b, 0x43, 0x52, 0x61, 0x9d, 0xc3, 0xd1, 0xdf };
static const unsigned switch_bus[4] = { 0x05, 0x06, 0x07, 0x08 };
static int initialized;

enum scenario { S_DGX8, S_INACTIVE_LINK, S_NO_NVLINK, S_UNKNOWN_VERSION, S_P2P, S_INIT_FAILS, S_HANDLE_FAILS };

static enum scenario scenario(void)
{
	static const struct {
		const char *name;
		enum scenario s;
	} names[] = {
		{ "dgx8", S_DGX8 }, { "inactive-link", S_INACTIVE_LINK }, { "no-nvlink", S_NO_NVLINK },
		{ "unknown-version", S_UNKNOWN_VERSION }, { "p2p", S_P2P }, { "init-fails", S_INIT_FAILS },
		{ "handle-fails", S_HANDLE_FAILS },
	};
	const char *s = getenv("FAKE_NVML_SCENARIO");
	if (!s || !*s)
		return S_DGX8;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i].name) == 0)
			return names[i].s;
	fprintf(stderr, "fake_nvml: unknown FAKE_NVML_SCENARIO '%s'\n", s);
	abort();
}

static unsigned gpu_count(void)
{
	return scenario() == S_P2P ? 4 : 8;
}

static unsigned link_count(void)
{
	return scenario() == S_P2P ? 4 : 18;
}

static void log_call(const char *what)
{
	const char *path = getenv("FAKE_NVML_LOG");
	FILE *f;
	if (!path || !(f = fopen(path, "a")))
		return;
	fprintf(f, "%s\n", what);
	fclose(f);
}

static nvmlReturn_t check_device(nvmlDevice_t dev)
{
	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (!dev || dev < &devices[0] || dev >= &devices[gpu_count()])
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_SUCCESS;
}

static nvmlReturn_t check_link(nvmlDevice_t dev, unsigned link)
{
	nvmlReturn_t r = check_device(dev);
	if (r != NVML_SUCCESS)
		return r;
	if (scenario() == S_NO_NVLINK)
		return NVML_ERROR_NOT_SUPPORTED;
	if (link >= link_count())
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_SUCCESS;
}

static nvmlReturn_t copy_string(char *buf, unsigned length, const char *s)
{
	if (!buf)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(s) + 1 > length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, s, strlen(s) + 1);
	return NVML_SUCCESS;
}

static void fill_pci(nvmlPciInfo_t *pci, unsigned bus, unsigned device_id, bool full)
{
	pci->domain = 0;
	pci->bus = bus;
	pci->device = 0;
	pci->pciDeviceId = device_id << 16 | 0x10de;
	pci->pciSubSystemId = 0;
	if (full) {
		/* NVML's own spelling: 32-bit domain, upper-case hex. */
		snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0", bus);
		snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", bus);
	}
}

/* The remote end of a link: an NVSwitch (bus), a GPU (index) or the CPU. */
struct remote {
	nvmlIntNvLinkDeviceType_t type;
	unsigned bus;
};

static struct remote link_remote(unsigned gpu, unsigned link)
{
	if (scenario() == S_P2P) {
		if (link < 2)
			return (struct remote){ NVML_NVLINK_DEVICE_TYPE_GPU, gpu_bus[gpu ^ 1] };
		/* POWER8 NPU bridges sit on their own PCI domain; the number does not
		 * matter to a consumer that uses the GPU's locality. */
		return (struct remote){ NVML_NVLINK_DEVICE_TYPE_IBMNPU, 0x00 };
	}
	unsigned sw = link < 5 ? 0 : link < 9 ? 1 : link < 13 ? 2 : 3;
	return (struct remote){ NVML_NVLINK_DEVICE_TYPE_SWITCH, switch_bus[sw] };
}

#ifndef FAKE_NVML_NO_INIT
FAKE_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	if (scenario() == S_INIT_FAILS)
		return NVML_ERROR_DRIVER_NOT_LOADED;
	initialized++;
	log_call("init");
	return NVML_SUCCESS;
}
#endif

FAKE_EXPORT nvmlReturn_t nvmlShutdown(void)
{
	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	initialized--;
	log_call("shutdown");
	return NVML_SUCCESS;
}

FAKE_EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	default: return "Unknown Error";
	}
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count)
{
	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	*count = gpu_count();
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *dev)
{
	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (index >= gpu_count())
		return NVML_ERROR_INVALID_ARGUMENT;
	if (scenario() == S_HANDLE_FAILS && index == 5)
		return NVML_ERROR_UNKNOWN;
	*dev = &devices[index];
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned length)
{
	nvmlReturn_t r = check_device(dev);
	if (r != NVML_SUCCESS)
		return r;
	return copy_string(name, length, scenario() == S_P2P ? "Tesla P100-SXM2-16GB" : "NVIDIA H100 80GB HBM3");
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned length)
{
	char buf[64];
	nvmlReturn_t r = check_device(dev);
	if (r != NVML_SUCCESS)
		return r;
	snprintf(buf, sizeof(buf), "GPU-fa4e0000-0000-4000-8000-0000000000%02x", dev->index);
	return copy_string(uuid, length, buf);
}

static nvmlReturn_t device_pci(nvmlDevice_t dev, nvmlPciInfo_t *pci, bool full)
{
	nvmlReturn_t r = check_device(dev);
	if (r != NVML_SUCCESS)
		return r;
	fill_pci(pci, gpu_bus[dev->index], scenario() == S_P2P ? 0x15f9 : 0x2330, full);
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned link, nvmlEnableState_t *active)
{
	nvmlReturn_t r = check_link(dev, link);
	if (r != NVML_SUCCESS)
		return r;
	*active = scenario() == S_INACTIVE_LINK && dev->index == 3 && link == 17 ? NVML_FEATURE_DISABLED
										    : NVML_FEATURE_ENABLED;
	return NVML_SUCCESS;
}

static nvmlReturn_t remote_pci(nvmlDevice_t dev, unsigned link, nvmlPciInfo_t *pci, bool full)
{
	nvmlEnableState_t active = NVML_FEATURE_DISABLED;
	nvmlReturn_t r = check_link(dev, link);
	struct remote rem;
	if (r != NVML_SUCCESS)
		return r;
	nvmlDeviceGetNvLinkState(dev, link, &active);
	if (active != NVML_FEATURE_ENABLED)
		return NVML_ERROR_NOT_SUPPORTED;
	rem = link_remote(dev->index, link);
	fill_pci(pci, rem.bus, rem.type == NVML_NVLINK_DEVICE_TYPE_SWITCH ? 0x22a3
			       : rem.type == NVML_NVLINK_DEVICE_TYPE_GPU ? 0x15f9 : 0x04ea, full);
	if (rem.type == NVML_NVLINK_DEVICE_TYPE_IBMNPU) {
		pci->domain = 4;
		pci->pciDeviceId = 0x04ea << 16 | 0x1014;
		if (full) {
			snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0004:00:00.0");
			snprintf(pci->busId, sizeof(pci->busId), "00000004:00:00.0");
		}
	}
	return NVML_SUCCESS;
}

#ifdef FAKE_NVML_OLD
/* Before R390: only the legacy id and the numbers. */
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
	return device_pci(dev, pci, false);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t dev, unsigned link, nvmlPciInfo_t *pci)
{
	return remote_pci(dev, link, pci, false);
}
#else
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
	return device_pci(dev, pci, true);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t dev, unsigned link, nvmlPciInfo_t *pci)
{
	return remote_pci(dev, link, pci, true);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t dev, unsigned link,
							    nvmlIntNvLinkDeviceType_t *type)
{
	nvmlReturn_t r = check_link(dev, link);
	if (r != NVML_SUCCESS)
		return r;
	*type = link_remote(dev->index, link).type;
	return NVML_SUCCESS;
}
#endif

#ifndef FAKE_NVML_OLD
static long env_long(const char *name, long dflt)
{
	const char *v = getenv(name);
	return v && *v ? strtol(v, NULL, 0) : dflt;
}

/* Fill the fields both struct versions share; NVML_SUCCESS or why not. */
static nvmlReturn_t fabric_fill(nvmlDevice_t dev, unsigned char uuid[NVML_GPU_FABRIC_UUID_LEN], nvmlReturn_t *status,
				unsigned *clique, nvmlGpuFabricState_t *state, unsigned *health)
{
	nvmlReturn_t r = check_device(dev);
	long gpu = env_long("FAKE_NVML_FABRIC_GPU", -1);
	bool odd = gpu < 0 || gpu == (long)dev->index;

	if (r != NVML_SUCCESS)
		return r;
	if (!getenv("FAKE_NVML_FABRIC_CLIQUE"))
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	*state = (nvmlGpuFabricState_t)(odd ? env_long("FAKE_NVML_FABRIC_STATE", NVML_GPU_FABRIC_STATE_COMPLETED)
					    : NVML_GPU_FABRIC_STATE_COMPLETED);
	/* Before registration completes NVML has no cluster or clique to give. */
	memset(uuid, 0, NVML_GPU_FABRIC_UUID_LEN);
	*clique = 0;
	*status = odd ? (nvmlReturn_t)env_long("FAKE_NVML_FABRIC_STATUS", NVML_SUCCESS) : NVML_SUCCESS;
	*health = (unsigned)(odd ? env_long("FAKE_NVML_FABRIC_HEALTH", 0x2) : 0x2);
	if (*state == NVML_GPU_FABRIC_STATE_COMPLETED) {
		uuid[0] = 0xc1;
		uuid[15] = (unsigned char)env_long("FAKE_NVML_FABRIC_CLUSTER", 1);
		*clique = (unsigned)env_long("FAKE_NVML_FABRIC_CLIQUE", 0);
	}
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t dev, nvmlGpuFabricInfoV_t *info)
{
	unsigned health = 0;
	nvmlReturn_t r;

	if (!info)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (info->version != nvmlGpuFabricInfo_v2 || env_long("FAKE_NVML_FABRIC_V1_ONLY", 0))
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	r = fabric_fill(dev, info->clusterUuid, &info->status, &info->cliqueId, &info->state, &health);
	if (r == NVML_SUCCESS)
		info->healthMask = health;
	return r;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t dev, nvmlGpuFabricInfo_t *info)
{
	unsigned health;

	if (!info)
		return NVML_ERROR_INVALID_ARGUMENT;
	return fabric_fill(dev, info->clusterUuid, &info->status, &info->cliqueId, &info->state, &health);
}
#endif

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t dev, unsigned link, unsigned *version)
{
	nvmlReturn_t r = check_link(dev, link);
	if (r != NVML_SUCCESS)
		return r;
	*version = scenario() == S_P2P ? 1 : scenario() == S_UNKNOWN_VERSION ? 9 : 4;
	return NVML_SUCCESS;
}
