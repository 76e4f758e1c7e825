/* PCIe path classes on the project's own fixture ($LL_FIXTURES/hwloc/
 * two-socket-4gpu-2hca.xml: one switch (PIX), root ports of one host bridge (PHB),
 * the other socket (SYS)), which always runs, and on real trees (LL_REALDATA/
 * hwloc_xml): PLX/Broadcom switches (PIX, not PXB, behind one switch), nested
 * switches (PXB), host bridges (PHB), NUMA (NODE/SYS); the real-tree cases skip one
 * by one when the real data is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "llmlaunch/probe.h"
#include "../../probe/pci-path.h"

#include "realdata.h"

static hwloc_topology_t load_path(const char *path)
{
	struct ll_probe_options opts = { .topology_file = path };
	struct ll_error err = { 0 };
	hwloc_topology_t topo = NULL;

	if (ll_probe_load(&opts, &topo, &err) < 0)
		fail_msg("%s: %s", path, err.message);
	return topo;
}

static hwloc_topology_t load(const char *rel)
{
	_cleanup_free_ char *path = ll_asprintf("%s/hwloc_xml/%s", realdata, rel);

	return load_path(path);
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

/* The project's own fixture. Socket 0: GPU0 (03:00.0) and mlx5_0 (04:00.0) on two
 * downstream ports of one Broadcom switch below root port 00:01.0; GPU1 (05:00.0)
 * and eno1 (0a:00.0) on root ports 00:02.0 and 00:1c.0 of the same host bridge.
 * Socket 1 mirrors it on buses 8x. */
static void test_fixture(void **state)
{
	const char *fixtures = getenv("LL_FIXTURES");
	_cleanup_free_ char *xml = NULL;
	hwloc_topology_t topo;
	hwloc_obj_t ib0;

	(void)state;
	if (!fixtures)
		fail_msg("%s", "LL_FIXTURES is not set (tests/CMakeLists.txt sets it to tests/fixtures)");
	xml = ll_asprintf("%s/hwloc/two-socket-4gpu-2hca.xml", fixtures);
	topo = load_path(xml);
	/* GPU and HCA behind one switch. */
	assert_int_equal(path(topo, "0000:03:00.0", "0000:04:00.0"), LL_PATH_PIX);
	assert_int_equal(path(topo, "0000:83:00.0", "0000:84:00.0"), LL_PATH_PIX);
	/* Another root port of the same host bridge. */
	assert_int_equal(path(topo, "0000:05:00.0", "0000:04:00.0"), LL_PATH_PHB);
	assert_int_equal(path(topo, "0000:85:00.0", "0000:84:00.0"), LL_PATH_PHB);
	assert_int_equal(path(topo, "0000:03:00.0", "0000:05:00.0"), LL_PATH_PHB);
	assert_int_equal(path(topo, "0000:0a:00.0", "0000:04:00.0"), LL_PATH_PHB);
	/* The other socket. */
	assert_int_equal(path(topo, "0000:03:00.0", "0000:84:00.0"), LL_PATH_SYS);
	assert_int_equal(path(topo, "0000:05:00.0", "0000:84:00.0"), LL_PATH_SYS);
	assert_int_equal(path(topo, "0000:83:00.0", "0000:04:00.0"), LL_PATH_SYS);
	assert_int_equal(path(topo, "0000:03:00.0", "0000:83:00.0"), LL_PATH_SYS);
	assert_int_equal(path(topo, "0000:0a:00.0", "0000:84:00.0"), LL_PATH_SYS);
	/* The IPoIB OS device stands for its HCA. */
	ib0 = dev(topo, "0000:04:00.0")->io_first_child;
	assert_non_null(ib0);
	assert_int_equal(ib0->type, HWLOC_OBJ_OS_DEVICE);
	assert_string_equal(ib0->name, "ib0");
	assert_int_equal(ll_pci_path(ib0, dev(topo, "0000:03:00.0")), LL_PATH_PIX);
	assert_int_equal(ll_pci_path(ib0, dev(topo, "0000:05:00.0")), LL_PATH_PHB);
	assert_int_equal(ll_pci_path(ib0, dev(topo, "0000:83:00.0")), LL_PATH_SYS);
	/* Non-PCI objects have no class. */
	assert_int_equal(ll_pci_path(hwloc_get_root_obj(topo), dev(topo, "0000:03:00.0")), LL_PATH_UNKNOWN);
	hwloc_topology_destroy(topo);
}

static void test_dgx2(void **state)
{
	if (realdata_absent(__func__))
		skip();
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
	if (realdata_absent(__func__))
		skip();
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
	if (realdata_absent(__func__))
		skip();
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
		cmocka_unit_test(test_fixture),
		cmocka_unit_test(test_dgx2),
		cmocka_unit_test(test_jureca),
		cmocka_unit_test(test_lassen),
	};

	realdata = getenv("LL_REALDATA");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
