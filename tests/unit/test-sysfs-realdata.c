/* The sysfs annotators on /sys trees read through --fsroot. Always: a tree that
 * tests/fixtures/sysfs/fake-sysfs.sh writes of the fixture machine's socket 0
 * (the hardware of $LL_FIXTURES/hwloc/two-socket-4gpu-2hca.xml), whose facts must
 * agree with that export's. Real gathered trees (hwloc's test tarballs in
 * $LL_REALDATA/sysfs_tarballs), unpacked at run time: those cases skip one by one
 * when the real data is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "llmlaunch/probe.h"
#include "../../probe/annotations.h"

struct unpacked {
	char dir[64];
	char *root; /* the tarball's single top directory inside dir */
};

static struct unpacked *unpack(const char *tarball)
{
	const char *realdata = getenv("LL_REALDATA");
	struct unpacked *u;
	struct dirent *de;
	char *path, *cmd;
	DIR *d;

	if (!realdata) {
		fprintf(stderr, "%s: skipped, real data not found (LL_REALDATA unset)\n", tarball);
		return NULL;
	}
	path = ll_asprintf("%s/sysfs_tarballs/%s", realdata, tarball);
	if (access(path, R_OK) < 0) {
		fprintf(stderr, "%s: skipped, real data not found (LL_REALDATA=%s)\n", tarball, realdata);
		free(path);
		return NULL;
	}
	u = ll_calloc(1, sizeof(*u));
	/* tmpfs: unpacking 9000 small files on this disk takes 15 s, in memory 0.2 s. */
	snprintf(u->dir, sizeof(u->dir), "%s/ll-sysfs-real-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	assert_non_null(mkdtemp(u->dir));
	cmd = ll_asprintf("tar -xjf '%s' -C '%s'", path, u->dir);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	free(path);
	d = opendir(u->dir);
	assert_non_null(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			u->root = ll_asprintf("%s/%s", u->dir, de->d_name);
	closedir(d);
	assert_non_null(u->root);
	return u;
}

static void unpacked_free(struct unpacked *u)
{
	char *cmd = ll_asprintf("rm -rf '%s'", u->dir);

	assert_int_equal(system(cmd), 0);
	free(cmd);
	free(u->root);
	free(u);
}

static hwloc_topology_t load(const char *fsroot)
{
	struct ll_probe_options opts = { .fsroot = fsroot, .skip_nvml = true };
	struct ll_error err = { 0 };
	hwloc_topology_t topo = NULL;

	if (ll_probe_load(&opts, &topo, &err) < 0)
		fail_msg("ll_probe_load: %s", err.message);
	return topo;
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

static void info_is(hwloc_obj_t o, const char *name, const char *expect)
{
	const char *got = hwloc_obj_get_info_by_name(o, name);
	unsigned n = 0;

	if (!expect) {
		if (got)
			fail_msg("%s: %s is '%s', expected absent", o->name, name, got);
		return;
	}
	if (!got)
		fail_msg("%s: %s absent, expected '%s'", o->name, name, expect);
	if (strcmp(got, expect))
		fail_msg("%s: %s is '%s', expected '%s'", o->name, name, got, expect);
	for (unsigned i = 0; i < o->infos_count; i++)
		n += ll_streq(o->infos[i].name, name);
	assert_int_equal(n, 1);
}

/* Dell DCS8000Z, 2012: ConnectX-3 (mlx4_0) FDR InfiniBand with ib0, two igb
 * ports, and virtual interfaces whose /sys/devices/virtual was not gathered. */
static void test_mlx4_fdr(void **state)
{
	struct unpacked *u = unpack("32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2");
	hwloc_topology_t topo;
	hwloc_obj_t o, root;

	(void)state;
	if (!u)
		skip();
	topo = load(u->root);

	o = device(topo, "mlx4_0");
	assert_int_equal(o->attr->osdev.type, HWLOC_OBJ_OSDEV_OPENFABRICS);
	info_is(o, "Port1StateName", "4: ACTIVE");
	info_is(o, "Port1State", "4");
	info_is(o, "Port1PhysState", "5: LinkUp");
	info_is(o, "Port1LinkLayer", "InfiniBand");
	info_is(o, "Port1Rate", "56 Gb/sec (4X FDR)");
	info_is(o, "Port1LID", "0x3a4");
	info_is(o, "Port1GID0", "fe80:0000:0000:0000:0002:c903:00f9:bfa1");
	/* 127 more slots hold the bare fe80:: prefix: unused. No gid_attrs in a
	 * 2013 kernel, so no types. ib0 is found by its dev_id. */
	info_is(o, "Port1GID1", NULL);
	info_is(o, "Port1GID0Type", NULL);
	info_is(o, "Port1Netdev", "ib0");
	info_is(o, "Port2StateName", NULL);

	o = device(topo, "ib0");
	info_is(o, "NetKind", "infiniband");
	info_is(o, "NetVirtual", "0");
	info_is(o, "NetOperState", "up");
	info_is(o, "NetFlags", "UP,BROADCAST,RUNNING,MULTICAST");
	info_is(o, "NetMTU", "2044");
	info_is(o, "NetSpeed", NULL);
	info_is(o, "NetAddrsKnown", NULL);

	o = device(topo, "eth0");
	info_is(o, "NetKind", "ethernet");
	info_is(o, "NetFlags", "UP,BROADCAST,RUNNING,PROMISC,MULTICAST");
	info_is(o, "NetSpeed", "1000");
	info_is(o, "NetMTU", "1500");
	o = device(topo, "eth1");
	info_is(o, "NetOperState", "down");
	info_is(o, "NetFlags", "BROADCAST,MULTICAST");
	info_is(o, "NetSpeed", NULL);

	/* Dangling links: only the names and link targets are known. */
	o = device(topo, "lo");
	info_is(o, "NetKind", "loopback");
	info_is(o, "NetVirtual", "1");
	info_is(o, "NetOperState", NULL);
	info_is(o, "NetFlags", NULL);
	info_is(device(topo, "br0"), "NetKind", "bridge");
	info_is(device(topo, "eth0.1015"), "NetKind", "vlan");
	info_is(device(topo, "mic0"), "NetKind", "virtual");
	info_is(device(topo, "mic0"), "NetVirtual", "1");

	/* scif0's link dangles too: no device to report. */
	for (o = hwloc_get_root_obj(topo)->misc_first_child; o; o = o->next_sibling)
		assert_false(ll_streq(hwloc_obj_get_info_by_name(o, LL_INFO_STANDIN), "OpenFabrics"));

	root = hwloc_get_root_obj(topo);
	info_is(root, "DMIProductName", "DCS8000Z");
	/* The tree has no /sys/module: GPUDirect RDMA readiness is unknown. */
	info_is(root, "GPUDirectRDMAModule", NULL);
	hwloc_topology_destroy(topo);
	unpacked_free(u);
}

/* Dell PowerEdge R910: QLogic QDR InfiniBand (qib0) with ib0, not Mellanox. */
static void test_qib_qdr(void **state)
{
	struct unpacked *u = unpack("40intel64-2g2n4c+pcilocality.tar.bz2");
	hwloc_topology_t topo;
	hwloc_obj_t o;

	(void)state;
	if (!u)
		skip();
	/* As the tarball's .test file says: the tree has no PCI locality files. */
	setenv("HWLOC_PCI_LOCALITY", "# near 1st package;0000:00-09 0x00000055,0x55555555;"
				     "# near 2nd package;0000:40-46 0x000000aa,0xaaaaaaaa", 1);
	topo = load(u->root);
	unsetenv("HWLOC_PCI_LOCALITY");

	o = device(topo, "qib0");
	info_is(o, "Port1StateName", "4: ACTIVE");
	info_is(o, "Port1PhysState", "5: LinkUp");
	info_is(o, "Port1LinkLayer", "InfiniBand");
	info_is(o, "Port1Rate", "40 Gb/sec (4X QDR)");
	info_is(o, "Port1LID", "0x12a");
	info_is(o, "Port1GID0", "fe80:0000:0000:0000:0011:7500:0077:cfc8");
	info_is(o, "Port1GID1", NULL);
	info_is(o, "Port1Netdev", "ib0");
	assert_string_equal(o->parent->type == HWLOC_OBJ_PCI_DEVICE ? "pci" : "other", "pci");

	o = device(topo, "ib0");
	info_is(o, "NetKind", "infiniband");
	info_is(o, "NetFlags", "UP,BROADCAST,RUNNING,MULTICAST");
	info_is(o, "NetMTU", "2044");
	for (const char *const *n = (const char *const[]){ "eth1", "eth2", "eth3", NULL }; *n; n++) {
		o = device(topo, *n);
		info_is(o, "NetKind", "ethernet");
		info_is(o, "NetOperState", "down");
	}
	info_is(device(topo, "eth0"), "NetSpeed", "1000");
	hwloc_topology_destroy(topo);
	unpacked_free(u);
}

/* Socket 0 of the fixture machine as fake-sysfs.sh writes it: GPU0, mlx5_0 with
 * ib0, eno1, at the fixture's bus ids and with its GUIDs, LID and MACs, plus what
 * only sysfs tells (link layer, rate, GID type, interface state and MTU). */
static const char fixture_socket0[] =
	"fake_machine \"$R\" 4; fake_module \"$R\" nvidia_peermem;"
	"fake_pci \"$R\" 0000:03:00.0 0x10de 0x2330 0x030200;"
	"fake_pci \"$R\" 0000:04:00.0 0x15b3 0x101b 0x020700;"
	"fake_ib \"$R\" mlx5_0 0000:04:00.0 0c42:a103:00a1:b2c3;"
	"fake_ib_port \"$R\" mlx5_0 1 \"4: ACTIVE\" \"5: LinkUp\" \"200 Gb/sec (4X HDR)\" InfiniBand 0x11;"
	"fake_gid_table \"$R\" mlx5_0 1 4;"
	"fake_gid \"$R\" mlx5_0 1 0 fe80:0000:0000:0000:0c42:a103:00a1:b2c3 \"IB/RoCE v1\";"
	"fake_net \"$R\" ib0 0000:04:00.0 32 up 0x1003 4092 200000 0"
	" 00:00:10:87:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:a1:b2:c3;"
	"fake_pci \"$R\" 0000:0a:00.0 0x8086 0x1521 0x020000;"
	"fake_net \"$R\" eno1 0000:0a:00.0 1 up 0x1003 1500 1000 0 3c:ec:ef:10:20:30";

static struct unpacked *fake_tree(const char *script)
{
	const char *fixtures = getenv("LL_FIXTURES");
	struct unpacked *u;
	char *cmd;

	if (!fixtures)
		fail_msg("%s", "LL_FIXTURES is not set (tests/CMakeLists.txt sets it to tests/fixtures)");
	u = ll_calloc(1, sizeof(*u));
	snprintf(u->dir, sizeof(u->dir), "%s/ll-sysfs-fx-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	assert_non_null(mkdtemp(u->dir));
	u->root = ll_strdup(u->dir);
	cmd = ll_asprintf("R='%s' bash -euc '. \"%s/sysfs/fake-sysfs.sh\"; %s'", u->dir, fixtures, script);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	return u;
}

static void test_fixture_fake_sysfs(void **state)
{
	struct unpacked *u = fake_tree(fixture_socket0);
	_cleanup_free_ char *xml = ll_asprintf("%s/hwloc/two-socket-4gpu-2hca.xml", getenv("LL_FIXTURES"));
	struct ll_probe_options xopts = { .topology_file = xml, .skip_nvml = true };
	struct ll_error err = { 0 };
	struct ll_facts *f = NULL, *fx = NULL;
	const struct ll_rdma_device *d, *dx;
	const struct ll_netif *n, *nx;
	hwloc_topology_t topo;
	hwloc_obj_t o;

	(void)state;
	topo = load(u->root);

	o = device(topo, "mlx5_0");
	assert_int_equal(o->attr->osdev.type, HWLOC_OBJ_OSDEV_OPENFABRICS);
	info_is(o, "NodeGUID", "0c42:a103:00a1:b2c3");
	info_is(o, "Port1StateName", "4: ACTIVE");
	info_is(o, "Port1State", "4");
	info_is(o, "Port1PhysState", "5: LinkUp");
	info_is(o, "Port1LinkLayer", "InfiniBand");
	info_is(o, "Port1Rate", "200 Gb/sec (4X HDR)");
	info_is(o, "Port1LID", "0x11");
	info_is(o, "Port1GID0", "fe80:0000:0000:0000:0c42:a103:00a1:b2c3");
	info_is(o, "Port1GID0Type", "IB/RoCE v1");
	/* Slots 1..3 hold the all-zero GID: unused. */
	info_is(o, "Port1GID1", NULL);
	info_is(o, "Port1Netdev", "ib0");
	info_is(o, "Port2StateName", NULL);

	o = device(topo, "ib0");
	info_is(o, "NetKind", "infiniband");
	info_is(o, "NetVirtual", "0");
	info_is(o, "NetOperState", "up");
	info_is(o, "NetFlags", "UP,BROADCAST,RUNNING,MULTICAST");
	info_is(o, "NetMTU", "4092");
	info_is(o, "NetSpeed", "200000");
	info_is(o, "NetAddrsKnown", NULL);

	o = device(topo, "eno1");
	info_is(o, "NetKind", "ethernet");
	info_is(o, "NetVirtual", "0");
	info_is(o, "NetOperState", "up");
	info_is(o, "NetMTU", "1500");
	info_is(o, "NetSpeed", "1000");

	o = hwloc_get_root_obj(topo);
	info_is(o, "DMIProductName", "Fake Node 9000");
	info_is(o, "GPUDirectRDMAModule", "nvidia_peermem");

	/* The facts of this tree agree with the fixture export's, and add what only
	 * sysfs tells: the export's kinds and link layer are inferred. */
	assert_int_equal(ll_probe_facts(topo, "test", &f, &err), 0);
	if (ll_probe(&xopts, NULL, &fx, &err) < 0)
		fail_msg("%s: %s", xml, err.message);
	assert_int_equal(f->n_gpus, 1);
	assert_string_equal(f->gpus[0].busid, fx->gpus[0].busid);
	assert_int_equal(f->gpus[0].device_id, 0x2330);
	assert_int_equal(f->n_rdma, 1);
	d = ll_facts_rdma(f, "mlx5_0");
	dx = ll_facts_rdma(fx, "mlx5_0");
	assert_non_null(d);
	assert_non_null(dx);
	assert_string_equal(d->busid, "0000:04:00.0");
	assert_string_equal(d->busid, dx->busid);
	assert_string_equal(d->node_guid, dx->node_guid);
	assert_int_equal(d->ports[0].state, LL_PORT_ACTIVE);
	assert_int_equal(d->ports[0].state, dx->ports[0].state);
	assert_int_equal(d->ports[0].lid, 0x11);
	assert_int_equal(d->ports[0].lid, dx->ports[0].lid);
	assert_int_equal(d->ports[0].link_layer, LL_LINK_LAYER_INFINIBAND);
	assert_int_equal(d->ports[0].link_layer, dx->ports[0].link_layer);
	assert_string_equal(d->ports[0].gids[0].gid, dx->ports[0].gids[0].gid);
	assert_int_equal(d->ports[0].gids[0].type, LL_GID_TYPE_IB_ROCE_V1);
	assert_int_equal(dx->ports[0].gids[0].type, LL_GID_TYPE_UNKNOWN);
	assert_true(d->ports[0].rate_gbps == 200.0);
	assert_null(dx->ports[0].rate);
	assert_string_equal(d->ports[0].netdev, "ib0");
	assert_null(dx->ports[0].netdev);
	assert_int_equal(d->n_netdevs, 1);
	assert_string_equal(d->netdevs[0], dx->netdevs[0]);

	for (const char *const *name = (const char *const[]){ "eno1", "ib0", NULL }; *name; name++) {
		n = ll_facts_netif(f, *name);
		nx = ll_facts_netif(fx, *name);
		assert_non_null(n);
		assert_non_null(nx);
		assert_int_equal(n->kind, nx->kind);
		assert_false(n->kind_inferred);
		assert_true(nx->kind_inferred);
		assert_string_equal(n->mac, nx->mac);
		assert_string_equal(n->busid, nx->busid);
		assert_int_equal(n->up, LL_YES);
		assert_int_equal(nx->up, LL_UNKNOWN);
	}
	assert_int_equal(ll_facts_netif(f, "eno1")->kind, LL_NETIF_ETHERNET);
	assert_int_equal(ll_facts_netif(f, "ib0")->kind, LL_NETIF_INFINIBAND);
	assert_string_equal(ll_facts_netif(f, "ib0")->rdma_device, "mlx5_0");
	assert_int_equal(ll_facts_netif(f, "ib0")->mtu, 4092);
	assert_int_equal(f->gdr_ready, LL_YES);
	assert_int_equal(fx->gdr_ready, LL_UNKNOWN);

	ll_facts_free(fx);
	ll_facts_free(f);
	hwloc_topology_destroy(topo);
	unpacked_free(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixture_fake_sysfs),
		cmocka_unit_test(test_mlx4_fdr),
		cmocka_unit_test(test_qib_qdr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
