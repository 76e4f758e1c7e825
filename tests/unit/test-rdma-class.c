/* ll_rdma_classify(): what can drive an RDMA device, from its driver, the kernel's
 * node type and its PCI ids, never its name. One row per device class and per
 * source of the decision; each row states the expected class, provider and a word
 * of the reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "llmlaunch/facts.h"

struct row {
	const char *driver;
	int node_type;
	unsigned vendor, device;
	bool on_pci, virtual_;
	enum ll_rdma_class want;
	const char *provider;
	const char *why_has;
};

static const struct row rows[] = {
	/* Verbs devices NCCL's IB transport drives, by driver (live probes). */
	{ "mlx5_core", 1, 0x15b3, 0x101b, true, false, LL_RDMA_CLASS_VERBS, NULL, "mlx5" },
	{ "mlx4_core", 1, 0x15b3, 0x1003, true, false, LL_RDMA_CLASS_VERBS, NULL, "mlx4" },
	{ "bnxt_en", 1, 0x14e4, 0x1750, true, false, LL_RDMA_CLASS_VERBS, NULL, "bnxt_re" },
	{ "hns3", 1, 0x19e5, 0xa222, true, false, LL_RDMA_CLASS_VERBS, NULL, "hns" },
	{ "ionic", 1, 0x1dd8, 0x1002, true, false, LL_RDMA_CLASS_VERBS, NULL, "ionic" },
	{ "erdma", 4, 0x1ded, 0x107f, true, false, LL_RDMA_CLASS_VERBS, NULL, "erdma" },
	{ "hfi1", 1, 0x8086, 0x24f0, true, false, LL_RDMA_CLASS_VERBS, NULL, "Omni-Path" },
	{ "ib_qib", 1, 0x1077, 0x7322, true, false, LL_RDMA_CLASS_VERBS, NULL, "qib" },
	{ "qede", 1, 0x1077, 0x8070, true, false, LL_RDMA_CLASS_VERBS, NULL, "qedr" },
	/* irdma: RoCE mode (node type CA) is verbs; iWARP (RNIC) and an unknown mode are not known. */
	{ "irdma", 1, 0x8086, 0x1593, true, false, LL_RDMA_CLASS_VERBS, NULL, "RoCE mode" },
	{ "irdma", 4, 0x8086, 0x1593, true, false, LL_RDMA_CLASS_UNKNOWN, NULL, "iWARP" },
	{ "ice", -1, 0x8086, 0x1593, true, false, LL_RDMA_CLASS_UNKNOWN, NULL, "mode" },
	/* EFA: the driver, or its PCI ids in an export without drivers; renamed rdmapNsM by udev. */
	{ "efa", 7, 0x1d0f, 0xefa1, true, false, LL_RDMA_CLASS_PLUGIN, "efa", "aws-ofi-nccl" },
	{ NULL, -1, 0x1d0f, 0xefa0, true, false, LL_RDMA_CLASS_PLUGIN, "efa", "no RC" },
	/* The ENA Ethernet function of the same vendor is no EFA. */
	{ NULL, -1, 0x1d0f, 0xec20, true, false, LL_RDMA_CLASS_UNKNOWN, NULL, "nothing recorded" },
	/* HPE Slingshot Cassini, should it ever show as an RDMA device. */
	{ NULL, -1, 0x17db, 0x0501, true, false, LL_RDMA_CLASS_PLUGIN, "cxi", "cxi provider" },
	/* Devices NCCL cannot use. */
	{ "enic", 6, 0x1137, 0x0071, true, false, LL_RDMA_CLASS_UNUSABLE, NULL, "usNIC" },
	{ NULL, 6, 0, 0, true, false, LL_RDMA_CLASS_UNUSABLE, NULL, "usNIC" },
	{ NULL, -1, 0x1137, 0x00cf, true, false, LL_RDMA_CLASS_UNUSABLE, NULL, "RC queue pairs" },
	{ NULL, 2, 0x15b3, 0xcf08, true, false, LL_RDMA_CLASS_UNUSABLE, NULL, "switch" },
	{ NULL, -1, 0, 0, false, false, LL_RDMA_CLASS_UNUSABLE, NULL, "scif" },
	/* Software RDMA: usable, only when asked for. */
	{ NULL, 1, 0, 0, false, true, LL_RDMA_CLASS_SOFTWARE, NULL, "rxe" },
	{ NULL, 4, 0, 0, false, true, LL_RDMA_CLASS_SOFTWARE, NULL, "siw" },
	/* Exports without drivers: the PCI vendor decides, or nothing does. */
	{ NULL, -1, 0x15b3, 0x1021, true, false, LL_RDMA_CLASS_VERBS, NULL, "15b3" },
	{ NULL, -1, 0x8086, 0x24f0, true, false, LL_RDMA_CLASS_VERBS, NULL, "Omni-Path" },
	{ NULL, -1, 0x1077, 0x7322, true, false, LL_RDMA_CLASS_VERBS, NULL, "TrueScale" },
	{ NULL, 1, 0x8086, 0x1593, true, false, LL_RDMA_CLASS_VERBS, NULL, "RoCE mode" },
	{ NULL, -1, 0x1425, 0x6408, true, false, LL_RDMA_CLASS_UNKNOWN, NULL, "iWARP" },
	{ NULL, -1, 0xabcd, 0x0001, true, false, LL_RDMA_CLASS_UNKNOWN, NULL, "nothing recorded" },
	/* A driver we do not know falls back to the PCI vendor. */
	{ "mystery_rdma", 1, 0x15b3, 0x101b, true, false, LL_RDMA_CLASS_VERBS, NULL, "15b3" },
};

static void test_rows(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		const char *why = NULL, *provider = "unset";
		enum ll_rdma_class c = ll_rdma_classify(r->driver, r->node_type, r->vendor, r->device, r->on_pci,
							r->virtual_, &why, &provider);

		if (c != r->want)
			fail_msg("row %zu (%s %04x:%04x): class %s, expected %s (%s)", i, r->driver ? r->driver : "-",
				 r->vendor, r->device, ll_rdma_class_name(c) ? ll_rdma_class_name(c) : "unknown",
				 ll_rdma_class_name(r->want) ? ll_rdma_class_name(r->want) : "unknown", why);
		if (r->provider)
			assert_string_equal(provider, r->provider);
		else
			assert_null(provider);
		assert_non_null(why);
		if (!strstr(why, r->why_has))
			fail_msg("row %zu: reason '%s' lacks '%s'", i, why, r->why_has);
	}
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(ll_rdma_class_name(LL_RDMA_CLASS_VERBS), "verbs");
	assert_string_equal(ll_rdma_class_name(LL_RDMA_CLASS_PLUGIN), "plugin");
	assert_string_equal(ll_rdma_class_name(LL_RDMA_CLASS_SOFTWARE), "software");
	assert_string_equal(ll_rdma_class_name(LL_RDMA_CLASS_UNUSABLE), "unusable");
	assert_null(ll_rdma_class_name(LL_RDMA_CLASS_UNKNOWN));
	/* NULL outputs are allowed. */
	assert_int_equal(ll_rdma_classify("efa", 7, 0, 0, true, false, NULL, NULL), LL_RDMA_CLASS_PLUGIN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
