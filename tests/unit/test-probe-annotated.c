/* The snapshot format end to end: llmlaunch's annotations (docs/snapshot-format.md)
 * added to a real topology come out as facts, survive ll_probe_save and a reload
 * unchanged, and stand-in objects act as the devices they stand for. */
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

static const char *realdata;

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
	hwloc_topology_t topo = annotated();
	struct ll_facts *f = facts(topo);

	(void)state;
	check(f);
	ll_facts_free(f);
	hwloc_topology_destroy(topo);
}

static void test_save_reload(void **state)
{
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_annotations),
		cmocka_unit_test(test_save_reload),
	};
	struct stat st;

	realdata = getenv("LL_REALDATA");
	if (!realdata || stat(realdata, &st) < 0) {
		fprintf(stderr, "skipped: real data not found (LL_REALDATA=%s)\n", realdata ? realdata : "");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
