/* The sysfs annotators on fake /sys trees written by tests/fixtures/sysfs/
 * fake-sysfs.sh: RoCE GID tables, DOWN ports, mlx5_1 beside mlx5_10, virtual
 * interfaces, stand-ins, garbage files; and on this machine's live /sys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "llmlaunch/probe.h"
#include "../../probe/annotate.h"
#include "../../probe/annotations.h"

struct fake {
	char dir[64];
};

/* Run shell code with the generator sourced and $R set to the fake root. */
static void gen(const struct fake *f, const char *script)
{
	const char *fixtures = getenv("LL_FIXTURES");
	char *cmd;

	assert_non_null(fixtures);
	cmd = ll_asprintf("R='%s' bash -euc '. \"%s/sysfs/fake-sysfs.sh\"; %s'", f->dir, fixtures, script);
	assert_int_equal(system(cmd), 0);
	free(cmd);
}

static int fake_setup(void **state)
{
	struct fake *f = ll_calloc(1, sizeof(*f));

	if (!getenv("LL_FIXTURES")) {
		free(f);
		return -1;
	}
	/* tmpfs when there is one: creating many small files on disk is slow here. */
	snprintf(f->dir, sizeof(f->dir), "%s/ll-sysfs-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int fake_teardown(void **state)
{
	struct fake *f = *state;
	char *cmd = ll_asprintf("rm -rf '%s'", f->dir);
	int r = system(cmd);

	free(cmd);
	free(f);
	return r == 0 ? 0 : -1;
}

/* The whole live path: ll_probe_load with --fsroot, i.e. hwloc with virtual OS
 * devices, then every annotator. */
static hwloc_topology_t load_fsroot(const char *dir)
{
	struct ll_probe_options opts = { .fsroot = dir, .skip_nvml = true };
	struct ll_error err = { 0 };
	hwloc_topology_t topo = NULL;

	if (ll_probe_load(&opts, &topo, &err) < 0)
		fail_msg("ll_probe_load: %s", err.message);
	return topo;
}

/* hwloc alone, without HWLOC_VIRTUAL_LINUX_OSDEV: virtual devices get no OS
 * device, so the annotators must add stand-ins. */
static hwloc_topology_t load_plain(const char *dir)
{
	hwloc_topology_t topo;

	assert_int_equal(hwloc_topology_init(&topo), 0);
	setenv("HWLOC_FSROOT", dir, 1);
	unsetenv("HWLOC_VIRTUAL_LINUX_OSDEV");
	hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
	hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "opencl");
	hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "gl");
	/* libpciaccess reads the live /sys whatever the fsroot (and leaks doing it);
	 * hwloc's Linux backend reads PCI below the fsroot itself. */
	hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
	hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	hwloc_topology_set_type_filter(topo, HWLOC_OBJ_MISC, HWLOC_TYPE_FILTER_KEEP_ALL);
	assert_int_equal(hwloc_topology_load(topo), 0);
	unsetenv("HWLOC_FSROOT");
	return topo;
}

static void annotate_all(hwloc_topology_t topo, const char *fsroot)
{
	struct ll_error err = { 0 };

	assert_int_equal(ll_annotate_host(topo, fsroot, &err), 0);
	assert_int_equal(ll_annotate_rdma(topo, fsroot, &err), 0);
	assert_int_equal(ll_annotate_netifs(topo, fsroot, &err), 0);
	assert_null(err.message);
}

/* The OS device named so, or its stand-in (virtual devices: the probe loads
 * without HWLOC_VIRTUAL_LINUX_OSDEV). */
static hwloc_obj_t device(hwloc_topology_t topo, const char *name)
{
	for (hwloc_obj_t o = NULL; (o = hwloc_get_next_osdev(topo, o));)
		if (ll_streq(o->name, name))
			return o;
	for (hwloc_obj_t o = hwloc_get_root_obj(topo)->misc_first_child; o; o = o->next_sibling)
		if (ll_streq(o->name, name) && hwloc_obj_get_info_by_name(o, "LLMLaunchStandIn"))
			return o;
	fail_msg("no OS device or stand-in '%s'", name);
	return NULL;
}

static hwloc_obj_t standin(hwloc_topology_t topo, const char *name, const char *kind)
{
	for (hwloc_obj_t o = hwloc_get_root_obj(topo)->misc_first_child; o; o = o->next_sibling)
		if (ll_streq(o->name, name) && ll_streq(hwloc_obj_get_info_by_name(o, LL_INFO_STANDIN), kind))
			return o;
	return NULL;
}

static unsigned info_count(hwloc_obj_t o, const char *name)
{
	unsigned n = 0;

	for (unsigned i = 0; i < o->infos_count; i++)
		n += ll_streq(o->infos[i].name, name);
	return n;
}

/* Exactly one info of that name with that value; expect NULL: none at all. */
static void info_is(hwloc_obj_t o, const char *name, const char *expect)
{
	const char *got = hwloc_obj_get_info_by_name(o, name);

	if (!expect) {
		if (got)
			fail_msg("%s: %s is '%s', expected absent", o->name, name, got);
		return;
	}
	if (!got)
		fail_msg("%s: %s absent, expected '%s'", o->name, name, expect);
	if (strcmp(got, expect))
		fail_msg("%s: %s is '%s', expected '%s'", o->name, name, got, expect);
	assert_int_equal(info_count(o, name), 1);
}

static void test_roce_gid_table(void **state)
{
	struct fake *f = *state;
	hwloc_topology_t topo;
	hwloc_obj_t o;

	gen(f, "scenario_roce \"$R\"");
	topo = load_fsroot(f->dir);
	o = device(topo, "mlx5_0");
	info_is(o, "Port1LinkLayer", "Ethernet");
	info_is(o, "Port1Rate", "100 Gb/sec (4X EDR)");
	info_is(o, "Port1PhysState", "5: LinkUp");
	info_is(o, "Port1StateName", "4: ACTIVE");
	info_is(o, "Port1State", "4");
	info_is(o, "Port1GID0", "fe80:0000:0000:0000:bace:f6ff:fea1:b2c0");
	info_is(o, "Port1GID0Type", "IB/RoCE v1");
	info_is(o, "Port1GID1", "fe80:0000:0000:0000:bace:f6ff:fea1:b2c0");
	info_is(o, "Port1GID1Type", "RoCE v2");
	info_is(o, "Port1GID2", "0000:0000:0000:0000:0000:ffff:0a00:0001");
	info_is(o, "Port1GID2Type", "IB/RoCE v1");
	info_is(o, "Port1GID3", "0000:0000:0000:0000:0000:ffff:0a00:0001");
	info_is(o, "Port1GID3Type", "RoCE v2");
	/* Slots 4..7 are all zeros: skipped, and their types never read. */
	for (unsigned k = 4; k < 8; k++) {
		char name[32];
		snprintf(name, sizeof(name), "Port1GID%u", k);
		info_is(o, name, NULL);
		snprintf(name, sizeof(name), "Port1GID%uType", k);
		info_is(o, name, NULL);
	}
	info_is(o, "Port1Netdev", "enp2s0f0");
	info_is(o, "Port2LinkLayer", NULL);
	info_is(o, "NodeGUID", "b8ce:f603:00a1:b2c0");
	hwloc_topology_destroy(topo);
}

static void test_down_port_and_similar_names(void **state)
{
	struct fake *f = *state;
	hwloc_topology_t topo;
	hwloc_obj_t o;

	gen(f, "scenario_roce \"$R\"");
	topo = load_fsroot(f->dir);
	o = device(topo, "mlx5_1");
	info_is(o, "Port1StateName", "1: DOWN");
	info_is(o, "Port1State", "1");
	info_is(o, "Port1PhysState", "3: Disabled");
	info_is(o, "Port1LinkLayer", "InfiniBand");
	info_is(o, "Port1Rate", "10 Gb/sec (4X SDR)");
	info_is(o, "Port1LID", "0xffff");
	info_is(o, "Port1GID0Type", "IB/RoCE v1");
	info_is(o, "Port1Netdev", "ib1");
	info_is(o, "NodeGUID", "0c42:a103:0011:2230");

	o = device(topo, "mlx5_10");
	info_is(o, "Port1StateName", "4: ACTIVE");
	info_is(o, "Port1PhysState", "5: LinkUp");
	info_is(o, "Port1Rate", "200 Gb/sec (4X HDR)");
	info_is(o, "Port1LID", "0x2a");
	info_is(o, "Port1Netdev", "ib0");
	info_is(o, "NodeGUID", "0c42:a103:0011:2240");
	hwloc_topology_destroy(topo);
}

static void test_interfaces(void **state)
{
	struct fake *f = *state;
	hwloc_topology_t topo;
	hwloc_obj_t o;

	gen(f, "scenario_roce \"$R\"");
	topo = load_fsroot(f->dir);

	o = device(topo, "enp2s0f0");
	info_is(o, "NetKind", "ethernet");
	info_is(o, "NetVirtual", "0");
	info_is(o, "NetOperState", "up");
	info_is(o, "NetFlags", "UP,BROADCAST,RUNNING,MULTICAST");
	info_is(o, "NetMTU", "9000");
	info_is(o, "NetSpeed", "100000");
	/* Under --fsroot addresses are unknown, not "none". */
	info_is(o, "NetAddrsKnown", NULL);
	assert_int_equal(info_count(o, "NetAddr"), 0);

	o = device(topo, "ib1");
	info_is(o, "NetKind", "infiniband");
	info_is(o, "NetVirtual", "0");
	info_is(o, "NetOperState", "down");
	info_is(o, "NetFlags", "BROADCAST,MULTICAST");
	info_is(o, "NetMTU", "4092");
	info_is(o, "NetSpeed", NULL); /* empty file: the kernel's EINVAL while down */

	o = device(topo, "lo");
	info_is(o, "NetKind", "loopback");
	info_is(o, "NetVirtual", "1");
	info_is(o, "NetOperState", "unknown");
	info_is(o, "NetFlags", "UP,LOOPBACK,RUNNING");
	info_is(o, "NetMTU", "65536");

	o = device(topo, "docker0");
	info_is(o, "NetKind", "docker");
	info_is(o, "NetVirtual", "1");
	info_is(o, "NetOperState", "down");
	/* Administratively up, no carrier: not RUNNING. */
	info_is(o, "NetFlags", "UP,BROADCAST,MULTICAST");

	o = device(topo, "veth1a2b3c");
	info_is(o, "NetKind", "veth");
	info_is(o, "NetVirtual", "1");
	info_is(o, "NetSpeed", "10000");
	info_is(o, "NetFlags", "UP,BROADCAST,RUNNING,MULTICAST");

	o = device(topo, "virbr0");
	info_is(o, "NetKind", "virbr");
	info_is(o, "NetVirtual", "1");

	o = hwloc_get_root_obj(topo);
	info_is(o, "GPUDirectRDMAModule", "nvidia_peermem");
	info_is(o, "DMIProductName", "Fake Node 9000");
	hwloc_topology_destroy(topo);
}

/* A virtual RDMA device (rxe over a veth) and virtual interfaces, as the probe
 * loads (without HWLOC_VIRTUAL_LINUX_OSDEV): stand-ins below the root, the RDMA
 * one marked virtual (software RDMA, not a bridge like scif0)... */
static void test_virtual_rdma_standin(void **state)
{
	struct fake *f = *state;
	hwloc_topology_t topo;
	hwloc_obj_t o;

	gen(f, "scenario_roce \"$R\"; fake_ib \"$R\" rxe0 virtual;"
	       "fake_ib_port \"$R\" rxe0 1 \"4: ACTIVE\" \"5: LinkUp\" \"10 Gb/sec (1X QDR)\" Ethernet;"
	       "fake_gid \"$R\" rxe0 1 0 fe80:0000:0000:0000:5054:00ff:fe12:3456 \"RoCE v2\" veth1a2b3c");
	topo = load_fsroot(f->dir);
	o = standin(topo, "rxe0", "OpenFabrics");
	assert_non_null(o);
	assert_ptr_equal(o->parent, hwloc_get_root_obj(topo));
	info_is(o, "RDMAVirtual", "1");
	info_is(o, "Port1LinkLayer", "Ethernet");
	info_is(o, "Port1GID0Type", "RoCE v2");
	info_is(o, "Port1Netdev", "veth1a2b3c");
	for (hwloc_obj_t d = NULL; (d = hwloc_get_next_osdev(topo, d));)
		assert_false(ll_streq(d->name, "rxe0") || ll_streq(d->name, "lo"));
	assert_non_null(standin(topo, "lo", "Network"));
	hwloc_topology_destroy(topo);
}

/* A device that is neither PCI nor virtual gets no OS device at all: the live
 * path must still report it, as a stand-in. */
static void test_platform_rdma_standin(void **state)
{
	struct fake *f = *state;
	hwloc_topology_t topo;
	hwloc_obj_t o;

	gen(f, "scenario_roce \"$R\"; fake_ib \"$R\" scif0 platform;"
	       "fake_ib_port \"$R\" scif0 1 \"4: ACTIVE\" \"5: LinkUp\" \"40 Gb/sec (4X QDR)\" InfiniBand 0x7;"
	       "ln -sfn ../../devices/nowhere/infiniband/ghost0 \"$R/sys/class/infiniband/ghost0\"");
	topo = load_fsroot(f->dir);
	o = standin(topo, "scif0", "OpenFabrics");
	assert_non_null(o);
	info_is(o, "Port1State", "4");
	info_is(o, "Port1LinkLayer", "InfiniBand");
	info_is(o, "Port1Rate", "40 Gb/sec (4X QDR)");
	info_is(o, "Port1LID", "0x7");
	info_is(o, "RDMAVirtual", "0");
	/* A dangling link (gathered trees have them) is no device. */
	assert_null(standin(topo, "ghost0", "OpenFabrics"));
	hwloc_topology_destroy(topo);
}

/* ...and without it, the annotators add Misc stand-ins with the same infos. */
static void test_standins(void **state)
{
	struct fake *f = *state;
	hwloc_topology_t topo;
	hwloc_obj_t o;

	gen(f, "scenario_roce \"$R\"; fake_ib \"$R\" rxe0 virtual 5254:00ff:fe12:3456;"
	       "fake_ib_port \"$R\" rxe0 1 \"4: ACTIVE\" \"5: LinkUp\" \"10 Gb/sec (1X QDR)\" Ethernet;"
	       "fake_gid_table \"$R\" rxe0 1 4;"
	       "fake_gid \"$R\" rxe0 1 1 fe80:0000:0000:0000:5054:00ff:fe12:3456 \"RoCE v2\" veth1a2b3c");
	topo = load_plain(f->dir);
	annotate_all(topo, f->dir);
	/* Annotating twice must not duplicate anything. */
	annotate_all(topo, f->dir);

	o = standin(topo, "rxe0", "OpenFabrics");
	assert_non_null(o);
	info_is(o, "RDMAVirtual", "1");
	info_is(o, "NodeGUID", "5254:00ff:fe12:3456");
	info_is(o, "Port1State", "4");
	info_is(o, "Port1StateName", "4: ACTIVE");
	info_is(o, "Port1LID", "0x0");
	info_is(o, "Port1GID0", NULL);
	info_is(o, "Port1GID1", "fe80:0000:0000:0000:5054:00ff:fe12:3456");
	info_is(o, "Port1GID1Type", "RoCE v2");
	info_is(o, "Port1Netdev", "veth1a2b3c");
	assert_null(standin(topo, "mlx5_0", "OpenFabrics"));

	o = standin(topo, "lo", "Network");
	assert_non_null(o);
	info_is(o, "NetKind", "loopback");
	info_is(o, "NetVirtual", "1");
	info_is(o, "Address", "00:00:00:00:00:00");
	o = standin(topo, "docker0", "Network");
	assert_non_null(o);
	info_is(o, "NetKind", "docker");
	info_is(o, "Address", "02:42:9a:1b:2c:3d");
	assert_non_null(standin(topo, "veth1a2b3c", "Network"));
	assert_non_null(standin(topo, "virbr0", "Network"));
	/* Interfaces with a PCI device stay OS devices only. */
	assert_null(standin(topo, "enp2s0f0", "Network"));
	info_is(device(topo, "enp2s0f0"), "NetKind", "ethernet");
	info_is(device(topo, "mlx5_0"), "Port1GID1Type", "RoCE v2");
	hwloc_topology_destroy(topo);
}

/* Garbage and unreadable attributes: unknown, never a crash, never junk in the
 * topology. Directories stand in for unreadable files (root reads anything). */
static void test_garbage(void **state)
{
	struct fake *f = *state;
	hwloc_topology_t topo;
	hwloc_obj_t o;

	gen(f, "scenario_roce \"$R\"; P=$R/sys/class/infiniband/mlx5_0/ports/1;"
	       "printf \"\\001\\002\\377garbage\" > $P/rate;"
	       "echo Banana > $P/link_layer;"
	       "echo hello > $P/state;"
	       "head -c 100000 /dev/zero | tr \"\\\\0\" x > $P/phys_state;"
	       "echo not-a-gid > $P/gids/1; rm $P/gid_attrs/types/0; mkdir $P/gid_attrs/types/0;"
	       "rm $P/gid_attrs/types/2; mkfifo $P/gid_attrs/types/2;"
	       "echo \"RoCE v3\" > $P/gid_attrs/types/3;"
	       "echo \"../../etc\" > $P/gid_attrs/ndevs/0; echo \"bad name\" > $P/gid_attrs/ndevs/1;"
	       "rm -f $P/gid_attrs/ndevs/2 $P/gid_attrs/ndevs/3;"
	       "mkdir -p $P/../7; echo junk > $P/../7/state; mkdir $P/../x;"
	       "N=$R/sys/class/net/enp2s0f0; echo zzz > $N/flags; echo abc > $N/mtu; echo -1 > $N/speed;"
	       "printf \"UP\\n\" > $N/operstate;"
	       "N=$R/sys/class/net/veth1a2b3c; : > $N/type; rm $N/operstate; echo 0x1003 > $N/flags;"
	       "echo 99999999999999999999 > $N/mtu;"
	       "rm -r $R/sys/class/dmi/id/product_name; mkdir $R/sys/class/dmi/id/product_name");
	topo = load_fsroot(f->dir);
	o = device(topo, "mlx5_0");
	info_is(o, "Port1Rate", NULL);
	info_is(o, "Port1LinkLayer", NULL);
	info_is(o, "Port1StateName", NULL);
	/* hwloc's own PortNState keeps the first byte of the file, whatever it is. */
	info_is(o, "Port1State", "h");
	info_is(o, "Port1PhysState", NULL);
	info_is(o, "Port1GID0Type", NULL);
	/* hwloc stores its own (empty) reading of a malformed GID; its type is
	 * ours, and a slot we cannot read as a GID has none. */
	info_is(o, "Port1GID1Type", NULL);
	info_is(o, "Port1GID2Type", NULL);
	info_is(o, "Port1GID3Type", NULL);
	info_is(o, "Port1GID3", "0000:0000:0000:0000:0000:ffff:0a00:0001");
	/* ndevs unusable: the netdev comes from the PCI device's interfaces. */
	info_is(o, "Port1Netdev", "enp2s0f0");
	info_is(o, "Port7StateName", NULL);

	o = device(topo, "enp2s0f0");
	info_is(o, "NetFlags", NULL);
	info_is(o, "NetMTU", NULL);
	info_is(o, "NetSpeed", NULL);
	info_is(o, "NetOperState", NULL);
	info_is(o, "NetKind", "ethernet");

	/* Up, but no operstate: whether it runs is unknown, so no flag list. */
	o = device(topo, "veth1a2b3c");
	info_is(o, "NetFlags", NULL);
	info_is(o, "NetMTU", NULL);
	info_is(o, "NetKind", "veth");

	info_is(hwloc_get_root_obj(topo), "DMIProductName", NULL);
	hwloc_topology_destroy(topo);
}

static void test_gdr_module(void **state)
{
	struct fake *f = *state;
	hwloc_topology_t topo;

	gen(f, "fake_machine \"$R\" 1");
	/* No /sys/module at all: unknowable. */
	topo = load_fsroot(f->dir);
	info_is(hwloc_get_root_obj(topo), "GPUDirectRDMAModule", NULL);
	hwloc_topology_destroy(topo);

	gen(f, "fake_module \"$R\" ib_core");
	topo = load_fsroot(f->dir);
	info_is(hwloc_get_root_obj(topo), "GPUDirectRDMAModule", "none");
	hwloc_topology_destroy(topo);

	gen(f, "fake_module \"$R\" nv_peer_mem");
	topo = load_fsroot(f->dir);
	info_is(hwloc_get_root_obj(topo), "GPUDirectRDMAModule", "nv_peer_mem");
	hwloc_topology_destroy(topo);
}

/* Neither /sys/class/infiniband nor /sys/class/net: nothing to find, no error. */
static void test_empty_tree(void **state)
{
	struct fake *f = *state;
	hwloc_topology_t topo;

	gen(f, "fake_machine \"$R\" 1; rmdir \"$R/sys/class/infiniband\" \"$R/sys/class/net\"");
	topo = load_fsroot(f->dir);
	assert_null(hwloc_get_root_obj(topo)->misc_first_child);
	hwloc_topology_destroy(topo);
}

static void test_live(void **state)
{
	struct ll_probe_options opts = { .skip_nvml = true };
	struct ll_error err = { 0 };
	hwloc_topology_t topo = NULL;
	char host[256];
	hwloc_obj_t o;
	bool found = false;

	(void)state;
	if (access("/sys/class/net/lo", F_OK) < 0)
		skip();
	assert_int_equal(ll_probe_load(&opts, &topo, &err), 0);
	o = device(topo, "lo");
	info_is(o, "NetKind", "loopback");
	info_is(o, "NetVirtual", "1");
	info_is(o, "NetAddrsKnown", "1");
	for (unsigned i = 0; i < o->infos_count; i++)
		found |= ll_streq(o->infos[i].name, "NetAddr") && ll_streq(o->infos[i].value, "127.0.0.1/8");
	assert_true(found);
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	assert_string_equal(hwloc_obj_get_info_by_name(hwloc_get_root_obj(topo), "HostName"), host);
	/* /sys/module always exists on a live system. */
	assert_non_null(hwloc_obj_get_info_by_name(hwloc_get_root_obj(topo), "GPUDirectRDMAModule"));
	hwloc_topology_destroy(topo);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roce_gid_table, fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(test_down_port_and_similar_names, fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(test_interfaces, fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(test_virtual_rdma_standin, fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(test_platform_rdma_standin, fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(test_standins, fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(test_garbage, fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(test_gdr_module, fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(test_empty_tree, fake_setup, fake_teardown),
		cmocka_unit_test(test_live),
	};

	/* LL_TEST_FILTER=test_garbage runs one case (cmocka's glob syntax). */
	if (getenv("LL_TEST_FILTER"))
		cmocka_set_test_filter(getenv("LL_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
