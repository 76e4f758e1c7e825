/* probe/nvml.c against the fake NVML libraries (tests/fake-nvml) on a fake DGX H100
 * sysfs tree (tests/fixtures/gen-dgx-sysfs.sh): 8 H100 GPUs, 4 NVSwitches. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <hwloc.h>

#include "../../probe/annotate.h"
#include "../../probe/annotations.h"
#include "llmlaunch/probe.h"

static const unsigned gpu_bus[8] = { 0x1b, 0x43, 0x52, 0x61, 0x9d, 0xc3, 0xd1, 0xdf };
static const unsigned switch_bus[4] = { 0x05, 0x06, 0x07, 0x08 };
/* NVLinks from every GPU to each NVSwitch on a DGX H100: 5, 4, 4, 5. */
static const unsigned links_per_switch[4] = { 5, 4, 4, 5 };

static char tmpdir[] = "/tmp/ll-test-nvml-XXXXXX";
static char fsroot[256], nvml_log[256];
static const char *fake, *fake_noinit, *fake_old;

struct fixture {
	hwloc_topology_t topo;
};

static int load_topology(hwloc_topology_t *topo, enum hwloc_type_filter_e pci_filter)
{
	setenv("HWLOC_FSROOT", fsroot, 1);
	/* libpciaccess (the pci component) reads the real /sys and leaks: the linux backend reads PCI under the fsroot. */
	setenv("HWLOC_COMPONENTS", "-x86,-opencl,-gl,-pci", 1);
	if (hwloc_topology_init(topo) < 0)
		return -1;
	hwloc_topology_set_io_types_filter(*topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	hwloc_topology_set_type_filter(*topo, HWLOC_OBJ_PCI_DEVICE, pci_filter);
	return hwloc_topology_load(*topo);
}

static int group_setup(void **state)
{
	(void)state;
	const char *fixtures = getenv("LL_FIXTURES");
	char cmd[512];

	fake = getenv("LL_FAKE_NVML");
	fake_noinit = getenv("LL_FAKE_NVML_NOINIT");
	fake_old = getenv("LL_FAKE_NVML_OLD");
	if (!fixtures || !fake || !fake_noinit || !fake_old) {
		fprintf(stderr, "LL_FIXTURES and LL_FAKE_NVML* must be set (run through ctest)\n");
		return -1;
	}
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(fsroot, sizeof(fsroot), "%s/root", tmpdir);
	snprintf(nvml_log, sizeof(nvml_log), "%s/nvml.log", tmpdir);
	snprintf(cmd, sizeof(cmd), "bash '%s/gen-dgx-sysfs.sh' '%s'", fixtures, fsroot);
	if (system(cmd) != 0)
		return -1;
	unsetenv("LLMLAUNCH_NVML_LIBRARY");
	return 0;
}

/* The warning of the last ll_annotate_nvml() call (struct ll_probe_report). */
static char *warning;

static int group_teardown(void **state)
{
	(void)state;
	free(warning);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f || load_topology(&f->topo, HWLOC_TYPE_FILTER_KEEP_ALL) < 0)
		return -1;
	unsetenv("FAKE_NVML_SCENARIO");
	unlink(nvml_log);
	setenv("FAKE_NVML_LOG", nvml_log, 1);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	hwloc_topology_destroy(f->topo);
	free(f);
	unsetenv("LLMLAUNCH_NVML_LIBRARY");
	return 0;
}

static hwloc_obj_t pci(hwloc_topology_t topo, unsigned bus)
{
	hwloc_obj_t obj = hwloc_get_pcidev_by_busid(topo, 0, bus, 0, 0);
	assert_non_null(obj);
	return obj;
}

static const char *info(hwloc_topology_t topo, unsigned bus, const char *name)
{
	return hwloc_obj_get_info_by_name(pci(topo, bus), name);
}

/* NVLinkBandwidth between two objects; -1 when there is no matrix. */
static int64_t nvlink_bw(hwloc_topology_t topo, hwloc_obj_t a, hwloc_obj_t b)
{
	struct hwloc_distances_s *d[2];
	unsigned nr = 2;
	hwloc_uint64_t ab = 0, ba = 0;
	assert_int_equal(hwloc_distances_get_by_name(topo, LL_DIST_NVLINK, &nr, d, 0), 0);
	if (nr == 0)
		return -1;
	assert_int_equal(nr, 1);
	int r = hwloc_distances_obj_pair_values(d[0], a, b, &ab, &ba);
	hwloc_distances_release(topo, d[0]);
	if (r < 0)
		return 0; /* an object outside the matrix has no NVLink */
	assert_int_equal(ab, ba);
	return (int64_t)ab;
}

static unsigned nvlink_matrix_count(hwloc_topology_t topo, unsigned *nbobjs, unsigned long *kind)
{
	struct hwloc_distances_s *d[2];
	unsigned nr = 2;
	assert_int_equal(hwloc_distances_get_by_name(topo, LL_DIST_NVLINK, &nr, d, 0), 0);
	for (unsigned i = 0; i < nr && i < 2; i++) {
		if (nbobjs)
			*nbobjs = d[i]->nbobjs;
		if (kind)
			*kind = d[i]->kind;
		hwloc_distances_release(topo, d[i]);
	}
	return nr;
}

static char *read_log(void)
{
	static char buf[256];
	FILE *f = fopen(nvml_log, "r");
	size_t n = 0;
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

/* No GPU or NVSwitch got anything from NVML. */
static void assert_nothing_recorded(hwloc_topology_t topo)
{
	for (int i = 0; i < 8; i++) {
		assert_null(info(topo, gpu_bus[i], LL_INFO_GPU_MODEL));
		assert_null(info(topo, gpu_bus[i], LL_INFO_GPU_UUID));
		assert_null(info(topo, gpu_bus[i], LL_INFO_NVLINKS_ACTIVE));
		assert_null(info(topo, gpu_bus[i], LL_INFO_NVLINKS_INACTIVE));
	}
	for (int s = 0; s < 4; s++)
		assert_null(pci(topo, switch_bus[s])->subtype);
	assert_int_equal(nvlink_matrix_count(topo, NULL, NULL), 0);
}

static void assert_dgx8(hwloc_topology_t topo, int inactive_gpu)
{
	unsigned nbobjs = 0;
	unsigned long kind = 0;

	for (int i = 0; i < 8; i++) {
		char uuid[64];
		snprintf(uuid, sizeof(uuid), "GPU-fa4e0000-0000-4000-8000-0000000000%02x", i);
		assert_string_equal(info(topo, gpu_bus[i], LL_INFO_GPU_MODEL), "NVIDIA H100 80GB HBM3");
		assert_string_equal(info(topo, gpu_bus[i], LL_INFO_GPU_UUID), uuid);
		assert_string_equal(info(topo, gpu_bus[i], LL_INFO_NVLINKS_ACTIVE), i == inactive_gpu ? "17" : "18");
		assert_string_equal(info(topo, gpu_bus[i], LL_INFO_NVLINKS_INACTIVE), i == inactive_gpu ? "1" : "0");
	}
	assert_int_equal(nvlink_matrix_count(topo, &nbobjs, &kind), 1);
	assert_int_equal(nbobjs, 12);
	assert_true(kind & HWLOC_DISTANCES_KIND_MEANS_BANDWIDTH);
	assert_true(kind & HWLOC_DISTANCES_KIND_FROM_USER);
	for (int i = 0; i < 8; i++) {
		hwloc_obj_t g = pci(topo, gpu_bus[i]);
		assert_int_equal(nvlink_bw(topo, g, g), 1000000);
		for (int s = 0; s < 4; s++) {
			/* Link 17 goes to the last NVSwitch. */
			unsigned links = links_per_switch[s] - (i == inactive_gpu && s == 3);
			assert_int_equal(nvlink_bw(topo, g, pci(topo, switch_bus[s])), links * 25000);
		}
		for (int j = 0; j < 8; j++)
			if (j != i)
				assert_int_equal(nvlink_bw(topo, g, pci(topo, gpu_bus[j])), 0);
	}
	for (int s = 0; s < 4; s++) {
		assert_string_equal(pci(topo, switch_bus[s])->subtype, "NVSwitch");
		assert_int_equal(nvlink_bw(topo, pci(topo, switch_bus[s]), pci(topo, switch_bus[(s + 1) % 4])), 0);
	}
}

static void test_dgx8(void **state)
{
	struct fixture *f = *state;
	struct ll_error err = { 0 };
	assert_int_equal(ll_annotate_nvml(f->topo, fake, &warning, &err), 0);
	assert_null(err.message);
	assert_null(warning);
	assert_dgx8(f->topo, -1);
	assert_string_equal(read_log(), "init\nshutdown\n");
}

static void test_library_from_environment(void **state)
{
	struct fixture *f = *state;
	struct ll_error err = { 0 };
	setenv("LLMLAUNCH_NVML_LIBRARY", fake, 1);
	assert_int_equal(ll_annotate_nvml(f->topo, NULL, &warning, &err), 0);
	assert_null(warning);
	assert_dgx8(f->topo, -1);
}

static void test_inactive_link(void **state)
{
	struct fixture *f = *state;
	struct ll_error err = { 0 };
	setenv("FAKE_NVML_SCENARIO", "inactive-link", 1);
	assert_int_equal(ll_annotate_nvml(f->topo, fake, &warning, &err), 0);
	assert_null(warning);
	assert_dgx8(f->topo, 3);
}

/* A driver before R460: no remote device type, numeric PCI fields only. The
 * NVSwitches are recognised by their PCI class (0680) and vendor, as hwloc does. */
static void test_old_driver(void **state)
{
	struct fixture *f = *state;
	struct ll_error err = { 0 };
	assert_int_equal(ll_annotate_nvml(f->topo, fake_old, &warning, &err), 0);
	assert_null(warning);
	assert_dgx8(f->topo, -1);
}

static void test_init_fails(void **state)
{
	struct fixture *f = *state;
	struct ll_error err = { 0 };
	setenv("FAKE_NVML_SCENARIO", "init-fails", 1);
	assert_int_equal(ll_annotate_nvml(f->topo, fake, &warning, &err), 0);
	assert_null(err.message);
	assert_non_null(warning);
	assert_non_null(strstr(warning, "nvmlInit_v2 failed: Driver Not Loaded (9)"));
	assert_non_null(strstr(warning, fake));
	assert_nothing_recorded(f->topo);
	assert_string_equal(read_log(), ""); /* no shutdown without init */
}

static void test_query_fails_midway(void **state)
{
	struct fixture *f = *state;
	struct ll_error err = { 0 };
	setenv("FAKE_NVML_SCENARIO", "handle-fails", 1);
	assert_int_equal(ll_annotate_nvml(f->topo, fake, &warning, &err), 0);
	assert_non_null(warning);
	assert_non_null(strstr(warning, "nvmlDeviceGetHandleByIndex_v2 failed for GPU 5"));
	/* GPUs 0-4 were read before the failure: still nothing is recorded. */
	assert_nothing_recorded(f->topo);
	assert_string_equal(read_log(), "init\nshutdown\n");
}

static void test_missing_symbol(void **state)
{
	struct fixture *f = *state;
	struct ll_error err = { 0 };
	char expect[512];
	assert_int_equal(ll_annotate_nvml(f->topo, fake_noinit, &warning, &err), 0);
	assert_null(err.message);
	snprintf(expect, sizeof(expect), "'%s' is not a usable NVML library: it lacks 'nvmlInit_v2'", fake_noinit);
	assert_string_equal(warning, expect);
	assert_nothing_recorded(f->topo);
	assert_string_equal(read_log(), "");
}

static void test_named_library_absent(void **state)
{
	struct fixture *f = *state;
	struct ll_error err = { 0 };
	assert_int_equal(ll_annotate_nvml(f->topo, "/nonexistent/libnvidia-ml.so.1", &warning, &err), 0);
	assert_null(err.message);
	assert_non_null(warning);
	assert_true(strncmp(warning, "cannot load NVML library '/nonexistent/libnvidia-ml.so.1': ",
			    strlen("cannot load NVML library '/nonexistent/libnvidia-ml.so.1': ")) == 0);
	assert_nothing_recorded(f->topo);
}

/* The normal CPU node: no libnvidia-ml.so.1 anywhere. Quiet, nothing recorded. */
static void test_default_library_absent(void **state)
{
	struct fixture *f = *state;
	struct ll_error err = { 0 };
	void *dl = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (dl) {
		dlclose(dl);
		skip(); /* a real NVML is installed here */
	}
	assert_int_equal(ll_annotate_nvml(f->topo, NULL, &warning, &err), 0);
	assert_null(err.message);
	assert_null(warning);
	/* The default name passed on purpose (as ll_probe_load does) is just as quiet. */
	assert_int_equal(ll_annotate_nvml(f->topo, "libnvidia-ml.so.1", &warning, &err), 0);
	assert_null(warning);
	assert_nothing_recorded(f->topo);
}

static void test_no_nvlink(void **state)
{
	struct fixture *f = *state;
	struct ll_error err = { 0 };
	setenv("FAKE_NVML_SCENARIO", "no-nvlink", 1);
	assert_int_equal(ll_annotate_nvml(f->topo, fake, &warning, &err), 0);
	assert_null(warning);
	for (int i = 0; i < 8; i++) {
		assert_string_equal(info(f->topo, gpu_bus[i], LL_INFO_GPU_MODEL), "NVIDIA H100 80GB HBM3");
		assert_string_equal(info(f->topo, gpu_bus[i], LL_INFO_NVLINKS_ACTIVE), "0");
		assert_string_equal(info(f->topo, gpu_bus[i], LL_INFO_NVLINKS_INACTIVE), "0");
	}
	assert_int_equal(nvlink_matrix_count(f->topo, NULL, NULL), 0);
}

static void test_unknown_version(void **state)
{
	struct fixture *f = *state;
	struct ll_error err = { 0 };
	setenv("FAKE_NVML_SCENARIO", "unknown-version", 1);
	assert_int_equal(ll_annotate_nvml(f->topo, fake, &warning, &err), 0);
	assert_string_equal(warning, "unknown NVLink version 9 on GPU '0000:1b:00.0' link 0: "
						   "its bandwidth is left out of NVLinkBandwidth");
	/* Names and link counts are still right; only the bandwidths are unknown. */
	assert_string_equal(info(f->topo, gpu_bus[0], LL_INFO_NVLINKS_ACTIVE), "18");
	assert_string_equal(info(f->topo, gpu_bus[7], LL_INFO_GPU_UUID), "GPU-fa4e0000-0000-4000-8000-000000000007");
	assert_int_equal(nvlink_matrix_count(f->topo, NULL, NULL), 0);
}

/* P100 on POWER8: GPU-GPU NVLink 1 and NVLink to the CPU, recorded like hwloc's own
 * export hwloc-v2x-power8gpudistances.xml: 2 links x 20000 MB/s, CPU end = Package. */
static void test_gpu_gpu_and_cpu(void **state)
{
	struct fixture *f = *state;
	struct ll_error err = { 0 };
	unsigned nbobjs = 0;
	setenv("FAKE_NVML_SCENARIO", "p2p", 1);
	assert_int_equal(ll_annotate_nvml(f->topo, fake, &warning, &err), 0);
	assert_null(warning);
	hwloc_obj_t pkg = hwloc_get_obj_by_type(f->topo, HWLOC_OBJ_PACKAGE, 0);
	assert_non_null(pkg);
	assert_int_equal(nvlink_matrix_count(f->topo, &nbobjs, NULL), 1);
	assert_int_equal(nbobjs, 5); /* 4 GPUs + the Package they hang off */
	for (int i = 0; i < 4; i++) {
		hwloc_obj_t g = pci(f->topo, gpu_bus[i]);
		assert_string_equal(info(f->topo, gpu_bus[i], LL_INFO_GPU_MODEL), "Tesla P100-SXM2-16GB");
		assert_string_equal(info(f->topo, gpu_bus[i], LL_INFO_NVLINKS_ACTIVE), "4");
		assert_int_equal(nvlink_bw(f->topo, g, pci(f->topo, gpu_bus[i ^ 1])), 40000);
		assert_int_equal(nvlink_bw(f->topo, g, pci(f->topo, gpu_bus[i ^ 2])), 0);
		assert_int_equal(nvlink_bw(f->topo, g, pkg), 40000);
	}
	assert_int_equal(nvlink_bw(f->topo, pkg, pkg), 1000000);
	/* GPUs 4-7 are not NVML's: nothing on them. */
	assert_null(info(f->topo, gpu_bus[4], LL_INFO_GPU_MODEL));
}

/* hwloc's default PCI filter drops class 0680 bridges: the NVSwitches are gone. */
static void test_nvswitch_filtered_out(void **state)
{
	(void)state;
	hwloc_topology_t topo;
	struct ll_error err = { 0 };
	assert_int_equal(load_topology(&topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT), 0);
	assert_null(hwloc_get_pcidev_by_busid(topo, 0, 0x05, 0, 0));
	assert_int_equal(ll_annotate_nvml(topo, fake, &warning, &err), 0);
	assert_string_equal(warning,
			    "NVLink peer NVSwitch '0000:05:00.0' of GPU '0000:1b:00.0' is not in the topology"
			    " (are PCI bridges of class 0680 filtered out?)");
	assert_string_equal(info(topo, gpu_bus[2], LL_INFO_NVLINKS_ACTIVE), "18");
	assert_int_equal(nvlink_matrix_count(topo, NULL, NULL), 0);
	hwloc_topology_destroy(topo);
}

/* Running twice (or over an export that already has the facts) adds nothing twice. */
static void test_idempotent(void **state)
{
	struct fixture *f = *state;
	struct ll_error err = { 0 };
	assert_int_equal(ll_annotate_nvml(f->topo, fake, &warning, &err), 0);
	assert_int_equal(ll_annotate_nvml(f->topo, fake, &warning, &err), 0);
	assert_dgx8(f->topo, -1);
	hwloc_obj_t g = pci(f->topo, gpu_bus[0]);
	unsigned models = 0;
	for (unsigned i = 0; i < g->infos_count; i++)
		models += strcmp(g->infos[i].name, LL_INFO_GPU_MODEL) == 0;
	assert_int_equal(models, 1);
}

/* The annotated topology survives hwloc's XML export and import. */
static void test_xml_round_trip(void **state)
{
	struct fixture *f = *state;
	struct ll_error err = { 0 };
	hwloc_topology_t replay;
	char path[300];

	setenv("FAKE_NVML_SCENARIO", "inactive-link", 1);
	assert_int_equal(ll_annotate_nvml(f->topo, fake, &warning, &err), 0);
	snprintf(path, sizeof(path), "%s/node.xml", tmpdir);
	assert_int_equal(hwloc_topology_export_xml(f->topo, path, 0), 0);
	assert_int_equal(hwloc_topology_init(&replay), 0);
	assert_int_equal(hwloc_topology_set_xml(replay, path), 0);
	hwloc_topology_set_io_types_filter(replay, HWLOC_TYPE_FILTER_KEEP_ALL);
	assert_int_equal(hwloc_topology_load(replay), 0);
	assert_dgx8(replay, 3);
	hwloc_topology_destroy(replay);
	unlink(path);
}

/* ---- GPU fabric (probe/nvml-fabric.c) ---- */

static void unset_fabric(void)
{
	static const char *const vars[] = { "FAKE_NVML_FABRIC_CLUSTER", "FAKE_NVML_FABRIC_CLIQUE",
					    "FAKE_NVML_FABRIC_STATE", "FAKE_NVML_FABRIC_STATUS",
					    "FAKE_NVML_FABRIC_HEALTH", "FAKE_NVML_FABRIC_GPU",
					    "FAKE_NVML_FABRIC_V1_ONLY" };
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

/* A GB200-like tray: every GPU registered in clique 2 of domain ...02. */
static void test_fabric_completed(void **state)
{
	struct fixture *f = *state;
	struct ll_error err = { 0 };

	unset_fabric();
	setenv("FAKE_NVML_FABRIC_CLIQUE", "2", 1);
	setenv("FAKE_NVML_FABRIC_CLUSTER", "2", 1);
	setenv("FAKE_NVML_FABRIC_GPU", "5", 1);
	setenv("FAKE_NVML_FABRIC_HEALTH", "0x1", 1);
	assert_int_equal(ll_annotate_nvml(f->topo, fake, &warning, &err), 0);
	assert_null(warning);
	for (int i = 0; i < 8; i++) {
		assert_string_equal(info(f->topo, gpu_bus[i], LL_INFO_FABRIC_STATE), "completed");
		assert_string_equal(info(f->topo, gpu_bus[i], LL_INFO_FABRIC_STATUS), "0");
		assert_string_equal(info(f->topo, gpu_bus[i], LL_INFO_FABRIC_CLUSTER),
				    "c1000000-0000-0000-0000-000000000002");
		assert_string_equal(info(f->topo, gpu_bus[i], LL_INFO_FABRIC_CLIQUE), "2");
		assert_string_equal(info(f->topo, gpu_bus[i], LL_INFO_FABRIC_HEALTH), i == 5 ? "0x00000001" : "0x00000002");
	}
	assert_false(ll_topo_fabric_pending(f->topo));
	unset_fabric();
}

/* Registration under way on one GPU: only the state, nothing NVML cannot know yet;
 * the version 1 call where the driver refuses the version 2 struct (no health mask). */
static void test_fabric_pending_and_v1(void **state)
{
	struct fixture *f = *state;
	struct ll_error err = { 0 };

	unset_fabric();
	setenv("FAKE_NVML_FABRIC_CLIQUE", "1", 1);
	setenv("FAKE_NVML_FABRIC_GPU", "3", 1);
	setenv("FAKE_NVML_FABRIC_STATE", "2", 1);
	setenv("FAKE_NVML_FABRIC_V1_ONLY", "1", 1);
	assert_int_equal(ll_annotate_nvml(f->topo, fake, &warning, &err), 0);
	assert_string_equal(info(f->topo, gpu_bus[3], LL_INFO_FABRIC_STATE), "in-progress");
	assert_null(info(f->topo, gpu_bus[3], LL_INFO_FABRIC_STATUS));
	assert_null(info(f->topo, gpu_bus[3], LL_INFO_FABRIC_CLUSTER));
	assert_null(info(f->topo, gpu_bus[3], LL_INFO_FABRIC_CLIQUE));
	assert_string_equal(info(f->topo, gpu_bus[0], LL_INFO_FABRIC_STATE), "completed");
	assert_string_equal(info(f->topo, gpu_bus[0], LL_INFO_FABRIC_CLIQUE), "1");
	/* Version 1 has no health mask: unknown, not healthy. */
	assert_null(info(f->topo, gpu_bus[0], LL_INFO_FABRIC_HEALTH));
	/* Such a topology is not cached: the state is read again until it settles. */
	assert_true(ll_topo_fabric_pending(f->topo));
	unset_fabric();
}

/* No fabric calls (a driver of before fabric support, the old build) or calls that
 * do not answer: nothing recorded, never a guess. */
static void test_fabric_absent(void **state)
{
	struct fixture *f = *state;
	struct ll_error err = { 0 };

	unset_fabric();
	assert_int_equal(ll_annotate_nvml(f->topo, fake, &warning, &err), 0);
	for (int i = 0; i < 8; i++)
		assert_null(info(f->topo, gpu_bus[i], LL_INFO_FABRIC_STATE));
	setenv("FAKE_NVML_FABRIC_CLIQUE", "1", 1);
	assert_int_equal(ll_annotate_nvml(f->topo, fake_old, &warning, &err), 0);
	assert_null(info(f->topo, gpu_bus[0], LL_INFO_FABRIC_STATE));
	unset_fabric();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dgx8, setup, teardown),
		cmocka_unit_test_setup_teardown(test_library_from_environment, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inactive_link, setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_driver, setup, teardown),
		cmocka_unit_test_setup_teardown(test_init_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_query_fails_midway, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_symbol, setup, teardown),
		cmocka_unit_test_setup_teardown(test_named_library_absent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_default_library_absent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_nvlink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gpu_gpu_and_cpu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nvswitch_filtered_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idempotent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_xml_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fabric_completed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fabric_pending_and_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fabric_absent, setup, teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
