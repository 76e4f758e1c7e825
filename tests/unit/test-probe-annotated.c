/* The snapshot format end to end: llmlaunch's annotations (docs/snapshot-format.md)
 * added to a topology come out as facts, survive ll_probe_save and a reload
 * unchanged, and stand-in objects act as the devices they stand for. The cases on
 * the project's own fixture ($LL_FIXTURES/hwloc/two-socket-4gpu-2hca.xml) always
 * run; those on a real topology (LL_REALDATA, JURECA-DC) skip one by one when the
 * real data is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "llmlaunch/probe.h"
#include "../../probe/annotations.h"

#include "realdata.h"

static hwloc_obj_t osdev(hwloc_topology_t topo, const char *name)
{
	for (hwloc_obj_t o = hwloc_get_next_osdev(topo, NULL); o; o = hwloc_get_next_osdev(topo, o))
		if (o->name && strcmp(o->name, name) == 0)
			return o;
	fail_msg("no OS device %s", name);
	return NULL;
}

static void standin(hwloc_topology_t topo, const char *name, const char *type, const char *const *infos)
{
	hwloc_obj_t m = hwloc_topology_insert_misc_object(topo, hwloc_get_root_obj(topo), name);

	assert_non_null(m);
	hwloc_obj_add_info(m, LL_INFO_STANDIN, type);
	for (size_t i = 0; infos[i]; i += 2)
		hwloc_obj_add_info(m, infos[i], infos[i + 1]);
}

/* JURECA-DC plus what the sysfs and netif readers would have written. */
static hwloc_topology_t annotated(void)
{
	_cleanup_free_ char *path = ll_asprintf("%s/hwloc_xml/psmgmt/topo.jrc0323.xml", realdata);
	struct ll_probe_options opts = { .topology_file = path };
	struct ll_error err = { 0 };
	hwloc_topology_t topo = NULL;
	hwloc_obj_t o;

	if (ll_probe_load(&opts, &topo, &err) < 0)
		fail_msg("%s", err.message);
	hwloc_obj_add_info(hwloc_get_root_obj(topo), LL_INFO_GDR_MODULE, "nvidia_peermem");
	hwloc_obj_add_info(hwloc_get_root_obj(topo), LL_INFO_SNAPSHOT, "1");

	o = osdev(topo, "mlx5_0");
	hwloc_obj_add_info(o, "Port1LinkLayer", "Ethernet");
	hwloc_obj_add_info(o, "Port1Rate", "100 Gb/sec (4X EDR)");
	hwloc_obj_add_info(o, "Port1PhysState", "5: LinkUp");
	hwloc_obj_add_info(o, "Port1GID0Type", "IB/RoCE v1");
	hwloc_obj_add_info(o, "Port1GID1", "0000:0000:0000:0000:0000:ffff:0a01:0203");
	hwloc_obj_add_info(o, "Port1GID1Type", "RoCE v2");
	hwloc_obj_add_info(o, "Port1Netdev", "ib0");
	hwloc_obj_add_info(o, "Port2State", "1");
	hwloc_obj_add_info(o, "Port2LinkLayer", "Ethernet");
	hwloc_obj_add_info(o, "Port2PhysState", "3: Disabled");

	o = osdev(topo, "ib0");
	hwloc_obj_add_info(o, LL_INFO_NET_KIND, "infiniband");
	hwloc_obj_add_info(o, LL_INFO_NET_VIRTUAL, "0");
	hwloc_obj_add_info(o, LL_INFO_NET_OPERSTATE, "up");
	hwloc_obj_add_info(o, LL_INFO_NET_FLAGS, "UP,BROADCAST,RUNNING,MULTICAST");
	hwloc_obj_add_info(o, LL_INFO_NET_MTU, "2044");
	hwloc_obj_add_info(o, LL_INFO_NET_SPEED, "100000");
	hwloc_obj_add_info(o, LL_INFO_NET_ADDRS_KNOWN, "1");
	hwloc_obj_add_info(o, LL_INFO_NET_ADDR, "10.1.2.3/16");
	hwloc_obj_add_info(o, LL_INFO_NET_ADDR, "fe80::1/64");

	o = osdev(topo, "enp225s0f0");
	hwloc_obj_add_info(o, LL_INFO_NET_KIND, "ethernet");
	hwloc_obj_add_info(o, LL_INFO_NET_FLAGS, "BROADCAST,MULTICAST");
	hwloc_obj_add_info(o, LL_INFO_NET_ADDRS_KNOWN, "1");

	standin(topo, "mlx5_10", "OpenFabrics", (const char *const[]){ "Port1State", "4", NULL });
	standin(topo, "rxe0", "OpenFabrics",
		(const char *const[]){ "Port1State", "4", "Port1LinkLayer", "Ethernet", "Port1Netdev", "veth9", NULL });
	standin(topo, "docker0", "Network",
		(const char *const[]){ LL_INFO_NET_KIND, "docker", LL_INFO_NET_VIRTUAL, "1", NULL });
	standin(topo, "veth9", "Network", (const char *const[]){ LL_INFO_NET_KIND, "veth", NULL });
	return topo;
}

static struct ll_facts *facts(hwloc_topology_t topo)
{
	struct ll_facts *f = NULL;
	struct ll_error err = { 0 };

	assert_int_equal(ll_probe_facts(topo, "test", &f, &err), 0);
	return f;
}

static void check(const struct ll_facts *f)
{
	const struct ll_rdma_device *d = ll_facts_rdma(f, "mlx5_0");
	const struct ll_netif *n;

	assert_int_equal(f->gdr_ready, LL_YES);
	assert_string_equal(f->gdr_module, "nvidia_peermem");

	/* Natural order: mlx5_10 after mlx5_3. */
	assert_int_equal(f->n_rdma, 6);
	assert_string_equal(f->rdma[3].name, "mlx5_3");
	assert_string_equal(f->rdma[4].name, "mlx5_10");
	assert_string_equal(f->rdma[5].name, "rxe0");

	assert_non_null(d);
	assert_int_equal(d->n_ports, 2);
	assert_int_equal(d->ports[0].number, 1);
	assert_int_equal(d->ports[0].state, LL_PORT_ACTIVE);
	/* The annotation wins over the LID inference. */
	assert_int_equal(d->ports[0].link_layer, LL_LINK_LAYER_ETHERNET);
	assert_string_equal(d->ports[0].rate, "100 Gb/sec (4X EDR)");
	assert_true(d->ports[0].rate_gbps == 100.0);
	assert_string_equal(d->ports[0].phys_state, "5: LinkUp");
	assert_string_equal(d->ports[0].netdev, "ib0");
	assert_int_equal(d->ports[0].n_gids, 2);
	assert_int_equal(d->ports[0].gids[0].index, 0);
	assert_int_equal(d->ports[0].gids[0].type, LL_GID_TYPE_IB_ROCE_V1);
	assert_true(d->ports[0].gids[0].link_local);
	assert_false(d->ports[0].gids[0].ipv4_mapped);
	assert_int_equal(d->ports[0].gids[1].index, 1);
	assert_int_equal(d->ports[0].gids[1].type, LL_GID_TYPE_ROCE_V2);
	assert_true(d->ports[0].gids[1].ipv4_mapped);
	assert_false(d->ports[0].gids[1].link_local);
	assert_int_equal(d->ports[1].number, 2);
	assert_int_equal(d->ports[1].state, LL_PORT_DOWN);
	assert_int_equal(d->ports[1].link_layer, LL_LINK_LAYER_ETHERNET);
	assert_int_equal(d->ports[1].lid, -1);
	assert_null(d->ports[1].rate);
	assert_true(d->ports[1].rate_gbps < 0);
	assert_int_equal(d->ports[1].n_gids, 0);

	/* A stand-in: no PCI, no path class, netdevs from its ports. */
	d = ll_facts_rdma(f, "rxe0");
	assert_null(d->busid);
	assert_int_equal(d->numa_node, -1);
	assert_int_equal(d->n_netdevs, 1);
	assert_string_equal(d->netdevs[0], "veth9");
	assert_int_equal(ll_facts_gpu_nic(f, 0, 5), LL_PATH_UNKNOWN);
	/* The nearest device still is the PIX one. */
	assert_int_equal(ll_facts_nearest_rdma(f, 0), 0);

	n = ll_facts_netif(f, "ib0");
	assert_int_equal(n->kind, LL_NETIF_INFINIBAND);
	assert_false(n->virtual_);
	assert_string_equal(n->operstate, "up");
	assert_int_equal(n->up, LL_YES);
	assert_int_equal(n->running, LL_YES);
	assert_int_equal(n->mtu, 2044);
	assert_int_equal(n->speed_mbps, 100000);
	assert_true(n->addrs_known);
	assert_int_equal(n->n_addrs, 2);
	assert_int_equal(n->addrs[0].family, AF_INET);
	assert_string_equal(n->addrs[0].addr, "10.1.2.3");
	assert_int_equal(n->addrs[0].prefixlen, 16);
	assert_int_equal(n->addrs[1].family, AF_INET6);
	assert_string_equal(n->addrs[1].addr, "fe80::1");
	assert_int_equal(n->addrs[1].prefixlen, 64);
	assert_string_equal(n->rdma_device, "mlx5_0");

	n = ll_facts_netif(f, "enp225s0f0");
	assert_int_equal(n->kind, LL_NETIF_ETHERNET);
	assert_int_equal(n->up, LL_NO);
	assert_int_equal(n->running, LL_NO);
	assert_true(n->addrs_known);
	assert_int_equal(n->n_addrs, 0);
	assert_int_equal(n->mtu, -1);

	n = ll_facts_netif(f, "docker0");
	assert_non_null(n);
	assert_int_equal(n->kind, LL_NETIF_DOCKER);
	assert_true(n->virtual_);
	assert_null(n->busid);
	assert_int_equal(n->up, LL_UNKNOWN);
	n = ll_facts_netif(f, "veth9");
	assert_true(n->virtual_); /* derived from the kind */
	assert_string_equal(n->rdma_device, "rxe0");
	assert_int_equal(f->n_netifs, 8);
}

static void test_annotations(void **state)
{
	if (realdata_absent(__func__))
		skip();
	hwloc_topology_t topo = annotated();
	struct ll_facts *f = facts(topo);

	(void)state;
	check(f);
	ll_facts_free(f);
	hwloc_topology_destroy(topo);
}

static void test_save_reload(void **state)
{
	if (realdata_absent(__func__))
		skip();
	char path[] = "/tmp/ll-test-snapshot-XXXXXX";
	struct ll_error err = { 0 };
	struct ll_probe_options opts = { .topology_file = path };
	hwloc_topology_t topo = annotated(), again = NULL;
	struct ll_facts *f = NULL;
	struct stat st;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(ll_probe_save(topo, path, &err), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	hwloc_topology_destroy(topo);

	assert_int_equal(ll_probe(&opts, &again, &f, &err), 0);
	check(f);
	assert_non_null(strstr(f->source, "snapshot:/tmp/ll-test-snapshot-"));
	ll_facts_free(f);
	hwloc_topology_destroy(again);
	unlink(path);

	/* A failed save names the file and leaves nothing behind. */
	topo = annotated();
	assert_int_equal(ll_probe_save(topo, "/nonexistent-dir/x.xml", &err), -ENOENT);
	assert_string_equal(err.message, "cannot save '/nonexistent-dir/x.xml': No such file or directory");
	ll_error_clear(&err);
	hwloc_topology_destroy(topo);
}

/* The fixture (a plain export: two ConnectX-6, ib0, ib1, eno1) plus what the sysfs
 * and netif readers would have written for mlx5_0, ib0 and eno1; mlx5_1 and ib1
 * are left as the export has them. */
static hwloc_topology_t annotated_fixture(void)
{
	const char *fixtures = getenv("LL_FIXTURES");
	_cleanup_free_ char *path = NULL;
	struct ll_probe_options opts = { 0 };
	struct ll_error err = { 0 };
	hwloc_topology_t topo = NULL;
	hwloc_obj_t o;

	if (!fixtures)
		fail_msg("%s", "LL_FIXTURES is not set (tests/CMakeLists.txt sets it to tests/fixtures)");
	path = ll_asprintf("%s/hwloc/two-socket-4gpu-2hca.xml", fixtures);
	opts.topology_file = path;
	if (ll_probe_load(&opts, &topo, &err) < 0)
		fail_msg("%s", err.message);
	hwloc_obj_add_info(hwloc_get_root_obj(topo), LL_INFO_GDR_MODULE, "nv_peer_mem");
	hwloc_obj_add_info(hwloc_get_root_obj(topo), LL_INFO_SNAPSHOT, "1");

	o = osdev(topo, "mlx5_0");
	hwloc_obj_add_info(o, "Port1LinkLayer", "InfiniBand");
	hwloc_obj_add_info(o, "Port1Rate", "200 Gb/sec (4X HDR)");
	hwloc_obj_add_info(o, "Port1PhysState", "5: LinkUp");
	hwloc_obj_add_info(o, "Port1GID0Type", "IB/RoCE v1");
	hwloc_obj_add_info(o, "Port1Netdev", "ib0");

	o = osdev(topo, "ib0");
	hwloc_obj_add_info(o, LL_INFO_NET_KIND, "infiniband");
	hwloc_obj_add_info(o, LL_INFO_NET_VIRTUAL, "0");
	hwloc_obj_add_info(o, LL_INFO_NET_OPERSTATE, "up");
	hwloc_obj_add_info(o, LL_INFO_NET_FLAGS, "UP,BROADCAST,RUNNING,MULTICAST");
	hwloc_obj_add_info(o, LL_INFO_NET_MTU, "4092");
	hwloc_obj_add_info(o, LL_INFO_NET_SPEED, "200000");
	hwloc_obj_add_info(o, LL_INFO_NET_ADDRS_KNOWN, "1");
	hwloc_obj_add_info(o, LL_INFO_NET_ADDR, "10.20.0.5/16");

	o = osdev(topo, "eno1");
	hwloc_obj_add_info(o, LL_INFO_NET_KIND, "ethernet");
	hwloc_obj_add_info(o, LL_INFO_NET_OPERSTATE, "up");
	hwloc_obj_add_info(o, LL_INFO_NET_FLAGS, "UP,BROADCAST,RUNNING,MULTICAST");
	hwloc_obj_add_info(o, LL_INFO_NET_MTU, "1500");
	hwloc_obj_add_info(o, LL_INFO_NET_SPEED, "1000");
	hwloc_obj_add_info(o, LL_INFO_NET_ADDRS_KNOWN, "1");
	hwloc_obj_add_info(o, LL_INFO_NET_ADDR, "198.51.100.5/24");
	hwloc_obj_add_info(o, LL_INFO_NET_ADDR, "fe80::3eec:efff:fe10:2030/64");

	standin(topo, "mlx5_10", "OpenFabrics",
		(const char *const[]){ "Port1State", "1", "Port1LinkLayer", "InfiniBand", NULL });
	standin(topo, "siw0", "OpenFabrics",
		(const char *const[]){ "Port1State", "4", "Port1LinkLayer", "Ethernet", "Port1Netdev", "veth0", NULL });
	standin(topo, "docker0", "Network",
		(const char *const[]){ LL_INFO_NET_KIND, "docker", LL_INFO_NET_VIRTUAL, "1", NULL });
	standin(topo, "veth0", "Network", (const char *const[]){ LL_INFO_NET_KIND, "veth", NULL });
	return topo;
}

static void check_fixture(const struct ll_facts *f)
{
	const struct ll_rdma_device *d;
	const struct ll_netif *n;

	/* The export's own facts are untouched. */
	assert_string_equal(f->hostname, "fx-gpu-ib");
	assert_int_equal(f->n_numa_nodes, 2);
	assert_int_equal(f->n_gpus, 4);
	assert_string_equal(f->gpus[2].busid, "0000:83:00.0");
	assert_int_equal(f->gdr_ready, LL_YES);
	assert_string_equal(f->gdr_module, "nv_peer_mem");

	/* Natural order: mlx5_10 after mlx5_1, the stand-ins after the PCI devices. */
	assert_int_equal(f->n_rdma, 4);
	assert_string_equal(f->rdma[0].name, "mlx5_0");
	assert_string_equal(f->rdma[1].name, "mlx5_1");
	assert_string_equal(f->rdma[2].name, "mlx5_10");
	assert_string_equal(f->rdma[3].name, "siw0");

	d = ll_facts_rdma(f, "mlx5_0");
	assert_non_null(d);
	assert_string_equal(d->busid, "0000:04:00.0");
	assert_int_equal(d->numa_node, 0);
	assert_int_equal(d->n_ports, 1);
	assert_int_equal(d->ports[0].state, LL_PORT_ACTIVE);
	assert_int_equal(d->ports[0].lid, 0x11);
	assert_int_equal(d->ports[0].link_layer, LL_LINK_LAYER_INFINIBAND);
	assert_string_equal(d->ports[0].rate, "200 Gb/sec (4X HDR)");
	assert_true(d->ports[0].rate_gbps == 200.0);
	assert_string_equal(d->ports[0].phys_state, "5: LinkUp");
	assert_string_equal(d->ports[0].netdev, "ib0");
	assert_int_equal(d->ports[0].n_gids, 1);
	assert_int_equal(d->ports[0].gids[0].type, LL_GID_TYPE_IB_ROCE_V1);
	assert_string_equal(d->ports[0].gids[0].gid, "fe80:0000:0000:0000:0c42:a103:00a1:b2c3");

	/* Not annotated: what the plain export tells, nothing more. */
	d = ll_facts_rdma(f, "mlx5_1");
	assert_non_null(d);
	assert_int_equal(d->ports[0].lid, 0x12);
	assert_int_equal(d->ports[0].link_layer, LL_LINK_LAYER_INFINIBAND);
	assert_null(d->ports[0].rate);
	assert_true(d->ports[0].rate_gbps < 0);
	assert_null(d->ports[0].phys_state);
	assert_null(d->ports[0].netdev);
	assert_int_equal(d->ports[0].gids[0].type, LL_GID_TYPE_UNKNOWN);

	/* Stand-ins: no PCI, no path class, netdevs from their ports. */
	d = ll_facts_rdma(f, "mlx5_10");
	assert_null(d->busid);
	assert_int_equal(d->numa_node, -1);
	assert_int_equal(d->n_ports, 1);
	assert_int_equal(d->ports[0].state, LL_PORT_DOWN);
	assert_int_equal(d->n_netdevs, 0);
	d = ll_facts_rdma(f, "siw0");
	assert_null(d->busid);
	assert_int_equal(d->ports[0].link_layer, LL_LINK_LAYER_ETHERNET);
	assert_int_equal(d->n_netdevs, 1);
	assert_string_equal(d->netdevs[0], "veth0");
	assert_int_equal(ll_facts_gpu_nic(f, 0, 0), LL_PATH_PIX);
	assert_int_equal(ll_facts_gpu_nic(f, 1, 0), LL_PATH_PHB);
	assert_int_equal(ll_facts_gpu_nic(f, 2, 1), LL_PATH_PIX);
	assert_int_equal(ll_facts_gpu_nic(f, 0, 1), LL_PATH_SYS);
	assert_int_equal(ll_facts_gpu_nic(f, 0, 2), LL_PATH_UNKNOWN);
	assert_int_equal(ll_facts_gpu_nic(f, 3, 3), LL_PATH_UNKNOWN);
	/* The nearest devices still are the PCI ones. */
	assert_int_equal(ll_facts_nearest_rdma(f, 0), 0);
	assert_int_equal(ll_facts_nearest_rdma(f, 1), 0);
	assert_int_equal(ll_facts_nearest_rdma(f, 2), 1);
	assert_int_equal(ll_facts_nearest_rdma(f, 3), 1);

	assert_int_equal(f->n_netifs, 5);
	assert_string_equal(f->netifs[0].name, "docker0");
	assert_string_equal(f->netifs[1].name, "eno1");
	assert_string_equal(f->netifs[4].name, "veth0");

	/* The annotation tells the kind: nothing inferred. */
	n = ll_facts_netif(f, "eno1");
	assert_int_equal(n->kind, LL_NETIF_ETHERNET);
	assert_false(n->kind_inferred);
	assert_false(n->virtual_);
	assert_string_equal(n->operstate, "up");
	assert_int_equal(n->up, LL_YES);
	assert_int_equal(n->running, LL_YES);
	assert_int_equal(n->mtu, 1500);
	assert_int_equal(n->speed_mbps, 1000);
	assert_string_equal(n->mac, "3c:ec:ef:10:20:30");
	assert_string_equal(n->busid, "0000:0a:00.0");
	assert_int_equal(n->numa_node, 0);
	assert_true(n->addrs_known);
	assert_int_equal(n->n_addrs, 2);
	assert_int_equal(n->addrs[0].family, AF_INET);
	assert_string_equal(n->addrs[0].addr, "198.51.100.5");
	assert_int_equal(n->addrs[0].prefixlen, 24);
	assert_int_equal(n->addrs[1].family, AF_INET6);
	assert_string_equal(n->addrs[1].addr, "fe80::3eec:efff:fe10:2030");
	assert_int_equal(n->addrs[1].prefixlen, 64);
	assert_null(n->rdma_device);

	n = ll_facts_netif(f, "ib0");
	assert_int_equal(n->kind, LL_NETIF_INFINIBAND);
	assert_false(n->kind_inferred);
	assert_int_equal(n->mtu, 4092);
	assert_int_equal(n->speed_mbps, 200000);
	assert_int_equal(n->n_addrs, 1);
	assert_string_equal(n->addrs[0].addr, "10.20.0.5");
	assert_int_equal(n->addrs[0].prefixlen, 16);
	assert_string_equal(n->rdma_device, "mlx5_0");

	/* Not annotated: the kind comes from the 20-byte MAC, the rest is unknown. */
	n = ll_facts_netif(f, "ib1");
	assert_int_equal(n->kind, LL_NETIF_INFINIBAND);
	assert_true(n->kind_inferred);
	assert_null(n->operstate);
	assert_int_equal(n->up, LL_UNKNOWN);
	assert_int_equal(n->mtu, -1);
	assert_false(n->addrs_known);
	assert_int_equal(n->n_addrs, 0);
	assert_string_equal(n->rdma_device, "mlx5_1");
	assert_int_equal(n->numa_node, 1);

	n = ll_facts_netif(f, "docker0");
	assert_int_equal(n->kind, LL_NETIF_DOCKER);
	assert_false(n->kind_inferred);
	assert_true(n->virtual_);
	assert_null(n->busid);
	assert_int_equal(n->numa_node, -1);
	n = ll_facts_netif(f, "veth0");
	assert_int_equal(n->kind, LL_NETIF_VETH);
	assert_true(n->virtual_); /* derived from the kind */
	assert_string_equal(n->rdma_device, "siw0");
}

static void test_fixture_annotations(void **state)
{
	hwloc_topology_t topo = annotated_fixture();
	struct ll_facts *f = facts(topo);

	(void)state;
	check_fixture(f);
	ll_facts_free(f);
	hwloc_topology_destroy(topo);
}

static void test_fixture_save_reload(void **state)
{
	char path[] = "/tmp/ll-test-snapshot-XXXXXX";
	struct ll_error err = { 0 };
	struct ll_probe_options opts = { .topology_file = path };
	hwloc_topology_t topo = annotated_fixture(), again = NULL;
	struct ll_facts *f = NULL;
	struct stat st;
	unsigned n_standins = 0;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(ll_probe_save(topo, path, &err), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	hwloc_topology_destroy(topo);

	assert_int_equal(ll_probe(&opts, &again, &f, &err), 0);
	check_fixture(f);
	assert_non_null(strstr(f->source, "snapshot:/tmp/ll-test-snapshot-"));
	/* The annotations are in the file as infos, the stand-ins as Misc objects. */
	assert_string_equal(hwloc_obj_get_info_by_name(hwloc_get_root_obj(again), LL_INFO_SNAPSHOT), "1");
	assert_string_equal(hwloc_obj_get_info_by_name(osdev(again, "eno1"), LL_INFO_NET_MTU), "1500");
	for (hwloc_obj_t o = hwloc_get_root_obj(again)->misc_first_child; o; o = o->next_sibling)
		n_standins += hwloc_obj_get_info_by_name(o, LL_INFO_STANDIN) != NULL;
	assert_int_equal(n_standins, 4);
	ll_facts_free(f);
	hwloc_topology_destroy(again);
	unlink(path);

	/* A failed save names the file and leaves nothing behind. */
	topo = annotated_fixture();
	assert_int_equal(ll_probe_save(topo, "/nonexistent-dir/fx.xml", &err), -ENOENT);
	assert_string_equal(err.message, "cannot save '/nonexistent-dir/fx.xml': No such file or directory");
	ll_error_clear(&err);
	hwloc_topology_destroy(topo);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixture_annotations),
		cmocka_unit_test(test_fixture_save_reload),
		cmocka_unit_test(test_annotations),
		cmocka_unit_test(test_save_reload),
	};

	realdata = getenv("LL_REALDATA");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
