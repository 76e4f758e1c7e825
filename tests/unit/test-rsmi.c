/* ROCm SMI through dlopen (probe/rsmi.c) against the fake library (tests/fake-rsmi)
 * and the KFD reader (probe/kfd.c), on the fake AMD tree of
 * tests/fixtures/gen-amd-sysfs.sh: what each records on the GPUs' PCI objects, that
 * a failing library records nothing, and that init and shut-down stay balanced. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <hwloc.h>

#include "../../probe/annotate.h"
#include "../../probe/annotations.h"
#include "llmlaunch/file.h"

static char tmpdir[] = "/tmp/ll-test-rsmi-XXXXXX";
static char root_nokfd[256], root_kfd[256], rsmi_log[256];
static const char *fake, *fake_noinit;
static const unsigned gcd_bus[4] = { 0x83, 0x86, 0xc3, 0xc6 };

static hwloc_topology_t load(const char *fsroot)
{
	hwloc_topology_t topo;

	setenv("HWLOC_FSROOT", fsroot, 1);
	setenv("HWLOC_COMPONENTS", "-x86,-opencl,-gl,-pci", 1);
	assert_int_equal(hwloc_topology_init(&topo), 0);
	hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
	assert_int_equal(hwloc_topology_load(topo), 0);
	return topo;
}

static hwloc_obj_t gcd(hwloc_topology_t topo, size_t i)
{
	hwloc_obj_t o = hwloc_get_pcidev_by_busid(topo, 0, gcd_bus[i], 0, 0);

	assert_non_null(o);
	return o;
}

static const char *info(hwloc_obj_t o, const char *name)
{
	return hwloc_obj_get_info_by_name(o, name);
}

static int group_setup(void **state)
{
	const char *fixtures = getenv("LL_FIXTURES");
	char cmd[1024];

	(void)state;
	fake = getenv("LL_FAKE_RSMI");
	fake_noinit = getenv("LL_FAKE_RSMI_NOINIT");
	if (!fixtures || !fake || !fake_noinit || !mkdtemp(tmpdir))
		return -1;
	snprintf(root_nokfd, sizeof(root_nokfd), "%s/nokfd", tmpdir);
	snprintf(root_kfd, sizeof(root_kfd), "%s/kfd", tmpdir);
	snprintf(rsmi_log, sizeof(rsmi_log), "%s/rsmi.log", tmpdir);
	snprintf(cmd, sizeof(cmd), "bash '%s/gen-amd-sysfs.sh' '%s' nokfd && bash '%s/gen-amd-sysfs.sh' '%s' xgmi",
		 fixtures, root_nokfd, fixtures, root_kfd);
	return system(cmd) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
	char cmd[512];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_names_ids_links(void **state)
{
	hwloc_topology_t topo = load(root_nokfd);
	struct ll_error err = { 0 };
	char *warning = NULL, *text = NULL;
	struct hwloc_distances_s *d;
	unsigned nr = 1;

	(void)state;
	unlink(rsmi_log);
	setenv("FAKE_RSMI_LOG", rsmi_log, 1);
	unsetenv("FAKE_RSMI_SCENARIO");
	assert_int_equal(ll_annotate_rsmi(topo, fake, &warning, &err), 0);
	assert_null(warning);
	for (size_t i = 0; i < 4; i++) {
		char id[32];

		snprintf(id, sizeof(id), "%016llx", 0x6b3c1a0000000000ULL + i);
		assert_string_equal(info(gcd(topo, i), LL_INFO_GPU_MODEL), "AMD Instinct MI250X");
		assert_string_equal(info(gcd(topo, i), LL_INFO_AMD_UUID), id);
		assert_string_equal(info(gcd(topo, i), LL_INFO_XGMI_LINKS), "3");
		assert_null(info(gcd(topo, i), LL_INFO_AMD_PARTITIONS));
	}
	assert_int_equal(hwloc_distances_get_by_name(topo, LL_DIST_XGMI, &nr, &d, 0), 0);
	assert_int_equal(nr, 1);
	assert_int_equal(d->nbobjs, 4);
	assert_int_equal(d->values[1], 100000);
	assert_int_equal(d->values[0], 1000000);
	hwloc_distances_release(topo, d);
	/* One init, one shut-down. */
	assert_int_equal(ll_read_file(rsmi_log, 4096, &text), 0);
	assert_string_equal(text, "init\nshut_down\n");
	free(text);
	hwloc_topology_destroy(topo);

	/* PCIe only: no matrix, and "no peer" is recorded. */
	topo = load(root_nokfd);
	setenv("FAKE_RSMI_SCENARIO", "pcie", 1);
	assert_int_equal(ll_annotate_rsmi(topo, fake, &warning, &err), 0);
	assert_string_equal(info(gcd(topo, 0), LL_INFO_XGMI_LINKS), "0");
	nr = 0;
	assert_int_equal(hwloc_distances_get_by_name(topo, LL_DIST_XGMI, &nr, NULL, 0), 0);
	assert_int_equal(nr, 0);
	hwloc_topology_destroy(topo);
}

/* A failing library leaves nothing at all, and says why once. */
static void test_failures(void **state)
{
	static const struct {
		const char *scenario;
		int noinit;
		const char *needle;
	} cases[] = {
		{ "init-fails", 0, "is unusable: rsmi_init failed: RSMI_STATUS_INIT_ERROR" },
		{ "pci-fails", 0, "rsmi_dev_pci_id_get failed for GPU 2" },
		{ "mi250x", 1, "is not a usable ROCm SMI library: it lacks 'rsmi_init'" },
	};
	struct ll_error err = { 0 };

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		hwloc_topology_t topo = load(root_nokfd);
		char *warning = NULL;

		setenv("FAKE_RSMI_SCENARIO", cases[c].scenario, 1);
		assert_int_equal(ll_annotate_rsmi(topo, cases[c].noinit ? fake_noinit : fake, &warning, &err), 0);
		assert_non_null(warning);
		if (!strstr(warning, cases[c].needle))
			fail_msg("warning '%s' lacks '%s'", warning, cases[c].needle);
		for (size_t i = 0; i < 4; i++) {
			assert_null(info(gcd(topo, i), LL_INFO_GPU_MODEL));
			assert_null(info(gcd(topo, i), LL_INFO_XGMI_LINKS));
		}
		free(warning);
		hwloc_topology_destroy(topo);
	}
	/* No library named and no KFD on this machine: nothing tried, nothing said. */
	{
		hwloc_topology_t topo = load(root_nokfd);
		char *warning = NULL;

		if (access("/sys/class/kfd", F_OK) != 0) {
			assert_int_equal(ll_annotate_rsmi(topo, NULL, &warning, &err), 0);
			assert_null(warning);
		}
		hwloc_topology_destroy(topo);
	}
}

/* KFD alone: the io_links' bandwidths, and the matrix ROCm SMI then leaves alone. */
static void test_kfd(void **state)
{
	hwloc_topology_t topo = load(root_kfd);
	struct ll_error err = { 0 };
	struct hwloc_distances_s *d;
	char *warning = NULL;
	unsigned nr = 1;

	(void)state;
	assert_int_equal(ll_annotate_kfd(topo, root_kfd, &err), 0);
	assert_string_equal(info(gcd(topo, 2), LL_INFO_XGMI_LINKS), "3");
	assert_int_equal(hwloc_distances_get_by_name(topo, LL_DIST_XGMI, &nr, &d, 0), 0);
	assert_int_equal(d->nbobjs, 4);
	/* GCD 0 to GCD 1 (one MI250X) 200000, to GCD 2 50000. */
	assert_int_equal(d->values[1], 200000);
	assert_int_equal(d->values[2], 50000);
	hwloc_distances_release(topo, d);
	unsetenv("FAKE_RSMI_SCENARIO");
	assert_int_equal(ll_annotate_rsmi(topo, fake, &warning, &err), 0);
	nr = 4;
	{
		struct hwloc_distances_s *all[4];

		assert_int_equal(hwloc_distances_get_by_name(topo, LL_DIST_XGMI, &nr, all, 0), 0);
		assert_int_equal(nr, 1);
		hwloc_distances_release(topo, all[0]);
	}
	assert_string_equal(info(gcd(topo, 0), LL_INFO_GPU_MODEL), "AMD Instinct MI250X");
	hwloc_topology_destroy(topo);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_ids_links),
		cmocka_unit_test(test_failures),
		cmocka_unit_test(test_kfd),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
