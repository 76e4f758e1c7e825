/* The pure agreement decision on synthetic clusters of 1 to 10,000 nodes: rank
 * order (launcher order, leaf switches consecutive), subnet matching, master
 * address, homogeneity verdicts, how many full summaries it had to fetch, and NVLink
 * cliques (their order, the domain across nodes, their verdicts, the record field). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "llmlaunch/agree.h"

/* ---- building synthetic nodes ---- */

struct cluster {
	struct ll_agree_node *nodes;
	struct ll_summary **sums;
	size_t n;
	size_t fetches;
};

static void add_port(struct ll_summary *s, const char *dev, enum ll_port_state st, enum ll_link_layer ll,
		     double rate)
{
	struct ll_summary_port *p = ll_array_push(&s->ports, &s->n_ports, sizeof(*p));
	p->device = ll_strdup(dev);
	p->port = 1;
	p->state = st;
	p->link_layer = ll;
	p->rate_gbps = rate;
}

static void add_if(struct ll_summary *s, const char *name, enum ll_summary_if_kind kind, const char *addr,
		   unsigned prefix)
{
	struct ll_summary_if *f = ll_array_push(&s->ifs, &s->n_ifs, sizeof(*f));
	f->name = ll_strdup(name);
	f->kind = kind;
	f->family = strchr(addr, ':') ? AF_INET6 : AF_INET;
	f->addr = ll_strdup(addr);
	f->prefixlen = prefix;
}

/* An 8-GPU node with 8 active InfiniBand HDR ports and an address 10.0.x.y/16 on eno1. */
static struct ll_summary *dgx(size_t i)
{
	struct ll_summary *s = ll_calloc(1, sizeof(*s));
	char addr[32];

	s->host = ll_asprintf("gpu%05zu", i + 1);
	s->n_gpus = 8;
	s->gpu_model = ll_strdup("NVIDIA H100 80GB HBM3");
	s->nproc_per_node = 8;
	for (int k = 0; k < 8; k++) {
		char dev[16];
		snprintf(dev, sizeof(dev), "mlx5_%d", k);
		add_port(s, dev, LL_PORT_ACTIVE, LL_LINK_LAYER_INFINIBAND, 200);
	}
	s->gid_index = -1;
	s->gdr_ready = LL_YES;
	s->net = ll_strdup("IB");
	s->ib_hca = ll_strdup("=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1");
	add_if(s, "lo", LL_SUMMARY_IF_LOOPBACK, "127.0.0.1", 8);
	add_if(s, "docker0", LL_SUMMARY_IF_CONTAINER, "172.17.0.1", 16);
	snprintf(addr, sizeof(addr), "10.0.%zu.%zu", (i + 1) / 250, (i + 1) % 250 + 1);
	add_if(s, "eno1", LL_SUMMARY_IF_PHYSICAL, addr, 16);
	add_if(s, "eno1", LL_SUMMARY_IF_PHYSICAL, "fe80::1", 64);
	return s;
}

static void cluster_seal(struct cluster *c)
{
	for (size_t i = 0; i < c->n; i++) {
		c->nodes[i].hw_digest = ll_summary_hw_digest(c->sums[i]);
		c->nodes[i].net_digest = ll_summary_net_digest(c->sums[i]);
	}
}

static struct cluster *cluster_new(size_t n, bool one_host)
{
	struct cluster *c = ll_calloc(1, sizeof(*c));

	c->n = n;
	c->nodes = ll_calloc(n, sizeof(*c->nodes));
	c->sums = ll_calloc(n, sizeof(*c->sums));
	for (size_t i = 0; i < n; i++) {
		c->sums[i] = dgx(i);
		c->nodes[i].name = ll_asprintf("gpu%05zu", i + 1);
		c->nodes[i].host_key = one_host ? 42 : 1000 + i;
		c->nodes[i].port = 40000 + (int)i;
	}
	cluster_seal(c);
	return c;
}

static void cluster_free(struct cluster *c)
{
	for (size_t i = 0; i < c->n; i++) {
		ll_agree_node_release(&c->nodes[i]);
		ll_summary_free(c->sums[i]);
	}
	free(c->nodes);
	free(c->sums);
	free(c);
}

static int fetch(void *data, size_t i, const struct ll_summary **ret, struct ll_error *err)
{
	struct cluster *c = data;

	(void)err;
	c->fetches++;
	*ret = c->sums[i];
	return 0;
}

static int decide(struct cluster *c, size_t self, bool strict, struct ll_agree_result *res, struct ll_error *err)
{
	struct ll_agree_input in = {
		.nodes = c->nodes, .n_nodes = c->n, .self = self, .strict = strict,
		.fetch = fetch, .fetch_data = c,
	};
	memset(res, 0, sizeof(*res));
	c->fetches = 0;
	return ll_agree_decide(&in, res, err);
}

/* ---- tests ---- */

static void test_single_node(void **state)
{
	struct cluster *c = cluster_new(1, true);
	struct ll_agree_result res;
	struct ll_error err = { 0 };

	(void)state;
	assert_int_equal(decide(c, 0, false, &res, &err), 0);
	assert_int_equal(res.node_rank, 0);
	assert_int_equal(res.n_nodes, 1);
	/* One host: loopback is the sure path. */
	assert_string_equal(res.master_addr, "127.0.0.1");
	assert_string_equal(res.socket_ifname, "lo");
	assert_string_equal(res.subnet, "127.0.0.0/8");
	assert_true(res.loopback_only);
	assert_int_equal(res.master_port, 40000);
	assert_int_equal(res.n_warnings, 0);
	ll_agree_result_release(&res);
	cluster_free(c);
}

static void test_four_nodes_subnet(void **state)
{
	struct cluster *c = cluster_new(4, false);
	struct ll_agree_result res;
	struct ll_error err = { 0 };

	(void)state;
	/* Interface names differ between nodes; the subnet is what counts. */
	free(c->sums[2]->ifs[2].name);
	c->sums[2]->ifs[2].name = ll_strdup("eth0");
	cluster_seal(c);
	for (size_t self = 0; self < 4; self++) {
		assert_int_equal(decide(c, self, false, &res, &err), 0);
		assert_int_equal(res.node_rank, (int)self);
		assert_string_equal(res.master_addr, "10.0.0.2");
		assert_string_equal(res.subnet, "10.0.0.0/16");
		assert_string_equal(res.socket_ifname, self == 2 ? "eth0" : "eno1");
		assert_false(res.loopback_only);
		assert_int_equal(res.master_port, 40000);
		assert_int_equal(res.n_warnings, 0);
		assert_true(res.n_fetched <= 3);
		ll_agree_result_release(&res);
	}
	cluster_free(c);
}

static void test_subnet_preference(void **state)
{
	struct cluster *c = cluster_new(3, false);
	struct ll_agree_result res;
	struct ll_error err = { 0 };

	(void)state;
	/* Every node also has IPoIB on 192.168.0.0/24 and IPv6 on eno1. InfiniBand is
	 * the transport: its IPoIB subnet first, as the planner ranks it. */
	for (size_t i = 0; i < 3; i++) {
		char a[32];
		snprintf(a, sizeof(a), "192.168.0.%zu", i + 10);
		add_if(c->sums[i], "ib0", LL_SUMMARY_IF_IPOIB, a, 24);
		snprintf(a, sizeof(a), "fd00::%zu", i + 10);
		add_if(c->sums[i], "eno1", LL_SUMMARY_IF_PHYSICAL, a, 64);
	}
	cluster_seal(c);
	assert_int_equal(decide(c, 1, false, &res, &err), 0);
	assert_string_equal(res.master_addr, "192.168.0.10");
	assert_string_equal(res.socket_ifname, "ib0");
	ll_agree_result_release(&res);

	/* Sockets as the transport: physical Ethernet IPv4 first. Node 3 lacks
	 * 10.0/16: the IPoIB subnet is chosen. */
	for (size_t i = 0; i < 3; i++) {
		free(c->sums[i]->net);
		c->sums[i]->net = ll_strdup("socket");
	}
	cluster_seal(c);
	assert_int_equal(decide(c, 1, false, &res, &err), 0);
	assert_string_equal(res.master_addr, "10.0.0.2");
	assert_string_equal(res.socket_ifname, "eno1");
	ll_agree_result_release(&res);

	free(c->sums[2]->ifs[2].addr);
	c->sums[2]->ifs[2].addr = ll_strdup("10.9.0.1");
	c->sums[2]->ifs[2].prefixlen = 24;
	cluster_seal(c);
	assert_int_equal(decide(c, 2, false, &res, &err), 0);
	/* IPv6 on the physical NIC beats IPoIB IPv4 (rank: kind first, then family). */
	assert_string_equal(res.master_addr, "fd00::10");
	assert_string_equal(res.subnet, "fd00::/64");
	assert_string_equal(res.socket_ifname, "eno1");
	ll_agree_result_release(&res);

	/* Without the IPv6 addresses, the IPoIB subnet. */
	for (size_t i = 0; i < 3; i++) {
		struct ll_summary_if *f = &c->sums[i]->ifs[--c->sums[i]->n_ifs];
		free(f->name);
		free(f->addr);
	}
	cluster_seal(c);
	assert_int_equal(decide(c, 2, false, &res, &err), 0);
	assert_string_equal(res.master_addr, "192.168.0.10");
	assert_string_equal(res.socket_ifname, "ib0");
	ll_agree_result_release(&res);
	cluster_free(c);
}

static void test_no_common_subnet(void **state)
{
	struct cluster *c = cluster_new(4, false);
	struct ll_agree_result res;
	struct ll_error err = { 0 };

	(void)state;
	free(c->sums[3]->ifs[2].addr);
	c->sums[3]->ifs[2].addr = ll_strdup("10.1.0.4");
	c->sums[3]->ifs[2].prefixlen = 24;
	cluster_seal(c);
	assert_int_equal(decide(c, 1, false, &res, &err), -ENETUNREACH);
	assert_string_equal(err.message, "no subnet is shared by every node: gpu00004 has no address in "
					 "10.0.0.0/16 (gpu00001's eno1 10.0.0.2)");
	ll_error_clear(&err);

	/* Routed fabrics (the PMIx path asks for it): node 0's preferred address is the
	 * master on every node, the same verdict everywhere; each node's interface is left
	 * to its own route (no subnet, no interface here). */
	for (size_t self = 0; self < 4; self++) {
		struct ll_agree_input in = {
			.nodes = c->nodes, .n_nodes = c->n, .self = self, .routed = true, .fetch = fetch, .fetch_data = c,
		};

		memset(&res, 0, sizeof(res));
		assert_int_equal(ll_agree_decide(&in, &res, &err), 0);
		assert_true(res.routed);
		assert_string_equal(res.master_addr, "10.0.0.2");
		assert_null(res.subnet);
		assert_null(res.socket_ifname);
		ll_agree_result_release(&res);
	}

	/* The same nodes on one host: loopback would do, so it is chosen. */
	for (size_t i = 0; i < 4; i++)
		c->nodes[i].host_key = 7;
	assert_int_equal(decide(c, 3, false, &res, &err), 0);
	assert_string_equal(res.master_addr, "127.0.0.1");
	assert_string_equal(res.socket_ifname, "lo");
	ll_agree_result_release(&res);
	cluster_free(c);
}

static void test_topology_order(void **state)
{
	struct cluster *c = cluster_new(7, false);
	static const char *const addrs[] = { "s0.a.n1", "s0.b.n2", "s0.a.n3", "s0.c.n4", "s0.b.n5", "s0.a.n6",
					     "s0.c.n7" };
	static const size_t expect[] = { 0, 2, 5, 1, 4, 3, 6 };
	struct ll_agree_result res;
	struct ll_error err = { 0 };

	(void)state;
	for (size_t i = 0; i < 7; i++)
		c->nodes[i].topology_addr = ll_strdup(addrs[i]);
	assert_int_equal(decide(c, 4, false, &res, &err), 0);
	for (size_t i = 0; i < 7; i++)
		assert_int_equal(res.order[i], expect[i]);
	assert_int_equal(res.node_rank, 4); /* n5 comes after n1 n3 n6 n2 */
	assert_string_equal(res.master_addr, "10.0.0.2");
	ll_agree_result_release(&res);

	/* A different first node under its switch: master moves with rank 0. */
	free(c->nodes[0].topology_addr);
	c->nodes[0].topology_addr = ll_strdup("s0.c.n1");
	assert_int_equal(decide(c, 0, false, &res, &err), 0);
	assert_int_equal(res.order[0], 0);
	assert_int_equal(res.order[1], 3);
	assert_int_equal(res.order[2], 6);
	assert_int_equal(res.order[3], 1);
	assert_int_equal(res.master_port, 40000);
	ll_agree_result_release(&res);

	assert_int_equal(ll_topology_leaf_len("s1.s7.n12"), 5);
	assert_int_equal(ll_topology_leaf_len("n12"), 0);
	cluster_free(c);
}

static void test_fewer_gpus_is_hard(void **state)
{
	struct cluster *c = cluster_new(4, false);
	struct ll_agree_result res;
	struct ll_error err = { 0 };

	(void)state;
	c->sums[2]->n_gpus = 4;
	cluster_seal(c);
	for (size_t self = 0; self < 4; self++) {
		assert_int_equal(decide(c, self, false, &res, &err), -EPROTO);
		/* Every node says the same thing. */
		assert_string_equal(err.message,
				    "nodes differ: gpu00003: 4 GPUs, fewer than the processes per node, "
				    "the other 3 nodes have 8");
		assert_string_equal(err.hint, "fix those nodes or leave them out (srun --exclude=...: gpu00003); "
					      "nothing was started");
		ll_error_clear(&err);
	}
	/* Under mpirun the hint is in mpirun's terms, not srun's. */
	{
		struct ll_agree_input in = {
			.nodes = c->nodes, .n_nodes = c->n, .self = 1, .leave_out = LL_LEAVE_OUT_MPIRUN, .fetch = fetch, .fetch_data = c,
		};

		memset(&res, 0, sizeof(res));
		assert_int_equal(ll_agree_decide(&in, &res, &err), -EPROTO);
		assert_string_equal(err.hint, "fix those nodes or leave them out (drop them from mpirun's --host or "
					      "--hostfile: gpu00003); nothing was started");
		ll_error_clear(&err);
		ll_agree_result_release(&res);
	}
	/* Under a Kubernetes job's contract, in the pods' terms: neither srun nor mpirun
	 * started them. */
	{
		struct ll_agree_input in = {
			.nodes = c->nodes, .n_nodes = c->n, .self = 2, .leave_out = LL_LEAVE_OUT_PODS, .fetch = fetch,
			.fetch_data = c,
		};

		memset(&res, 0, sizeof(res));
		assert_int_equal(ll_agree_decide(&in, &res, &err), -EPROTO);
		assert_string_equal(err.hint, "fix those nodes or leave them out (cordon their Kubernetes nodes and "
					      "delete the job's pods so that they are scheduled elsewhere: gpu00003); "
					      "nothing was started");
		ll_error_clear(&err);
		ll_agree_result_release(&res);
	}
	cluster_free(c);
}

static void test_no_rdma_is_hard(void **state)
{
	struct cluster *c = cluster_new(4, false);
	struct ll_agree_result res;
	struct ll_error err = { 0 };

	(void)state;
	for (size_t k = 0; k < 8; k++)
		c->sums[3]->ports[k].state = k < 2 ? LL_PORT_DOWN : LL_PORT_INIT;
	free(c->sums[3]->net);
	c->sums[3]->net = ll_strdup("Socket");
	cluster_seal(c);
	assert_int_equal(decide(c, 0, false, &res, &err), -EPROTO);
	assert_string_equal(err.message,
			    "nodes differ: gpu00004: no active RDMA port (mlx5_0 port 1 DOWN, mlx5_1 port 1 DOWN, "
			    "mlx5_2 port 1 INIT, mlx5_3 port 1 INIT), the other 3 nodes have 8 (InfiniBand); "
			    "transport Socket, the other 3 nodes IB");
	ll_error_clear(&err);
	cluster_free(c);
}

static void test_one_port_down_is_soft(void **state)
{
	struct cluster *c = cluster_new(8, false);
	struct ll_agree_result res;
	struct ll_error err = { 0 };

	(void)state;
	c->sums[5]->ports[3].state = LL_PORT_DOWN;
	c->sums[6]->ports[3].state = LL_PORT_DOWN;
	cluster_seal(c);
	assert_int_equal(decide(c, 6, false, &res, &err), 0);
	assert_int_equal(res.n_warnings, 1);
	assert_string_equal(res.warnings[0], "gpu00006, gpu00007: 7 active RDMA ports (mlx5_3 port 1 DOWN), the "
					     "other 6 nodes have 8");
	assert_int_equal(res.node_rank, 6);
	ll_agree_result_release(&res);

	assert_int_equal(decide(c, 0, true, &res, &err), -EPROTO);
	assert_string_equal(err.message, "nodes differ: gpu00006, gpu00007: 7 active RDMA ports (mlx5_3 port 1 "
					 "DOWN), the other 6 nodes have 8 (an error under --strict)");
	ll_error_clear(&err);
	cluster_free(c);
}

static void test_other_verdicts(void **state)
{
	struct cluster *c = cluster_new(3, false);
	struct ll_agree_result res;
	struct ll_error err = { 0 };

	(void)state;
	/* Soft: rate, GID index, GDR, model. */
	for (size_t k = 0; k < 8; k++)
		c->sums[1]->ports[k].rate_gbps = 100;
	c->sums[1]->gdr_ready = LL_NO;
	c->sums[2]->gid_index = 3;
	free(c->sums[2]->gpu_model);
	c->sums[2]->gpu_model = ll_strdup("NVIDIA A100-SXM4-80GB");
	cluster_seal(c);
	assert_int_equal(decide(c, 0, false, &res, &err), 0);
	assert_int_equal(res.n_warnings, 2);
	assert_string_equal(res.warnings[0], "gpu00002: RDMA rate 100 Gb/s, the other node 200 Gb/s; "
					     "GPUDirect RDMA not ready, the other node ready");
	assert_string_equal(res.warnings[1], "gpu00003: GPU model 'NVIDIA A100-SXM4-80GB', the other node "
					     "'NVIDIA H100 80GB HBM3'; GID index 3, the other node -1");
	/* One per hardware group (3), the network group, node 0 and self. */
	assert_int_equal(res.n_fetched, 3 + 1 + 2);
	ll_agree_result_release(&res);

	/* Hard: link layer and nproc. */
	for (size_t k = 0; k < 8; k++)
		c->sums[1]->ports[k].link_layer = LL_LINK_LAYER_ETHERNET;
	c->sums[2]->nproc_per_node = 4;
	cluster_seal(c);
	assert_int_equal(decide(c, 2, false, &res, &err), -EPROTO);
	assert_string_equal(err.message, "nodes differ: gpu00002: RDMA link layer Ethernet (RoCE), the other node "
					 "InfiniBand; gpu00003: plans 4 processes per node, the other node 8");
	ll_error_clear(&err);
	cluster_free(c);
}

static void test_roundtrip(void **state)
{
	struct ll_summary *s = dgx(41), *back = NULL, *other = dgx(77);
	struct ll_error err = { 0 };
	struct ll_agree_node n = { .hw_digest = 0x0123456789abcdefULL, .net_digest = 42, .host_key = 7,
				   .port = 29500, .topology_addr = (char *)"s1.s2.n3" }, m = { 0 };
	char *text, *again;

	(void)state;
	text = ll_summary_serialize(s);
	assert_true(strlen(text) < 1024);
	assert_int_equal(ll_summary_parse(text, "gpu00042", &back, &err), 0);
	again = ll_summary_serialize(back);
	assert_string_equal(text, again);
	assert_true(ll_summary_hw_digest(s) == ll_summary_hw_digest(back));
	/* Different addresses in the same subnet: same network digest. */
	assert_true(ll_summary_net_digest(s) == ll_summary_net_digest(other));
	assert_false(ll_summary_hw_digest(s) == ll_summary_hw_digest(other) && s->n_gpus != other->n_gpus);
	other->ports[0].state = LL_PORT_DOWN;
	assert_false(ll_summary_hw_digest(s) == ll_summary_hw_digest(other));
	/* What drives a device is part of what must match: EFA is not a ConnectX. */
	ll_summary_free(back);
	back = NULL;
	s->ports[1].rdma_class = LL_RDMA_CLASS_PLUGIN;
	free(again);
	again = ll_summary_serialize(s);
	assert_non_null(strstr(again, "\"p\"]"));
	assert_int_equal(ll_summary_parse(again, "gpu00042", &back, &err), 0);
	assert_int_equal(back->ports[1].rdma_class, LL_RDMA_CLASS_PLUGIN);
	{
		struct ll_summary *same = dgx(41);

		assert_false(ll_summary_hw_digest(s) == ll_summary_hw_digest(same));
		ll_summary_free(same);
	}
	/* A summary of an older llmlaunch (five port fields) reads the class as unknown. */
	ll_summary_free(back);
	back = NULL;
	assert_int_equal(ll_summary_parse("{\"v\":1,\"gpus\":0,\"nproc\":1,\"ports\":[[\"mlx5_0\",1,4,\"IB\",200.0]],"
					  "\"gid\":-1,\"gdr\":-1,\"if\":[]}", "old", &back, &err), 0);
	assert_int_equal(back->ports[0].rdma_class, LL_RDMA_CLASS_UNKNOWN);
	free(text);
	free(again);
	ll_summary_free(back);
	back = NULL;

	assert_int_equal(ll_summary_parse("{\"v\":2}", "gpu00009", &back, &err), -EINVAL);
	assert_string_equal(err.message, "summary from node 'gpu00009' is not a version 1 summary");
	ll_error_clear(&err);
	assert_int_equal(ll_summary_parse("nope", "gpu00009", &back, &err), -EINVAL);
	ll_error_clear(&err);

	text = ll_agree_node_format(&n);
	assert_string_equal(text, "0123456789abcdef 000000000000002a 0000000000000007 29500 s1.s2.n3");
	assert_int_equal(ll_agree_node_parse(text, "x", &m, &err), 0);
	assert_true(m.hw_digest == n.hw_digest && m.net_digest == 42 && m.host_key == 7 && m.port == 29500);
	assert_string_equal(m.topology_addr, "s1.s2.n3");
	free(text);
	assert_int_equal(ll_agree_node_parse("1 2 3 4 - junk", "gpu1", &m, &err), -EINVAL);
	assert_string_equal(err.message, "record from node 'gpu1' is malformed: '1 2 3 4 - junk'");
	ll_error_clear(&err);
	assert_int_equal(ll_agree_node_parse("1 2 3 4 -", "gpu1", &m, &err), 0);
	assert_null(m.topology_addr);
	ll_agree_node_release(&m);

	text = ll_subnet_of(AF_INET, "10.1.2.3", 20);
	assert_string_equal(text, "10.1.0.0/20");
	free(text);
	text = ll_subnet_of(AF_INET6, "fd00:1:2:3::9", 48);
	assert_string_equal(text, "fd00:1:2::/48");
	free(text);
	assert_null(ll_subnet_of(AF_INET, "10.1.2.3", 33));
	assert_null(ll_subnet_of(AF_INET, "not-an-ip", 8));
	ll_summary_free(s);
	ll_summary_free(other);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void test_ten_thousand(void **state)
{
	struct cluster *c = cluster_new(10000, false);
	struct ll_agree_result res;
	struct ll_error err = { 0 };
	double t0, ms;

	(void)state;
	/* 40 leaf switches of 250 nodes, interleaved in launcher order. */
	for (size_t i = 0; i < c->n; i++)
		c->nodes[i].topology_addr = ll_asprintf("core.leaf%02zu.gpu%05zu", i % 40, i + 1);
	c->sums[7776]->ports[5].state = LL_PORT_DOWN;
	cluster_seal(c);

	t0 = now_ms();
	assert_int_equal(decide(c, 9999, false, &res, &err), 0);
	ms = now_ms() - t0;
	/* The cost in fetched summaries stays flat: node 0, self, one per odd digest. */
	assert_true(res.n_fetched <= 5);
	assert_int_equal(res.n_warnings, 1);
	assert_string_equal(res.warnings[0], "gpu07777: 7 active RDMA ports (mlx5_5 port 1 DOWN), the other 9999 "
					     "nodes have 8");
	/* Switch leaf39 holds launcher indices 39, 79, ..., 9999: the last block of ranks. */
	assert_int_equal(res.node_rank, 9999);
	assert_int_equal(res.order[0], 0);
	assert_int_equal(res.order[1], 40);
	assert_int_equal(res.order[250], 1);
	assert_string_equal(res.master_addr, "10.0.0.2");
	print_message("agree: 10000 nodes decided in %.2f ms, %zu summaries fetched\n", ms, res.n_fetched);
	ll_agree_result_release(&res);

	/* A hard difference at 10,000 nodes: one message, names capped. */
	for (size_t i = 100; i < 120; i++)
		c->sums[i]->n_gpus = 2;
	cluster_seal(c);
	assert_int_equal(decide(c, 0, false, &res, &err), -EPROTO);
	assert_string_equal(err.message,
			    "nodes differ: gpu00101, gpu00102, gpu00103, gpu00104, gpu00105, gpu00106, gpu00107, "
			    "gpu00108 and 12 more: 2 GPUs, fewer than the processes per node, the other 9979 nodes "
			    "have 8");
	ll_error_clear(&err);
	cluster_free(c);
}

/* A /32 on a management interface is one node's alone: it neither splits the nodes
 * into network groups nor can it be chosen; the shared subnet is. */
static void test_host_prefix(void **state)
{
	struct cluster *c = cluster_new(4, false);
	struct ll_agree_result res;
	struct ll_error err = { 0 };

	(void)state;
	for (size_t i = 0; i < 4; i++) {
		char addr[32];
		snprintf(addr, sizeof(addr), "203.0.113.%zu", i + 1);
		add_if(c->sums[i], "mgmt0", LL_SUMMARY_IF_VIRTUAL, addr, 32);
	}
	/* The /32 first among rank 0's addresses, before the shared subnet. */
	struct ll_summary_if t = c->sums[0]->ifs[2];
	c->sums[0]->ifs[2] = c->sums[0]->ifs[4];
	c->sums[0]->ifs[4] = t;
	cluster_seal(c);
	for (size_t i = 1; i < 4; i++)
		assert_true(c->nodes[i].net_digest == c->nodes[0].net_digest);
	assert_int_equal(decide(c, 2, false, &res, &err), 0);
	assert_string_equal(res.master_addr, "10.0.0.2");
	assert_string_equal(res.subnet, "10.0.0.0/16");
	assert_string_equal(res.socket_ifname, "eno1");
	ll_agree_result_release(&res);
	cluster_free(c);
}

/* Refuses the summary of any node that does not publish it, but the deciding node's
 * own: what a node reads after the collective exchange (pmix.c) is exactly what the
 * publishers sent, and its own. */
static size_t deciding_node;

static int fetch_published(void *data, size_t i, const struct ll_summary **ret, struct ll_error *err)
{
	struct cluster *c = data;

	if (i != deciding_node && !ll_agree_publishes_summary(c->nodes, c->n, i))
		return ll_error_set(err, -ENOENT, "gpu%05zu did not publish", i + 1);
	return fetch(data, i, ret, err);
}

static void test_publishers(void **state)
{
	struct cluster *c = cluster_new(12, false);
	struct ll_error err = { 0 };
	size_t publishers = 0;

	(void)state;
	/* Three hardware groups, three network groups, overlapping differently. */
	c->sums[3]->ports[2].state = LL_PORT_DOWN;
	c->sums[7]->ports[2].state = LL_PORT_DOWN;
	c->sums[9]->gid_index = 3;
	add_if(c->sums[5], "ens6", LL_SUMMARY_IF_PHYSICAL, "203.0.113.133", 25);
	add_if(c->sums[7], "ens6", LL_SUMMARY_IF_PHYSICAL, "203.0.113.135", 25);
	add_if(c->sums[11], "ib0", LL_SUMMARY_IF_IPOIB, "198.51.100.12", 24);
	cluster_seal(c);
	for (size_t i = 0; i < c->n; i++)
		publishers += ll_agree_publishes_summary(c->nodes, c->n, i);
	/* node 0 (both groups' first), 3 (hw), 9 (hw), 5 (net), 11 (net); 7 is second in both. */
	assert_int_equal(publishers, 5);
	assert_false(ll_agree_publishes_summary(c->nodes, c->n, 7));
	for (size_t self = 0; self < c->n; self++) {
		struct ll_agree_result res = { 0 };
		struct ll_agree_input in = {
			.nodes = c->nodes, .n_nodes = c->n, .self = self, .fetch = fetch_published, .fetch_data = c,
		};

		deciding_node = self;
		if (ll_agree_decide(&in, &res, &err) < 0)
			fail_msg("node %zu read a summary nobody published: %s", self, err.message);
		ll_agree_result_release(&res);
	}
	cluster_free(c);
}

static bool near(double a, double b)
{
	return a - b < 1e-9 && b - a < 1e-9;
}

/* ---- NVLink cliques (agree-clique.c) ---- */

#define UUID1 "c1000000-0000-0000-0000-000000000001"

static void set_clique(struct cluster *c, size_t i, enum ll_clique_state st, const char *key)
{
	ll_agree_clique_release(&c->nodes[i].clique);
	c->nodes[i].clique.state = st;
	c->nodes[i].clique.gpus = 8;
	c->nodes[i].clique.key = key ? ll_strdup(key) : NULL;
}

/* Four nodes, two cliques of two, interleaved in the launcher's order: each clique's
 * nodes become consecutive, cliques in the order of their first node, and the NVLink
 * domain is a clique's GPUs. */
static void test_clique_order(void **state)
{
	struct cluster *c = cluster_new(4, false);
	struct ll_agree_result res;
	struct ll_error err = { 0 };
	char *text;

	(void)state;
	set_clique(c, 0, LL_CLIQUE_READY, UUID1 "/1");
	set_clique(c, 1, LL_CLIQUE_READY, UUID1 "/2");
	set_clique(c, 2, LL_CLIQUE_READY, UUID1 "/1");
	set_clique(c, 3, LL_CLIQUE_READY, UUID1 "/2");
	/* The clique wins over the leaf switch. */
	c->nodes[2].topology_addr = ll_strdup("s1.n3");
	assert_int_equal(decide(c, 1, false, &res, &err), 0);
	assert_int_equal(res.order[0], 0);
	assert_int_equal(res.order[1], 2);
	assert_int_equal(res.order[2], 1);
	assert_int_equal(res.order[3], 3);
	assert_int_equal(res.node_rank, 2);
	assert_true(res.clique_order);
	assert_int_equal(res.nvlink_domain, 16);
	assert_string_equal(res.nvlink_domain_reason, "GPUs of the smallest of the job's 2 NVLink cliques (NVLink "
						      "clique 1 of domain " UUID1 ", 2 nodes): multi-node NVLink");
	assert_int_equal(res.n_warnings, 0);
	text = ll_agree_order_text(c->nodes, res.order, res.n_nodes);
	assert_string_equal(text, "gpu00001, gpu00003, gpu00002, gpu00004");
	free(text);
	ll_agree_result_release(&res);

	/* Without cliques nothing moves and the node's own domain stands (old behaviour). */
	for (size_t i = 0; i < 4; i++)
		set_clique(c, i, LL_CLIQUE_NONE, NULL);
	free(c->nodes[2].topology_addr);
	c->nodes[2].topology_addr = NULL;
	assert_int_equal(decide(c, 1, false, &res, &err), 0);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(res.order[i], i);
	assert_int_equal(res.nvlink_domain, 0);
	assert_false(res.clique_order);
	ll_agree_result_release(&res);

	/* Slurm topology/block, no NVML: blocks group the same way. */
	set_clique(c, 0, LL_CLIQUE_BLOCK, "b1");
	set_clique(c, 1, LL_CLIQUE_BLOCK, "b2");
	set_clique(c, 2, LL_CLIQUE_BLOCK, "b1");
	set_clique(c, 3, LL_CLIQUE_BLOCK, "b2");
	assert_int_equal(decide(c, 3, false, &res, &err), 0);
	assert_int_equal(res.order[1], 2);
	assert_int_equal(res.node_rank, 3);
	assert_int_equal(res.nvlink_domain, 16);
	assert_string_equal(res.nvlink_domain_reason, "GPUs of the smallest of the job's 2 NVLink cliques (Slurm "
						      "block b1, 2 nodes): multi-node NVLink");
	ll_agree_result_release(&res);
	cluster_free(c);
}

/* A clique only partly in the job: soft, naming its nodes; an error under --strict. */
static void test_clique_partly(void **state)
{
	struct cluster *c = cluster_new(3, false);
	struct ll_agree_result res;
	struct ll_error err = { 0 };

	(void)state;
	set_clique(c, 0, LL_CLIQUE_READY, UUID1 "/1");
	set_clique(c, 1, LL_CLIQUE_READY, UUID1 "/1");
	set_clique(c, 2, LL_CLIQUE_READY, UUID1 "/2");
	assert_int_equal(decide(c, 0, false, &res, &err), 0);
	assert_int_equal(res.nvlink_domain, 8);
	assert_int_equal(res.n_warnings, 1);
	assert_string_equal(res.warnings[0],
			    "gpu00003: only 8 GPUs of NVLink clique 2 of domain " UUID1 " are in this job, 16 of the "
			    "other clique: LLMLAUNCH_NVLINK_DOMAIN is 8, the smallest clique's; ask for whole cliques "
			    "so that tensor parallelism of the largest size stays on NVLink");
	ll_agree_result_release(&res);
	assert_int_equal(decide(c, 0, true, &res, &err), -EPROTO);
	assert_string_equal(err.message,
			    "nodes differ: gpu00003: only 8 GPUs of NVLink clique 2 of domain " UUID1 " are in this "
			    "job, 16 of the other clique: LLMLAUNCH_NVLINK_DOMAIN is 8, the smallest clique's; ask for "
			    "whole cliques so that tensor parallelism of the largest size stays on NVLink (an error "
			    "under --strict)");
	ll_error_clear(&err);
	cluster_free(c);
}

/* Nodes whose fabric state differs: each kind named once; no domain is decided. */
static void test_clique_state_differs(void **state)
{
	struct cluster *c = cluster_new(4, false);
	struct ll_agree_result res;
	struct ll_error err = { 0 };

	(void)state;
	set_clique(c, 0, LL_CLIQUE_READY, UUID1 "/1");
	set_clique(c, 1, LL_CLIQUE_PENDING, NULL);
	set_clique(c, 2, LL_CLIQUE_FAILED, NULL);
	set_clique(c, 3, LL_CLIQUE_NONE, NULL);
	assert_int_equal(decide(c, 0, false, &res, &err), 0);
	assert_int_equal(res.nvlink_domain, 0);
	assert_int_equal(res.n_warnings, 3);
	assert_string_equal(res.warnings[0],
			    "gpu00002: NVLink fabric registration not completed (in progress or not started), the "
			    "other node completed it: NCCL uses multi-node NVLink only when every GPU of the job has, "
			    "so the whole job would use the network between nodes");
	assert_string_equal(res.warnings[1],
			    "gpu00003: NVLink fabric registration failed, the other node completed it: NCCL uses "
			    "multi-node NVLink only when every GPU of the job has, so the whole job would use the "
			    "network between nodes");
	assert_string_equal(res.warnings[2],
			    "gpu00004: no NVLink fabric information (NVML gave none), the other node completed it: "
			    "NCCL uses multi-node NVLink only when every GPU of the job has, so the whole job would "
			    "use the network between nodes");
	ll_agree_result_release(&res);
	cluster_free(c);
}

/* The clique token in the per-node record, and records from older llmlaunch. */
static void test_clique_record(void **state)
{
	struct ll_agree_node n = { 0 }, back = { 0 };
	struct ll_error err = { 0 };
	char *text;

	(void)state;
	n.hw_digest = 1;
	n.clique.state = LL_CLIQUE_READY;
	n.clique.gpus = 4;
	n.clique.key = ll_strdup(UUID1 "/7");
	text = ll_agree_node_format(&n);
	assert_string_equal(text, "0000000000000001 0000000000000000 0000000000000000 0 - R:4:" UUID1 "/7");
	assert_int_equal(ll_agree_node_parse(text, "n1", &back, &err), 0);
	assert_int_equal(back.clique.state, LL_CLIQUE_READY);
	assert_int_equal(back.clique.gpus, 4);
	assert_string_equal(back.clique.key, UUID1 "/7");
	free(text);
	/* Five fields: an older node, no clique. */
	assert_int_equal(ll_agree_node_parse("1 2 3 4 -", "n2", &back, &err), 0);
	assert_int_equal(back.clique.state, LL_CLIQUE_NONE);
	assert_null(back.clique.key);
	assert_int_equal(ll_agree_node_parse("1 2 3 4 - P:8:-", "n2", &back, &err), 0);
	assert_int_equal(back.clique.state, LL_CLIQUE_PENDING);
	assert_int_equal(ll_agree_node_parse("1 2 3 4 - R:8:-", "n3", &back, &err), -EINVAL);
	ll_error_clear(&err);
	assert_int_equal(ll_agree_node_parse("1 2 3 4 - X:8:k", "n3", &back, &err), -EINVAL);
	ll_error_clear(&err);
	ll_agree_node_release(&n);
	ll_agree_node_release(&back);
}

/* 10,000 nodes of 556 NVL72-like cliques (18 nodes each, the last one partial),
 * interleaved in launcher order: the clique part of the decision stays cheap. */
static void test_clique_ten_thousand(void **state)
{
	struct cluster *c = cluster_new(10000, false);
	struct ll_agree_result res;
	struct ll_error err = { 0 };
	double t0, ms;

	(void)state;
	for (size_t i = 0; i < c->n; i++) {
		char key[64];
		snprintf(key, sizeof(key), UUID1 "/%zu", i % 556);
		set_clique(c, i, LL_CLIQUE_READY, key);
		c->nodes[i].clique.gpus = 4;
	}
	t0 = now_ms();
	assert_int_equal(decide(c, 0, false, &res, &err), 0);
	ms = now_ms() - t0;
	/* Clique 0 holds launcher indices 0, 556, 1112, ...: the first ranks. */
	assert_int_equal(res.order[0], 0);
	assert_int_equal(res.order[1], 556);
	/* 10000 = 556 x 17 + 548: cliques 0-547 have 18 nodes, 548-555 have 17. */
	assert_int_equal(res.nvlink_domain, 17 * 4);
	assert_int_equal(res.n_warnings, 8);
	print_message("agree: 10000 nodes in 556 cliques decided in %.2f ms\n", ms);
	ll_agree_result_release(&res);
	cluster_free(c);
}

/* A node's clique from its facts, else from Slurm's topology/block. */
static void test_clique_of(void **state)
{
	struct ll_gpu gpus[2] = { 0 };
	struct ll_facts f = { .gpus = gpus, .n_gpus = 2, .gpus_known = true };
	char *block_env[] = { "SLURM_TOPOLOGY_ADDR=rack7.n12", "SLURM_TOPOLOGY_ADDR_PATTERN=block.node", NULL };
	char *tree_env[] = { "SLURM_TOPOLOGY_ADDR=s1.s7.n12", "SLURM_TOPOLOGY_ADDR_PATTERN=switch.switch.node", NULL };
	char *no_env[] = { NULL };
	struct ll_agree_clique c = { 0 };

	(void)state;
	for (int i = 0; i < 2; i++) {
		gpus[i].vendor = LL_GPU_VENDOR_NVIDIA;
		gpus[i].nvfabric = (struct ll_gpu_fabric_info){ LL_FABRIC_COMPLETED, 0, UUID1, 5, 2 };
	}
	ll_agree_clique_of(&f, NULL, block_env, &c);
	assert_int_equal(c.state, LL_CLIQUE_READY);
	assert_int_equal(c.gpus, 2);
	assert_string_equal(c.key, UUID1 "/5");
	ll_agree_clique_release(&c);

	gpus[1].nvfabric.state = LL_FABRIC_IN_PROGRESS;
	ll_agree_clique_of(&f, NULL, no_env, &c);
	assert_int_equal(c.state, LL_CLIQUE_PENDING);
	assert_null(c.key);
	gpus[1].nvfabric.state = LL_FABRIC_COMPLETED;
	gpus[1].nvfabric.status = 999;
	ll_agree_clique_of(&f, NULL, no_env, &c);
	assert_int_equal(c.state, LL_CLIQUE_FAILED);

	/* A zero cluster UUID is no fabric to NCCL; then the Slurm block stands in, but
	 * a tree switch never does. */
	for (int i = 0; i < 2; i++)
		gpus[i].nvfabric = (struct ll_gpu_fabric_info){ LL_FABRIC_COMPLETED, 0,
								 "00000000-0000-0000-0000-000000000000", 0, -1 };
	ll_agree_clique_of(&f, NULL, no_env, &c);
	assert_int_equal(c.state, LL_CLIQUE_NONE);
	ll_agree_clique_of(&f, NULL, block_env, &c);
	assert_int_equal(c.state, LL_CLIQUE_BLOCK);
	assert_string_equal(c.key, "rack7");
	ll_agree_clique_release(&c);
	ll_agree_clique_of(&f, NULL, tree_env, &c);
	assert_int_equal(c.state, LL_CLIQUE_NONE);
	assert_null(c.key);
}

static void test_deadlines(void **state)
{
	struct ll_agree_deadlines d;
	char *reason;
	struct ll_buf b;
	char *names[] = { "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10" };
	size_t idx[] = { 9, 1, 2, 3, 4, 5, 6, 7, 8, 0 };

	(void)state;
	ll_agree_deadlines(4, 0, &d);
	assert_false(d.agree_given);
	assert_true(near(d.agree_s, 120.2) && near(d.reach_s, 10.008) && near(d.rdzv_s, 60.2));
	ll_agree_deadlines(10000, 0, &d);
	assert_true(near(d.agree_s, 620) && near(d.reach_s, 30) && near(d.rdzv_s, 560));
	/* The user's bound is the agreement's, and no wait is longer. */
	ll_agree_deadlines(16, 6, &d);
	assert_true(d.agree_given && near(d.agree_s, 6) && near(d.reach_s, 6));
	reason = ll_agree_deadline_reason(LL_AGREE_BASE_S, LL_AGREE_PER_NODE_S, 16);
	assert_string_equal(reason, "120 s + 50 ms a node, for 16 nodes");
	free(reason);

	ll_buf_init(&b);
	ll_agree_add_names(&b, names, idx, 2, 2);
	assert_string_equal(b.s, "n10, n2");
	ll_buf_reset(&b);
	ll_agree_add_names(&b, names, idx, 10, 10);
	assert_string_equal(b.s, "n10, n2, n3, n4, n5, n6, n7, n8 and 2 more");
	ll_buf_reset(&b);
	ll_agree_add_names(&b, names, idx, 3, 64);
	assert_string_equal(b.s, "n10, n2, n3 and 61 more");
	ll_buf_release(&b);
}

/* Two RoCE nodes whose ports differ in PFC (tests/integration: the QoS facts come from
 * the probe; here the summaries carry them): the agreement names the one that differs,
 * and the QoS text survives the summary's JSON form. */
static void test_roce_qos_differs(void **state)
{
	struct cluster *c = cluster_new(3, false);
	struct ll_agree_result res;
	struct ll_error err = { 0 };
	struct ll_summary *back = NULL;
	char *text;

	(void)state;
	for (size_t i = 0; i < 3; i++)
		c->sums[i]->qos = ll_strdup("class 106; forced none, trust dscp, PFC 3, ECN 3, RoCE MTU 4096");
	free(c->sums[1]->qos);
	c->sums[1]->qos = ll_strdup("class unset; forced none, trust dscp, PFC none, ECN 3, RoCE MTU 4096");
	cluster_seal(c);
	assert_int_not_equal(c->nodes[0].hw_digest, c->nodes[1].hw_digest);
	assert_int_equal(c->nodes[0].hw_digest, c->nodes[2].hw_digest);
	assert_int_equal(decide(c, 0, false, &res, &err), 0);
	assert_int_equal(res.n_warnings, 1);
	assert_string_equal(res.warnings[0],
			    "gpu00002: RoCE QoS 'class unset; forced none, trust dscp, PFC none, ECN 3, RoCE MTU 4096', "
			    "the other 2 nodes 'class 106; forced none, trust dscp, PFC 3, ECN 3, RoCE MTU 4096'");
	ll_agree_result_release(&res);

	text = ll_summary_serialize(c->sums[1]);
	assert_int_equal(ll_summary_parse(text, "gpu00002", &back, &err), 0);
	assert_string_equal(back->qos, c->sums[1]->qos);
	assert_int_equal(ll_summary_hw_digest(back), c->nodes[1].hw_digest);
	ll_summary_free(back);
	free(text);
	cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_node),
		cmocka_unit_test(test_roce_qos_differs),
		cmocka_unit_test(test_four_nodes_subnet),
		cmocka_unit_test(test_subnet_preference),
		cmocka_unit_test(test_no_common_subnet),
		cmocka_unit_test(test_topology_order),
		cmocka_unit_test(test_fewer_gpus_is_hard),
		cmocka_unit_test(test_no_rdma_is_hard),
		cmocka_unit_test(test_one_port_down_is_soft),
		cmocka_unit_test(test_other_verdicts),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_ten_thousand),
		cmocka_unit_test(test_host_prefix),
		cmocka_unit_test(test_publishers),
		cmocka_unit_test(test_deadlines),
		cmocka_unit_test(test_clique_order),
		cmocka_unit_test(test_clique_partly),
		cmocka_unit_test(test_clique_state_differs),
		cmocka_unit_test(test_clique_record),
		cmocka_unit_test(test_clique_of),
		cmocka_unit_test(test_clique_ten_thousand),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
