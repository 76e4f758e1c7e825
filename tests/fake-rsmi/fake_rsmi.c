/* A test double of librocm_smi64 for machines without an AMD GPU. It exports the
 * entry points probe/rsmi.c resolves with dlsym, with ROCm SMI's ABI
 * (probe/rsmi-abi.h), and answers from a scenario chosen by $FAKE_RSMI_SCENARIO:
 *
 *   mi250x (default)  4 ROCm devices (MI250X GCDs) at the bus ids of
 *                     tests/fixtures/gen-amd-sysfs.sh, every pair XGMI-connected
 *   pcie              the same devices, joined by PCIe only (no XGMI)
 *   cpx               2 PCI functions split into 2 partitions each (partition id in
 *                     bits 31:28 of the BDFID, as on MI300 in CPX mode)
 *   init-fails        rsmi_init answers RSMI_STATUS_INIT_ERROR
 *   pci-fails         rsmi_dev_pci_id_get fails for device 2
 *
 * Built again by tests/cmake/fake-rsmi.cmake with FAKE_RSMI_NO_INIT (no rsmi_init:
 * a library that is not ROCm SMI). $FAKE_RSMI_LOG, when set, names a file that gets
 * one line per init and shut-down, so tests can check they are balanced. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rsmi-abi.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

enum scenario { S_MI250X, S_PCIE, S_CPX, S_INIT_FAILS, S_PCI_FAILS };

static const unsigned gcd_bus[4] = { 0x83, 0x86, 0xc3, 0xc6 };
static int initialized;

static enum scenario scenario(void)
{
	static const struct {
		const char *name;
		enum scenario s;
	} names[] = {
		{ "mi250x", S_MI250X }, { "pcie", S_PCIE }, { "cpx", S_CPX },
		{ "init-fails", S_INIT_FAILS }, { "pci-fails", S_PCI_FAILS },
	};
	const char *s = getenv("FAKE_RSMI_SCENARIO");

	if (!s || !*s)
		return S_MI250X;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i].name) == 0)
			return names[i].s;
	fprintf(stderr, "fake_rsmi: unknown FAKE_RSMI_SCENARIO '%s'\n", s);
	abort();
}

static void log_line(const char *what)
{
	const char *path = getenv("FAKE_RSMI_LOG");
	FILE *f;

	if (!path || !(f = fopen(path, "a")))
		return;
	fprintf(f, "%s\n", what);
	fclose(f);
}

#ifndef FAKE_RSMI_NO_INIT
FAKE_EXPORT rsmi_status_t rsmi_init(uint64_t flags)
{
	(void)flags;
	if (scenario() == S_INIT_FAILS)
		return RSMI_STATUS_INIT_ERROR;
	initialized++;
	log_line("init");
	return RSMI_STATUS_SUCCESS;
}
#endif

FAKE_EXPORT rsmi_status_t rsmi_shut_down(void)
{
	if (initialized) {
		initialized--;
		log_line("shut_down");
	}
	return RSMI_STATUS_SUCCESS;
}

FAKE_EXPORT rsmi_status_t rsmi_num_monitor_devices(uint32_t *n)
{
	if (!initialized)
		return RSMI_STATUS_INIT_ERROR;
	*n = 4;
	return RSMI_STATUS_SUCCESS;
}

FAKE_EXPORT rsmi_status_t rsmi_dev_pci_id_get(uint32_t i, uint64_t *bdfid)
{
	if (!initialized || i >= 4)
		return RSMI_STATUS_INIT_ERROR;
	if (scenario() == S_PCI_FAILS && i == 2)
		return RSMI_STATUS_NOT_SUPPORTED;
	if (scenario() == S_CPX)
		/* Two functions (0x83, 0xc3), partitions 0 and 1 of each. */
		*bdfid = ((uint64_t)(i % 2) << 28) | ((uint64_t)gcd_bus[(i / 2) * 2] << 8);
	else
		*bdfid = (uint64_t)gcd_bus[i] << 8;
	return RSMI_STATUS_SUCCESS;
}

FAKE_EXPORT rsmi_status_t rsmi_dev_name_get(uint32_t i, char *name, size_t len)
{
	if (!initialized || i >= 4)
		return RSMI_STATUS_INIT_ERROR;
	snprintf(name, len, "%s", scenario() == S_CPX ? "AMD Instinct MI300X" : "AMD Instinct MI250X");
	return RSMI_STATUS_SUCCESS;
}

FAKE_EXPORT rsmi_status_t rsmi_dev_unique_id_get(uint32_t i, uint64_t *id)
{
	if (!initialized || i >= 4)
		return RSMI_STATUS_INIT_ERROR;
	*id = 0x6b3c1a0000000000ULL + i;
	return RSMI_STATUS_SUCCESS;
}

FAKE_EXPORT rsmi_status_t rsmi_topo_get_link_type(uint32_t src, uint32_t dst, uint64_t *hops, RSMI_IO_LINK_TYPE *type)
{
	if (!initialized || src >= 4 || dst >= 4)
		return RSMI_STATUS_INIT_ERROR;
	*hops = 1;
	*type = scenario() == S_PCIE ? 1 /* PCIe */ : RSMI_IOLINK_TYPE_XGMI;
	return RSMI_STATUS_SUCCESS;
}

FAKE_EXPORT rsmi_status_t rsmi_status_string(rsmi_status_t st, const char **text)
{
	*text = st == RSMI_STATUS_INIT_ERROR ? "RSMI_STATUS_INIT_ERROR: an error occurred during initialization"
	      : st == RSMI_STATUS_NOT_SUPPORTED ? "RSMI_STATUS_NOT_SUPPORTED: the function is not supported"
						 : "RSMI_STATUS_UNKNOWN_ERROR";
	return RSMI_STATUS_SUCCESS;
}
