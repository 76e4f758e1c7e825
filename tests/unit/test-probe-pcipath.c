/* PCIe path classes on real trees: PLX/Broadcom switches (PIX, not PXB, behind one
 * switch), nested switches (PXB), host bridges (PHB), NUMA (NODE/SYS). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "llmlaunch/probe.h"
#include "../../probe/pci-path.h"

static const char *realdata;

static hwloc_topology_t load(const char *rel)
{
	_cleanup_free_ char *path = ll_asprintf("%s/hwloc_xml/%s", realdata, rel);
	struct ll_probe_options opts = { .topology_file = path };
	struct ll_error err = { 0 };
	hwloc_topology_t topo = NULL;

	if (ll_probe_load(&opts, &topo, &err) < 0)
		fail_msg("%s: %s", rel, err.message);
	return topo;
}

static hwloc_obj_t dev(hwloc_topology_t topo, const char *busid)
{
	hwloc_obj_t o = hwloc_get_pcidev_by_busidstring(topo, busid);

	if (!o)
		fail_msg("no PCI device %s", busid);
	return o;
}

static enum ll_path path(hwloc_topology_t topo, const char *a, const char *b)
{
	enum ll_path p = ll_pci_path(dev(topo, a), dev(topo, b));

	/* The class does not depend on the order of the two. */
	assert_int_equal(p, ll_pci_path(dev(topo, b), dev(topo, a)));
	return p;
}

static void test_dgx2(void **state)
{
	hwloc_topology_t topo = load("hwloc-v2x-nvidiaDGX2.xml");

	(void)state;
	/* Two V100 behind the same leaf PLX switch. */
	assert_int_equal(path(topo, "0000:34:00.0", "0000:36:00.0"), LL_PATH_PIX);
	/* Leaf switches 32 and 37 below the upper switch 2c: three switches. */
	assert_int_equal(path(topo, "0000:34:00.0", "0000:39:00.0"), LL_PATH_PXB);
	/* Another host bridge of the same socket. */
	assert_int_equal(path(topo, "0000:34:00.0", "0000:57:00.0"), LL_PATH_NODE);
	/* The other socket. */
	assert_int_equal(path(topo, "0000:34:00.0", "0000:b7:00.0"), LL_PATH_SYS);
	/* A GPU and an NVSwitch below the same upper switch, through two leaf switches. */
	assert_int_equal(path(topo, "0000:57:00.0", "0000:61:00.0"), LL_PATH_PXB);
	/* Two NVSwitches on ports of one PEX 8725. */
	assert_int_equal(path(topo, "0000:61:00.0", "0000:62:00.0"), LL_PATH_PIX);
	/* An OS device stands for its PCI device. */
	hwloc_obj_t nvml0 = dev(topo, "0000:34:00.0")->io_first_child;
	assert_non_null(nvml0);
	assert_int_equal(nvml0->type, HWLOC_OBJ_OS_DEVICE);
	assert_int_equal(ll_pci_path(nvml0, dev(topo, "0000:36:00.0")), LL_PATH_PIX);
	/* Non-PCI objects have no class. */
	assert_int_equal(ll_pci_path(hwloc_get_root_obj(topo), dev(topo, "0000:36:00.0")), LL_PATH_UNKNOWN);
	assert_int_equal(ll_pci_path(dev(topo, "0000:34:00.0"), dev(topo, "0000:34:00.0")), LL_PATH_PIX);
	hwloc_topology_destroy(topo);
}

static void test_jureca(void **state)
{
	hwloc_topology_t topo = load("psmgmt/topo.jrc0323.xml");

	(void)state;
	/* A100 and ConnectX-6 on two downstream ports of one Broadcom switch. */
	assert_int_equal(path(topo, "0000:44:00.0", "0000:43:00.0"), LL_PATH_PIX);
	assert_int_equal(path(topo, "0000:03:00.0", "0000:04:00.0"), LL_PATH_PIX);
	/* The same A100 and the SAS controller on the third port: PIX too. */
	assert_int_equal(path(topo, "0000:44:00.0", "0000:45:00.0"), LL_PATH_PIX);
	/* Two functions of one Intel NIC below a root port. */
	assert_int_equal(path(topo, "0000:e1:00.0", "0000:e1:00.1"), LL_PATH_PIX);
	/* The SATA controller on another root port of the A100's host bridge (c0). */
	assert_int_equal(path(topo, "0000:c4:00.0", "0000:c8:00.0"), LL_PATH_PHB);
	/* Each of the 8 NUMA nodes has its own host bridge: SYS between them. */
	assert_int_equal(path(topo, "0000:44:00.0", "0000:04:00.0"), LL_PATH_SYS);
	hwloc_topology_destroy(topo);
}

static void test_lassen(void **state)
{
	hwloc_topology_t topo = load("mpibind/coral-lassen.xml");

	(void)state;
	/* POWER9: one PCIe domain (host bridge) per slot; same socket is NODE. */
	assert_int_equal(path(topo, "0004:04:00.0", "0003:01:00.0"), LL_PATH_NODE);
	assert_int_equal(path(topo, "0004:04:00.0", "0004:05:00.0"), LL_PATH_PIX);
	assert_int_equal(path(topo, "0004:04:00.0", "0033:01:00.0"), LL_PATH_SYS);
	hwloc_topology_destroy(topo);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dgx2),
		cmocka_unit_test(test_jureca),
		cmocka_unit_test(test_lassen),
	};
	struct stat st;

	realdata = getenv("LL_REALDATA");
	if (!realdata || stat(realdata, &st) < 0) {
		fprintf(stderr, "skipped: real data not found (LL_REALDATA=%s)\n", realdata ? realdata : "");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
