/* Planner rules on small facts built by hand: each case states the node and the
 * exact values (and the words of the reasons) the planner must produce. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "llmlaunch/plan.h"
#include "llmlaunch/agree.h"
#include "llmlaunch/nccl-watch.h"

/* ---- a node built by hand ---------------------------------------------------- */

#define MAXN 16

struct fx {
	struct ll_facts f;
	struct ll_gpu gpus[MAXN];
	struct ll_rdma_device rdma[MAXN];
	struct ll_rdma_port ports[MAXN][2];
	struct ll_gid gids[MAXN][2][8];
	struct ll_netif netifs[MAXN];
	struct ll_addr addrs[MAXN][2];
	struct ll_core cores[64];
	struct ll_numa_node numa[4];
	enum ll_path path[MAXN][MAXN];
	enum ll_path gpu_nic[MAXN * MAXN];
	char *strs[512];
	size_t n_strs;
	/* planner input */
	char *env[16];
	size_t n_env;
	struct ll_assignment profile[8], cli[8], conf[8];
	size_t n_profile, n_cli, n_conf;
	const char *conf_unreadable, *conf_unreadable_why;
	bool conf_blocks;
	struct ll_process_limits limits;
	int nproc, nnodes;
	enum ll_bind_mode bind;
	bool bind_cli;
	const struct ll_nccl_lib *nccl;
};

static char *fx_str(struct fx *x, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	assert_true(vasprintf(&s, fmt, ap) >= 0);
	va_end(ap);
	x->strs[x->n_strs++] = s;
	return s;
}

/* n_numa NUMA nodes of `per` cores each; `smt` PUs per core (PU ids core, core+total). */
static struct fx *fx_new(int n_numa, int per, int smt)
{
	struct fx *x = calloc(1, sizeof(*x));
	int total = n_numa * per;

	x->f.source = "test";
	x->f.gpus = x->gpus;
	x->f.rdma = x->rdma;
	x->f.netifs = x->netifs;
	x->f.cores = x->cores;
	x->f.numa_nodes = x->numa;
	x->f.gdr_ready = LL_UNKNOWN;
	x->f.dmabuf = LL_UNKNOWN;
	/* A node as a live probe sees it: the PCI tree and the network devices were read. */
	x->f.gpus_known = true;
	x->f.netdevs_known = true;
	x->f.dmabuf = LL_UNKNOWN;
	x->f.nvidia_open_module = LL_UNKNOWN;
	x->f.n_pus = total * smt;
	for (int n = 0; n < n_numa; n++) {
		x->numa[n].os_index = n;
		x->numa[n].n_cores = per;
		for (int c = 0; c < per; c++) {
			int id = n * per + c;

			x->cores[id].numa_node = n;
			x->cores[id].cpuset = smt == 2 ? fx_str(x, "%d,%d", id, id + total) : fx_str(x, "%d", id);
		}
	}
	x->f.n_numa_nodes = (size_t)n_numa;
	x->f.n_cores = (size_t)total;
	x->nnodes = 1;
	return x;
}

static void fx_free(struct fx *x)
{
	for (size_t i = 0; i < x->n_strs; i++)
		free(x->strs[i]);
	free(x);
}

static int fx_gpu(struct fx *x, int numa)
{
	int i = (int)x->f.n_gpus++;

	x->gpus[i].busid = fx_str(x, "0000:%02x:00.0", 0x10 + i * 0x10);
	x->gpus[i].vendor = LL_GPU_VENDOR_NVIDIA;
	x->gpus[i].numa_node = numa;
	x->gpus[i].uuid = fx_str(x, "GPU-%08x-1111-2222-3333-444444444444", 0xabc00 + i);
	x->gpus[i].nvlinks_active = -1;
	x->gpus[i].nvlinks_inactive = -1;
	/* NVML answered: no link unless a case adds one. */
	x->gpus[i].links_known = true;
	return i;
}

static int fx_rdma(struct fx *x, const char *name, enum ll_port_state state, enum ll_link_layer ll, double gbps)
{
	int i = (int)x->f.n_rdma++;
	struct ll_rdma_port *p = &x->ports[i][0];

	x->rdma[i].name = fx_str(x, "%s", name);
	x->rdma[i].busid = fx_str(x, "0000:%02x:00.0", 0x11 + i * 0x10);
	x->rdma[i].numa_node = -1;
	x->rdma[i].node_type = -1;
	/* A ConnectX unless a case says otherwise (ll_rdma_classify is tested on its own). */
	x->rdma[i].vendor_id = 0x15b3;
	x->rdma[i].rdma_class = LL_RDMA_CLASS_VERBS;
	x->rdma[i].class_why = "PCI vendor 15b3";
	x->rdma[i].ports = p;
	x->rdma[i].n_ports = 1;
	p->number = 1;
	p->state = state;
	p->link_layer = ll;
	p->rate_gbps = gbps;
	p->lid = ll == LL_LINK_LAYER_INFINIBAND ? 10 + i : 0;
	p->gids = x->gids[i][0];
	return i;
}

static void fx_gid(struct fx *x, int dev, unsigned index, enum ll_gid_type type, bool ipv4)
{
	struct ll_rdma_port *p = &x->ports[dev][0];
	struct ll_gid *g = &p->gids[p->n_gids++];

	g->index = index;
	g->type = type;
	g->ipv4_mapped = ipv4;
	g->link_local = !ipv4;
	g->gid = fx_str(x, ipv4 ? "0000:0000:0000:0000:0000:ffff:0a00:00%02x" : "fe80:0000:0000:0000:0000:0000:0000:%04x",
			index);
}

static struct ll_netif *fx_netif(struct fx *x, const char *name, enum ll_netif_kind kind, const char *v4)
{
	int i = (int)x->f.n_netifs++;
	struct ll_netif *n = &x->netifs[i];

	n->name = fx_str(x, "%s", name);
	n->kind = kind;
	n->operstate = kind == LL_NETIF_LOOPBACK ? "unknown" : "up";
	n->up = LL_YES;
	n->running = LL_YES;
	n->mtu = -1;
	n->speed_mbps = -1;
	n->numa_node = -1;
	n->addrs_known = true;
	n->addrs = x->addrs[i];
	if (v4) {
		n->addrs[0].family = AF_INET;
		n->addrs[0].addr = fx_str(x, "%s", v4);
		n->addrs[0].prefixlen = 24;
		n->n_addrs = 1;
	}
	return n;
}

static void fx_env(struct fx *x, const char *kv)
{
	x->env[x->n_env++] = fx_str(x, "%s", kv);
}

static struct ll_plan *fx_plan(struct fx *x)
{
	struct ll_plan_input in = {
		.facts = &x->f,
		.environ = x->env,
		.profile = x->profile,
		.n_profile = x->n_profile,
		.cli = x->cli,
		.n_cli = x->n_cli,
		.bind = x->bind,
		.bind_from_cli = x->bind_cli,
		.nnodes = x->nnodes,
		.nccl_conf = x->conf,
		.n_nccl_conf = x->n_conf,
		.nccl_conf_unreadable = x->conf_unreadable,
		.nccl_conf_unreadable_why = x->conf_unreadable_why,
		.nccl_conf_blocks = x->conf_blocks,
		.limits = x->limits,
		.nccl = x->nccl,
	};
	struct ll_error err = { 0 };
	struct ll_plan *p = NULL;

	for (size_t g = 0; g < x->f.n_gpus; g++)
		for (size_t d = 0; d < x->f.n_rdma; d++)
			x->gpu_nic[g * x->f.n_rdma + d] = x->path[g][d];
	x->f.gpu_nic = x->f.n_gpus && x->f.n_rdma ? x->gpu_nic : NULL;
	x->env[x->n_env] = NULL;
	if (x->nproc > 0) {
		x->cli[x->n_cli++] = (struct ll_assignment){ "torchrun.nproc_per_node", fx_str(x, "%d", x->nproc),
							     "--nproc-per-node" };
		in.n_cli = x->n_cli;
		x->nproc = 0;
	}
	assert_int_equal(ll_plan_build(&in, &p, &err), 0);
	assert_non_null(p);
	return p;
}

static const char *val(const struct ll_plan *p, const char *name)
{
	const struct ll_setting *s = ll_plan_get(p, name);

	assert_non_null(s);
	return s->value;
}

static void assert_val(const struct ll_plan *p, const char *name, const char *expected)
{
	const char *v = val(p, name);

	if (!expected) {
		if (v)
			fail_msg("%s: expected unset, got '%s'", name, v);
		return;
	}
	if (!v)
		fail_msg("%s: expected '%s', got unset (%s)", name, expected, ll_plan_get(p, name)->reason);
	assert_string_equal(v, expected);
}

static void assert_reason_has(const struct ll_plan *p, const char *name, const char *needle)
{
	const struct ll_setting *s = ll_plan_get(p, name);

	assert_non_null(s);
	if (!strstr(s->reason, needle))
		fail_msg("%s: reason '%s' lacks '%s'", name, s->reason, needle);
}

static const struct ll_lint *find_lint(const struct ll_plan *p, const char *var, const char *needle)
{
	for (size_t i = 0; i < p->n_lints; i++)
		if (ll_streq(p->lints[i].variable, var) && strstr(p->lints[i].message, needle))
			return &p->lints[i];
	return NULL;
}

static size_t lint_count(const struct ll_plan *p, const char *var)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n_lints; i++)
		n += ll_streq(p->lints[i].variable, var);
	return n;
}

static void assert_lint(const struct ll_plan *p, enum ll_lint_level level, const char *var, const char *needle)
{
	const struct ll_lint *l = find_lint(p, var, needle);

	if (!l) {
		for (size_t i = 0; i < p->n_lints; i++)
			print_message("lint: %s: %s\n", p->lints[i].variable, p->lints[i].message);
		fail_msg("no lint on %s saying '%s'", var, needle);
	}
	assert_int_equal(l->level, level);
}

/* Two GPUs, each beside its own InfiniBand HCA, on two NUMA nodes of 4 cores. */
static struct fx *two_gpu_ib(void)
{
	struct fx *x = fx_new(2, 4, 1);

	fx_gpu(x, 0);
	fx_gpu(x, 1);
	fx_rdma(x, "mlx5_0", LL_PORT_ACTIVE, LL_LINK_LAYER_INFINIBAND, 200);
	fx_rdma(x, "mlx5_1", LL_PORT_ACTIVE, LL_LINK_LAYER_INFINIBAND, 200);
	x->path[0][0] = LL_PATH_PIX;
	x->path[0][1] = LL_PATH_SYS;
	x->path[1][0] = LL_PATH_SYS;
	x->path[1][1] = LL_PATH_PIX;
	x->f.gdr_ready = LL_YES;
	x->f.gdr_module = "nvidia_peermem";
	fx_netif(x, "docker0", LL_NETIF_DOCKER, "172.17.0.1");
	fx_netif(x, "eth0", LL_NETIF_ETHERNET, "10.0.0.5")->speed_mbps = 25000;
	fx_netif(x, "ib0", LL_NETIF_INFINIBAND, "192.168.0.5");
	fx_netif(x, "lo", LL_NETIF_LOOPBACK, "127.0.0.1");
	return x;
}

/* ---- cases ------------------------------------------------------------------ */

static void t_ib_node(void **state)
{
	struct fx *x = two_gpu_ib();
	struct ll_plan *p = fx_plan(x);
	(void)state;

	assert_val(p, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
	assert_val(p, "CUDA_VISIBLE_DEVICES", NULL);
	assert_val(p, "NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1");
	assert_reason_has(p, "NCCL_IB_HCA", "2 ACTIVE InfiniBand ports");
	assert_val(p, "NCCL_IB_DISABLE", NULL);
	assert_val(p, "NCCL_NET_GDR_LEVEL", "PIX");
	assert_reason_has(p, "NCCL_NET_GDR_LEVEL", "nvidia_peermem");
	assert_val(p, "NCCL_SOCKET_IFNAME", "=eth0");
	assert_reason_has(p, "NCCL_SOCKET_IFNAME", "with IPv4 10.0.0.5");
	assert_reason_has(p, "NCCL_SOCKET_IFNAME", "skipped docker0 (docker), lo (loopback)");
	assert_val(p, "GLOO_SOCKET_IFNAME", "eth0");
	assert_true(ll_plan_get(p, "NCCL_IB_GID_INDEX") == NULL);
	assert_val(p, "LLMLAUNCH_NET", "ib");
	assert_val(p, "LLMLAUNCH_NET_GBPS", "400");
	assert_val(p, "LLMLAUNCH_GPUS_PER_NODE", "2");
	assert_val(p, "LLMLAUNCH_NNODES", "1");
	assert_val(p, "OMP_NUM_THREADS", "4");
	assert_val(p, "torchrun.nproc_per_node", "2");
	assert_int_equal(p->nproc_per_node, 2);
	assert_int_equal(p->bind, LL_BIND_NUMA);
	assert_int_equal(p->n_ranks, 2);
	assert_int_equal(p->ranks[0].gpu, 0);
	assert_string_equal(p->ranks[0].gpu_busid, "0000:10:00.0");
	assert_string_equal(p->ranks[0].cpuset, "0-3");
	assert_int_equal(p->ranks[0].numa_node, 0);
	assert_string_equal(p->ranks[1].cpuset, "4-7");
	assert_int_equal(p->ranks[1].numa_node, 1);
	assert_int_equal(p->ranks[1].n_cores, 4);
	assert_int_equal(p->n_lints, 0);
	assert_int_equal(ll_plan_get(p, "NCCL_IB_HCA")->source, LL_SOURCE_PROBE);
	assert_true(ll_plan_get(p, "NCCL_IB_HCA")->exported);
	assert_false(ll_plan_get(p, "bind")->exported);
	ll_plan_free(p);
	fx_free(x);
}

/* The transport is decided once, after every layer: NCCL_IB_DISABLE=1 from the
 * environment (or NCCL_NET from a profile) makes LLMLAUNCH_NET sockets, and what the
 * agreement compares and the log watcher expects is that one value. */
static void t_transport_once(void **state)
{
	struct fx *x = two_gpu_ib();
	struct ll_summary *sum = NULL;
	struct ll_error err = { 0 };
	struct ll_plan *p;
	(void)state;

	fx_env(x, "NCCL_IB_DISABLE=1");
	p = fx_plan(x);
	assert_val(p, "LLMLAUNCH_NET", "socket");
	assert_int_equal(ll_plan_get(p, "LLMLAUNCH_NET")->source, LL_SOURCE_ENVIRONMENT);
	assert_reason_has(p, "LLMLAUNCH_NET", "NCCL_IB_DISABLE=1 (environment) turns NCCL's InfiniBand and RoCE transport "
					      "off: TCP sockets; the probe found ib");
	assert_int_equal(ll_ncclwatch_expect(ll_plan_value(p, "LLMLAUNCH_NET")), LL_NET_EXPECT_SOCKET);
	assert_int_equal(ll_summary_build(&x->f, p, &sum, &err), 0);
	assert_string_equal(sum->net, "socket");
	ll_summary_free(sum);
	ll_plan_free(p);
	fx_free(x);

	x = two_gpu_ib();
	x->profile[x->n_profile++] = (struct ll_assignment){ "NCCL_NET", "Socket", "site.yaml:2" };
	p = fx_plan(x);
	assert_val(p, "LLMLAUNCH_NET", "socket");
	assert_reason_has(p, "LLMLAUNCH_NET", "NCCL_NET=Socket (profile) forces TCP sockets");
	ll_plan_free(p);
	fx_free(x);

	x = two_gpu_ib();
	x->profile[x->n_profile++] = (struct ll_assignment){ "NCCL_NET", "AWS Libfabric", "efa.yaml:2" };
	p = fx_plan(x);
	assert_val(p, "LLMLAUNCH_NET", "ofi");
	assert_int_equal(ll_ncclwatch_expect(ll_plan_value(p, "LLMLAUNCH_NET")), LL_NET_EXPECT_ANY);
	ll_plan_free(p);
	fx_free(x);
}

/* mlx5_1 beside mlx5_10: the exact list names both; a prefix from the environment
 * wins (it is the user's) but is linted. */
static void t_prefix_trap(void **state)
{
	struct fx *x = fx_new(1, 4, 1);
	struct ll_plan *p;
	(void)state;

	fx_rdma(x, "mlx5_1", LL_PORT_ACTIVE, LL_LINK_LAYER_INFINIBAND, 100);
	fx_rdma(x, "mlx5_10", LL_PORT_ACTIVE, LL_LINK_LAYER_INFINIBAND, 100);
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_HCA", "=mlx5_1:1,mlx5_10:1");
	assert_reason_has(p, "NCCL_IB_HCA", "no GPUs");
	ll_plan_free(p);

	fx_env(x, "NCCL_IB_HCA=mlx5_1");
	fx_env(x, "NCCL_SOCKET_IFNAME=eth");
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_HCA", "mlx5_1");
	assert_int_equal(ll_plan_get(p, "NCCL_IB_HCA")->source, LL_SOURCE_ENVIRONMENT);
	assert_reason_has(p, "NCCL_IB_HCA", "probe chose '=mlx5_1:1,mlx5_10:1'");
	assert_lint(p, LL_LINT_WARNING, "NCCL_IB_HCA", "'mlx5_1' also selects mlx5_10");
	assert_lint(p, LL_LINT_WARNING, "NCCL_IB_HCA", "write '=mlx5_1'");
	assert_lint(p, LL_LINT_WARNING, "NCCL_SOCKET_IFNAME", "'eth' matches no network interface");
	ll_plan_free(p);
	fx_free(x);

	/* Names that do not exist, and a port the device lacks. */
	x = fx_new(1, 4, 1);
	fx_rdma(x, "mlx5_0", LL_PORT_ACTIVE, LL_LINK_LAYER_INFINIBAND, 100);
	fx_env(x, "NCCL_IB_HCA==mlx5_0:2,mlx5_7:1");
	p = fx_plan(x);
	assert_lint(p, LL_LINT_WARNING, "NCCL_IB_HCA", "'mlx5_0' has no port 2");
	assert_lint(p, LL_LINT_WARNING, "NCCL_IB_HCA", "'mlx5_7' names no RDMA device");
	ll_plan_free(p);
	fx_free(x);
}

static void t_down_and_minority(void **state)
{
	struct fx *x = fx_new(1, 4, 1);
	struct ll_plan *p;
	(void)state;

	fx_rdma(x, "mlx5_0", LL_PORT_ACTIVE, LL_LINK_LAYER_INFINIBAND, 200);
	fx_rdma(x, "mlx5_1", LL_PORT_DOWN, LL_LINK_LAYER_INFINIBAND, 200);
	fx_rdma(x, "mlx5_2", LL_PORT_ACTIVE, LL_LINK_LAYER_INFINIBAND, 200);
	fx_rdma(x, "mlx5_3", LL_PORT_ACTIVE, LL_LINK_LAYER_ETHERNET, 100);
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_HCA", "=mlx5_0:1,mlx5_2:1");
	assert_reason_has(p, "NCCL_IB_HCA", "mlx5_1:1 (DOWN)");
	assert_reason_has(p, "NCCL_IB_HCA", "mlx5_3:1 (minority link layer Ethernet: 2 InfiniBand ports chosen)");
	assert_val(p, "LLMLAUNCH_NET_GBPS", "400");
	ll_plan_free(p);
	fx_free(x);
}

static void t_no_rdma(void **state)
{
	struct fx *x = fx_new(1, 2, 1);
	struct ll_plan *p;
	(void)state;

	fx_gpu(x, 0);
	fx_netif(x, "eth0", LL_NETIF_ETHERNET, "10.1.1.1")->speed_mbps = 10000;
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_DISABLE", "1");
	assert_reason_has(p, "NCCL_IB_DISABLE", "no RDMA device");
	assert_val(p, "NCCL_IB_HCA", NULL);
	assert_val(p, "NCCL_NET_GDR_LEVEL", NULL);
	assert_val(p, "LLMLAUNCH_NET", "socket");
	assert_val(p, "LLMLAUNCH_NET_GBPS", "10");
	ll_plan_free(p);
	fx_free(x);

	/* Every port down: disabled, and the reason names the port. */
	x = fx_new(1, 2, 1);
	fx_rdma(x, "mlx5_0", LL_PORT_DOWN, LL_LINK_LAYER_INFINIBAND, 200);
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_DISABLE", "1");
	assert_reason_has(p, "NCCL_IB_DISABLE", "mlx5_0:1 (DOWN)");
	ll_plan_free(p);
	fx_free(x);

	/* States unknown: neither disabled nor listed; NCCL finds out. */
	x = fx_new(1, 2, 1);
	fx_rdma(x, "mlx5_0", LL_PORT_STATE_UNKNOWN, LL_LINK_LAYER_INFINIBAND, 200);
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_DISABLE", NULL);
	assert_val(p, "NCCL_IB_HCA", NULL);
	assert_reason_has(p, "NCCL_IB_HCA", "mlx5_0:1 (state unknown)");
	assert_val(p, "LLMLAUNCH_NET", "unknown");
	ll_plan_free(p);
	fx_free(x);
}

static void t_gdr(void **state)
{
	struct fx *x = two_gpu_ib();
	struct ll_plan *p;
	(void)state;

	x->f.gdr_ready = LL_NO;
	x->f.dmabuf = LL_NO; /* and no DMA-BUF either */
	x->f.gdr_module = NULL;
	p = fx_plan(x);
	assert_val(p, "NCCL_NET_GDR_LEVEL", NULL);
	assert_reason_has(p, "NCCL_NET_GDR_LEVEL", "not ready (neither nvidia_peermem nor nv_peer_mem is loaded, and DMA-BUF is not usable)");
	ll_plan_free(p);

	x->f.gdr_ready = LL_UNKNOWN;
	p = fx_plan(x);
	assert_val(p, "NCCL_NET_GDR_LEVEL", NULL);
	assert_reason_has(p, "NCCL_NET_GDR_LEVEL", "readiness unknown");
	ll_plan_free(p);

	/* GPU 1's only NIC hangs off the other socket's host bridge: NODE -> PHB. */
	x->f.gdr_ready = LL_YES;
	x->path[1][1] = LL_PATH_NODE;
	p = fx_plan(x);
	assert_val(p, "NCCL_NET_GDR_LEVEL", "PHB");
	assert_reason_has(p, "NCCL_NET_GDR_LEVEL", "GPU 0000:20:00.0 to mlx5_1, NODE");
	ll_plan_free(p);

	/* A level from the environment that is too strict for the node. */
	x->path[1][1] = LL_PATH_PXB;
	fx_env(x, "NCCL_NET_GDR_LEVEL=PIX");
	p = fx_plan(x);
	assert_val(p, "NCCL_NET_GDR_LEVEL", "PIX");
	assert_lint(p, LL_LINT_WARNING, "NCCL_NET_GDR_LEVEL", "PIX is stricter than this node needs");
	assert_lint(p, LL_LINT_WARNING, "NCCL_NET_GDR_LEVEL", "use PXB");
	ll_plan_free(p);
	fx_free(x);
}

/* A storage HCA at SYS from every GPU, while each GPU has a PXB NIC. */
static void t_far_nic(void **state)
{
	struct fx *x = fx_new(2, 4, 1);
	struct ll_plan *p;
	(void)state;

	fx_gpu(x, 0);
	fx_gpu(x, 1);
	fx_rdma(x, "mlx5_0", LL_PORT_ACTIVE, LL_LINK_LAYER_INFINIBAND, 200);
	fx_rdma(x, "mlx5_1", LL_PORT_ACTIVE, LL_LINK_LAYER_INFINIBAND, 200);
	fx_rdma(x, "mlx5_2", LL_PORT_ACTIVE, LL_LINK_LAYER_INFINIBAND, 100);
	x->path[0][0] = LL_PATH_PXB;
	x->path[0][1] = LL_PATH_SYS;
	x->path[0][2] = LL_PATH_SYS;
	x->path[1][0] = LL_PATH_SYS;
	x->path[1][1] = LL_PATH_PXB;
	x->path[1][2] = LL_PATH_SYS;
	x->f.gdr_ready = LL_YES;
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1");
	assert_reason_has(p, "NCCL_IB_HCA", "mlx5_2:1 (not the nearest NIC of any GPU: at best SYS");
	assert_val(p, "NCCL_NET_GDR_LEVEL", "PXB");
	ll_plan_free(p);
	fx_free(x);

	/* A lone NIC far from one GPU still serves it. */
	x = fx_new(2, 4, 1);
	fx_gpu(x, 0);
	fx_gpu(x, 1);
	fx_rdma(x, "mlx5_0", LL_PORT_ACTIVE, LL_LINK_LAYER_INFINIBAND, 200);
	x->path[0][0] = LL_PATH_PIX;
	x->path[1][0] = LL_PATH_SYS;
	x->f.gdr_ready = LL_YES;
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_HCA", "=mlx5_0:1");
	assert_val(p, "NCCL_NET_GDR_LEVEL", "SYS");
	ll_plan_free(p);
	fx_free(x);
}

static void t_roce_gid(void **state)
{
	struct fx *x = fx_new(1, 4, 1);
	struct ll_plan *p;
	int a, b;
	(void)state;

	a = fx_rdma(x, "mlx5_0", LL_PORT_ACTIVE, LL_LINK_LAYER_ETHERNET, 100);
	b = fx_rdma(x, "mlx5_1", LL_PORT_ACTIVE, LL_LINK_LAYER_ETHERNET, 100);
	for (int d = a; d <= b; d++) {
		fx_gid(x, d, 0, LL_GID_TYPE_IB_ROCE_V1, false);
		fx_gid(x, d, 1, LL_GID_TYPE_ROCE_V2, false);
		fx_gid(x, d, 2, LL_GID_TYPE_IB_ROCE_V1, true);
		fx_gid(x, d, 3, LL_GID_TYPE_ROCE_V2, true);
	}
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1");
	assert_val(p, "NCCL_IB_GID_INDEX", "3");
	assert_val(p, "LLMLAUNCH_NET", "roce");
	ll_plan_free(p);

	/* mlx5_1's IPv4 GID moved to index 5: ports disagree, so no single index. */
	x->gids[b][0][3].ipv4_mapped = false;
	x->gids[b][0][3].link_local = true;
	fx_gid(x, b, 5, LL_GID_TYPE_ROCE_V2, true);
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_GID_INDEX", NULL);
	assert_reason_has(p, "NCCL_IB_GID_INDEX", "ports disagree (mlx5_0:1 uses 3, mlx5_1:1 uses 5)");
	assert_lint(p, LL_LINT_WARNING, "NCCL_IB_GID_INDEX", "differs between ports");
	ll_plan_free(p);
	fx_free(x);

	/* GID types unknown (plain lstopo): unset, and said so. */
	x = fx_new(1, 4, 1);
	a = fx_rdma(x, "mlx5_0", LL_PORT_ACTIVE, LL_LINK_LAYER_ETHERNET, 25);
	fx_gid(x, a, 0, LL_GID_TYPE_UNKNOWN, false);
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_GID_INDEX", NULL);
	assert_reason_has(p, "NCCL_IB_GID_INDEX", "GID types unknown on mlx5_0:1");
	ll_plan_free(p);
	fx_free(x);
}

/* A RoCE port's QoS as the probe reads it: nothing forced, DCB answered with trust
 * TRUST, PFC on the priorities of pfc, ECN on those of ecn. */
static void fx_qos(struct fx *x, int dev, enum ll_qos_trust trust, int pfc, int ecn)
{
	struct ll_port_qos *q = &x->ports[dev][0].qos;

	q->read = true;
	q->forced_tclass = -1;
	q->dcb = "ieee";
	q->trust = trust;
	memset(q->dscp_prio, -1, sizeof(q->dscp_prio));
	q->pfc_mask = pfc;
	q->ecn_rp_mask = q->ecn_np_mask = ecn;
	q->cnp_dscp = 48;
	q->cm_tos = -1;
	q->netdev_mtu = 9000;
	q->active_mtu = 4096;
}

static void t_roce_class(void **state)
{
	struct fx *x = fx_new(1, 4, 1);
	struct ll_plan *p;
	int a, b;
	(void)state;

	a = fx_rdma(x, "mlx5_0", LL_PORT_ACTIVE, LL_LINK_LAYER_ETHERNET, 100);
	b = fx_rdma(x, "mlx5_1", LL_PORT_ACTIVE, LL_LINK_LAYER_ETHERNET, 100);
	/* Facts without the QoS reader (zeroed): nothing derived, said so; no lint. */
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_TC", NULL);
	assert_reason_has(p, "NCCL_IB_TC", "QoS state not read");
	assert_null(find_lint(p, "NCCL_IB_TC", ""));
	assert_reason_has(p, "NCCL_IB_SL", "NCCL's default 0");
	assert_reason_has(p, "NCCL_IB_FIFO_TC", "NCCL version unknown");
	ll_plan_free(p);

	/* Trust DSCP, PFC on 3, DSCP 24 and 26 to 3, ECN on 3: 26 << 2 | ECT(0) = 106. */
	for (int d = a; d <= b; d++) {
		fx_qos(x, d, LL_QOS_TRUST_DSCP, 1 << 3, 1 << 3);
		x->ports[d][0].qos.dscp_prio[24] = 3;
		x->ports[d][0].qos.dscp_prio[26] = 3;
		x->ports[d][0].qos.dscp_prio[48] = 6;
	}
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_TC", "106");
	assert_reason_has(p, "NCCL_IB_TC", "PFC only on priority 3 on mlx5_0:1, mlx5_1:1; DSCP 26 maps to it");
	assert_val(p, "NCCL_IB_SL", NULL);
	ll_plan_free(p);
	/* ECN off: no ECN bits; without 26, the lowest DSCP of the priority. */
	for (int d = a; d <= b; d++) {
		x->ports[d][0].qos.ecn_rp_mask = 0;
		x->ports[d][0].qos.dscp_prio[26] = -1;
	}
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_TC", "96");
	ll_plan_free(p);
	/* A user class on priority 6, which has no PFC: one warning naming both ports. */
	fx_env(x, "NCCL_IB_TC=192");
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_TC", "192");
	assert_lint(p, LL_LINT_WARNING, "NCCL_IB_TC",
		    "NCCL_IB_TC=192 (environment) is DSCP 48, priority 6 on mlx5_0:1, mlx5_1:1, which has no PFC "
		    "while priority 3 has");
	assert_int_equal(lint_count(p, "NCCL_IB_TC"), 1);
	ll_plan_free(p);
	x->n_env = 0;

	/* Several lossless priorities: site policy, unset. */
	for (int d = a; d <= b; d++)
		x->ports[d][0].qos.pfc_mask = 1 << 3 | 1 << 4;
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_TC", NULL);
	assert_reason_has(p, "NCCL_IB_TC", "several priorities have PFC");
	ll_plan_free(p);

	/* Trust PCP with PFC on 3: the service level. */
	for (int d = a; d <= b; d++)
		fx_qos(x, d, LL_QOS_TRUST_PCP, 1 << 3, 1 << 3);
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_SL", "3");
	assert_val(p, "NCCL_IB_TC", NULL);
	ll_plan_free(p);

	/* Lossy: no PFC, ECN off: warned once for both ports. */
	for (int d = a; d <= b; d++)
		fx_qos(x, d, LL_QOS_TRUST_PCP, 0, 0);
	p = fx_plan(x);
	assert_reason_has(p, "NCCL_IB_TC", "no priority has PFC (lossy RoCE)");
	assert_lint(p, LL_LINT_WARNING, "NCCL_IB_TC", "lossy RoCE on mlx5_0:1, mlx5_1:1");
	ll_plan_free(p);

	/* Forced on one port, derived on the other: they differ, unset and warned. */
	fx_qos(x, a, LL_QOS_TRUST_DSCP, 1 << 3, 1 << 3);
	fx_qos(x, b, LL_QOS_TRUST_DSCP, 1 << 3, 1 << 3);
	x->ports[a][0].qos.dscp_prio[26] = x->ports[b][0].qos.dscp_prio[26] = 3;
	x->ports[a][0].qos.forced_tclass = 236;
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_TC", NULL);
	assert_lint(p, LL_LINT_WARNING, "NCCL_IB_TC", "mlx5_0:1 forced class 236, mlx5_1:1 class 106");
	ll_plan_free(p);
	/* Forced on both: the driver decides; a profile's other class is a warning, an equal one is not. */
	x->ports[b][0].qos.forced_tclass = 236;
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_TC", NULL);
	assert_reason_has(p, "NCCL_IB_TC", "the driver forces class 236 on mlx5_0:1, mlx5_1:1");
	ll_plan_free(p);
	x->profile[x->n_profile++] = (struct ll_assignment){ "NCCL_IB_TC", "41", "site.yaml:4" };
	p = fx_plan(x);
	assert_lint(p, LL_LINT_WARNING, "NCCL_IB_TC",
		    "NCCL_IB_TC=41 (profile site.yaml:4) contradicts class 236, which the driver forces on mlx5_0:1, "
		    "mlx5_1:1");
	ll_plan_free(p);
	x->profile[0].value = "236";
	p = fx_plan(x);
	assert_null(find_lint(p, "NCCL_IB_TC", "contradicts"));
	ll_plan_free(p);
	fx_free(x);
}

/* The NCCL version rules: the GID index from 2.21.5, NCCL_IB_FIFO_TC from 2.22.3, the
 * environment plugin from 2.28.3. */
static void t_nccl_version_rules(void **state)
{
	struct fx *x = fx_new(1, 4, 1);
	struct ll_nccl_plugin env_plugin = { LL_NCCL_PLUGIN_ENV, (char *)"/usr/lib/libnccl-env-site.so" };
	struct ll_nccl_lib lib = { .searched = true, .path = (char *)"/usr/lib/libnccl.so.2",
				   .source = "the dynamic linker's system directories", .major = 2, .minor = 20,
				   .patch = 5, .version_from = "file name" };
	struct ll_plan *p;
	int a;
	(void)state;

	a = fx_rdma(x, "mlx5_0", LL_PORT_ACTIVE, LL_LINK_LAYER_ETHERNET, 100);
	fx_gid(x, a, 3, LL_GID_TYPE_ROCE_V2, true);
	x->nccl = &lib;
	x->profile[x->n_profile++] = (struct ll_assignment){ "NCCL_IB_FIFO_TC", "84", "gib.yaml:2" };
	p = fx_plan(x);
	assert_val(p, "nccl_version", "2.20.5");
	assert_val(p, "NCCL_IB_GID_INDEX", "3");
	assert_reason_has(p, "NCCL_IB_GID_INDEX", "predates 2.21.5");
	assert_lint(p, LL_LINT_WARNING, "NCCL_IB_FIFO_TC", "NCCL_IB_FIFO_TC=84 (profile gib.yaml:2) means nothing to NCCL 2.20.5");
	ll_plan_free(p);

	lib.minor = 21;
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_GID_INDEX", NULL);
	assert_reason_has(p, "NCCL_IB_GID_INDEX", "NCCL 2.21.5 picks the RoCE v2 GID");
	assert_non_null(find_lint(p, "NCCL_IB_FIFO_TC", "means nothing"));
	ll_plan_free(p);

	lib.minor = 22;
	lib.patch = 3;
	lib.plugins = &env_plugin;
	lib.n_plugins = 1;
	p = fx_plan(x);
	assert_null(find_lint(p, "NCCL_IB_FIFO_TC", ""));
	assert_null(find_lint(p, "NCCL_ENV_PLUGIN", ""));
	ll_plan_free(p);

	lib.minor = 28;
	p = fx_plan(x);
	assert_lint(p, LL_LINT_WARNING, "NCCL_ENV_PLUGIN", "/usr/lib/libnccl-env-site.so, which can override");
	ll_plan_free(p);

	/* Unknown version: the index as for any NCCL, said so; the plugin is info. */
	lib.major = lib.minor = lib.patch = -1;
	lib.why_unknown = (char *)"no version in the file name";
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_GID_INDEX", "3");
	assert_reason_has(p, "NCCL_IB_GID_INDEX", "NCCL version unknown");
	assert_lint(p, LL_LINT_INFO, "NCCL_ENV_PLUGIN", "this NCCL's version is unknown");
	ll_plan_free(p);
	x->nccl = NULL;
	fx_free(x);
}

/* Link layer not recorded: a LID means InfiniBand. */
static void t_link_layer_inferred(void **state)
{
	struct fx *x = fx_new(1, 4, 1);
	struct ll_plan *p;
	(void)state;

	fx_rdma(x, "mlx5_0", LL_PORT_ACTIVE, LL_LINK_LAYER_UNKNOWN, -1);
	x->ports[0][0].lid = 0x153;
	fx_rdma(x, "mlx5_1", LL_PORT_ACTIVE, LL_LINK_LAYER_UNKNOWN, -1);
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_HCA", "=mlx5_0:1");
	assert_reason_has(p, "NCCL_IB_HCA", "inferred");
	assert_reason_has(p, "NCCL_IB_HCA", "mlx5_1:1 (link layer unknown while the chosen ports are InfiniBand)");
	assert_val(p, "LLMLAUNCH_NET_GBPS", NULL);
	ll_plan_free(p);
	fx_free(x);
}

static void t_visible_devices(void **state)
{
	struct fx *x = fx_new(2, 8, 1);
	struct ll_plan *p;
	(void)state;

	for (int i = 0; i < 4; i++)
		fx_gpu(x, i / 2);
	fx_env(x, "CUDA_VISIBLE_DEVICES=3,2");
	p = fx_plan(x);
	assert_val(p, "CUDA_VISIBLE_DEVICES", "3,2");
	assert_int_equal(ll_plan_get(p, "CUDA_VISIBLE_DEVICES")->source, LL_SOURCE_ENVIRONMENT);
	assert_reason_has(p, "CUDA_VISIBLE_DEVICES", "2 of 4 GPUs");
	assert_int_equal(p->nproc_per_node, 2);
	assert_int_equal(p->ranks[0].gpu, 3);
	assert_int_equal(p->ranks[1].gpu, 2);
	/* Both on NUMA node 1 (cores 8-15): four cores each, disjoint. */
	assert_string_equal(p->ranks[0].cpuset, "8-11");
	assert_string_equal(p->ranks[1].cpuset, "12-15");
	assert_val(p, "OMP_NUM_THREADS", "4");
	assert_val(p, "LLMLAUNCH_GPUS_PER_NODE", "2");
	ll_plan_free(p);

	/* UUIDs, then an invalid entry: CUDA stops there. */
	x->n_env = 0;
	fx_env(x, "CUDA_VISIBLE_DEVICES=GPU-000abc01,0,7,1");
	p = fx_plan(x);
	assert_int_equal(p->nproc_per_node, 2);
	assert_int_equal(p->ranks[0].gpu, 1);
	assert_int_equal(p->ranks[1].gpu, 0);
	assert_lint(p, LL_LINT_ERROR, "CUDA_VISIBLE_DEVICES", "entry '7' in CUDA_VISIBLE_DEVICES: no such GPU index");
	ll_plan_free(p);

	/* Slurm's allocation when CUDA_VISIBLE_DEVICES is absent. */
	x->n_env = 0;
	fx_env(x, "SLURM_JOB_GPUS=0,1,2");
	fx_env(x, "SLURM_STEP_GPUS=1");
	p = fx_plan(x);
	assert_val(p, "CUDA_VISIBLE_DEVICES", "1");
	assert_reason_has(p, "CUDA_VISIBLE_DEVICES", "from SLURM_STEP_GPUS");
	assert_int_equal(p->nproc_per_node, 1);
	assert_int_equal(p->ranks[0].gpu, 1);
	assert_string_equal(p->ranks[0].cpuset, "0-7");
	ll_plan_free(p);

	/* --set beats the environment. */
	x->cli[x->n_cli++] = (struct ll_assignment){ "CUDA_VISIBLE_DEVICES", "0", "--set" };
	p = fx_plan(x);
	assert_val(p, "CUDA_VISIBLE_DEVICES", "0");
	assert_int_equal(ll_plan_get(p, "CUDA_VISIBLE_DEVICES")->source, LL_SOURCE_CLI);
	assert_int_equal(p->ranks[0].gpu, 0);
	ll_plan_free(p);
	fx_free(x);
}

static void t_precedence(void **state)
{
	struct fx *x = two_gpu_ib();
	struct ll_plan *p;
	const struct ll_setting *s;
	(void)state;

	x->profile[x->n_profile++] = (struct ll_assignment){ "NCCL_IB_HCA", "=mlx5_0:1", "site.yaml:4" };
	x->profile[x->n_profile++] = (struct ll_assignment){ "NCCL_SOCKET_IFNAME", "auto", "site.yaml:5" };
	x->profile[x->n_profile++] = (struct ll_assignment){ "NCCL_IB_TIMEOUT", "22", "site.yaml:6" };
	x->profile[x->n_profile++] = (struct ll_assignment){ "bind", "core", "site.yaml:7" };
	p = fx_plan(x);
	s = ll_plan_get(p, "NCCL_IB_HCA");
	assert_string_equal(s->value, "=mlx5_0:1");
	assert_int_equal(s->source, LL_SOURCE_PROFILE);
	assert_string_equal(s->origin, "site.yaml:4");
	assert_reason_has(p, "NCCL_IB_HCA", "probe chose '=mlx5_0:1,mlx5_1:1'");
	assert_val(p, "NCCL_SOCKET_IFNAME", "=eth0");
	assert_int_equal(ll_plan_get(p, "NCCL_SOCKET_IFNAME")->source, LL_SOURCE_PROBE);
	assert_val(p, "NCCL_IB_TIMEOUT", "22");
	assert_true(ll_plan_get(p, "NCCL_IB_TIMEOUT")->exported);
	assert_int_equal(p->bind, LL_BIND_CORE);
	assert_string_equal(ll_plan_get(p, "bind")->origin, "site.yaml:7");
	ll_plan_free(p);

	fx_env(x, "NCCL_IB_HCA==mlx5_1:1");
	fx_env(x, "NCCL_IB_TIMEOUT=20");
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_HCA", "=mlx5_1:1");
	assert_int_equal(ll_plan_get(p, "NCCL_IB_HCA")->source, LL_SOURCE_ENVIRONMENT);
	assert_val(p, "NCCL_IB_TIMEOUT", "20");
	ll_plan_free(p);

	x->cli[x->n_cli++] = (struct ll_assignment){ "NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1", "--set" };
	x->bind = LL_BIND_NONE;
	x->bind_cli = true;
	x->nproc = 1;
	p = fx_plan(x);
	s = ll_plan_get(p, "NCCL_IB_HCA");
	assert_string_equal(s->value, "=mlx5_0:1,mlx5_1:1");
	assert_int_equal(s->source, LL_SOURCE_CLI);
	assert_reason_has(p, "NCCL_IB_HCA", "environment chose '=mlx5_1:1'");
	assert_int_equal(p->bind, LL_BIND_NONE);
	assert_int_equal(p->nproc_per_node, 1);
	assert_int_equal(p->n_ranks, 1);
	assert_null(p->ranks[0].cpuset);
	assert_int_equal(p->ranks[0].numa_node, -1);

	/* Stage 3 writes over the plan. */
	ll_plan_set(p, "NCCL_SOCKET_IFNAME", "=ib0", LL_SOURCE_CLUSTER, NULL, "the interface every node has", true);
	s = ll_plan_get(p, "NCCL_SOCKET_IFNAME");
	assert_string_equal(s->value, "=ib0");
	assert_int_equal(s->source, LL_SOURCE_CLUSTER);
	ll_plan_set(p, "torchrun.nnodes", "4", LL_SOURCE_CLUSTER, NULL, "agreed", false);
	assert_int_equal(p->nnodes, 4);
	ll_plan_free(p);
	fx_free(x);
}

static void t_placement_modes(void **state)
{
	struct fx *x = fx_new(2, 4, 2); /* PUs: core c = {c, c+8} */
	struct ll_plan *p;
	(void)state;

	/* CPU only, one worker: every core. */
	p = fx_plan(x);
	assert_val(p, "CUDA_DEVICE_ORDER", NULL);
	assert_val(p, "torchrun.nproc_per_node", "1");
	assert_int_equal(ll_plan_get(p, "torchrun.nproc_per_node")->source, LL_SOURCE_DEFAULT);
	assert_string_equal(p->ranks[0].cpuset, "0-15");
	assert_int_equal(p->ranks[0].numa_node, -1);
	assert_val(p, "OMP_NUM_THREADS", "8");
	ll_plan_free(p);

	/* CPU only, two workers: one NUMA node each. */
	x->nproc = 2;
	p = fx_plan(x);
	assert_string_equal(p->ranks[0].cpuset, "0-3,8-11");
	assert_int_equal(p->ranks[0].numa_node, 0);
	assert_string_equal(p->ranks[1].cpuset, "4-7,12-15");
	assert_int_equal(p->ranks[1].numa_node, 1);
	assert_val(p, "OMP_NUM_THREADS", "4");
	ll_plan_free(p);

	/* core mode: one hardware thread per core; cores-per-rank from --set. */
	x->bind = LL_BIND_CORE;
	x->bind_cli = true;
	x->cli[x->n_cli++] = (struct ll_assignment){ "cores-per-rank", "3", "--set" };
	p = fx_plan(x);
	assert_string_equal(p->ranks[0].cpuset, "0-2");
	assert_string_equal(p->ranks[1].cpuset, "3-5");
	assert_int_equal(p->ranks[1].n_cores, 3);
	assert_val(p, "OMP_NUM_THREADS", "3");
	ll_plan_free(p);

	/* More ranks than cores. */
	x->n_cli = 0;
	x->bind = LL_BIND_NUMA;
	x->nproc = 10;
	p = fx_plan(x);
	assert_int_equal(p->n_ranks, 10);
	assert_string_equal(p->ranks[9].cpuset, "1,9");
	assert_lint(p, LL_LINT_WARNING, "torchrun.nproc_per_node", "more ranks than cores");
	ll_plan_free(p);
	fx_free(x);
}

static void t_interfaces(void **state)
{
	struct fx *x = fx_new(1, 2, 1);
	struct ll_netif *n;
	struct ll_plan *p;
	(void)state;

	/* Only loopback and docker: fine for one node, an error for several. */
	fx_netif(x, "docker0", LL_NETIF_DOCKER, "172.17.0.1");
	fx_netif(x, "lo", LL_NETIF_LOOPBACK, "127.0.0.1");
	n = fx_netif(x, "eth0", LL_NETIF_ETHERNET, NULL);
	n->running = LL_NO;
	p = fx_plan(x);
	assert_val(p, "NCCL_SOCKET_IFNAME", "=lo");
	assert_reason_has(p, "NCCL_SOCKET_IFNAME", "fine on a single node");
	assert_reason_has(p, "NCCL_SOCKET_IFNAME", "eth0 (not running)");
	ll_plan_free(p);
	x->nnodes = 2;
	p = fx_plan(x);
	assert_val(p, "NCCL_SOCKET_IFNAME", NULL);
	assert_val(p, "LLMLAUNCH_NNODES", "2");
	assert_lint(p, LL_LINT_ERROR, "NCCL_SOCKET_IFNAME", "no interface for traffic between nodes");
	ll_plan_free(p);
	fx_free(x);

	/* Addresses unknown: decided by kind and name, and said so; IPoIB after Ethernet. */
	x = fx_new(1, 2, 1);
	n = fx_netif(x, "ib0", LL_NETIF_INFINIBAND, NULL);
	n->addrs_known = false;
	n->operstate = NULL;
	n->up = n->running = LL_UNKNOWN;
	/* As the facts give it from a plain export (ll_netif_kind_infer). */
	n = fx_netif(x, "enp1s0", LL_NETIF_ETHERNET, NULL);
	n->kind_inferred = true;
	n->addrs_known = false;
	n->operstate = NULL;
	n->up = n->running = LL_UNKNOWN;
	n->busid = "0000:01:00.0";
	n->mac = "08:00:38:c0:46:b3";
	p = fx_plan(x);
	assert_val(p, "NCCL_SOCKET_IFNAME", "=enp1s0");
	assert_reason_has(p, "NCCL_SOCKET_IFNAME", "state and addresses unknown");
	assert_reason_has(p, "NCCL_SOCKET_IFNAME", "kind inferred from its 6-byte MAC");
	ll_plan_free(p);
	fx_free(x);

	/* An Ethernet port with only IPv6 link-local is unaddressed; IPoIB wins. */
	x = fx_new(1, 2, 1);
	n = fx_netif(x, "eth0", LL_NETIF_ETHERNET, NULL);
	n->addrs[0] = (struct ll_addr){ AF_INET6, "fe80::1", 64 };
	n->n_addrs = 1;
	fx_netif(x, "ib0", LL_NETIF_INFINIBAND, "10.9.0.1");
	p = fx_plan(x);
	assert_val(p, "NCCL_SOCKET_IFNAME", "=ib0");
	assert_val(p, "GLOO_SOCKET_IFNAME", "ib0");
	assert_reason_has(p, "NCCL_SOCKET_IFNAME", "eth0 (no address)");
	ll_plan_free(p);
	fx_free(x);
}

static void t_lint_debug(void **state)
{
	struct fx *x = two_gpu_ib();
	struct ll_plan *p;
	(void)state;

	fx_env(x, "NCCL_DEBUG=TRACE");
	fx_env(x, "NCCL_DEBUG_FILE=/tmp/nccl.%h.log");
	fx_env(x, "NCCL_IB_DISABLE=1");
	fx_env(x, "NCCL_P2P_DISABLE=1");
	fx_env(x, "GLOO_SOCKET_IFNAME=eth7");
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_DISABLE", "1");
	assert_lint(p, LL_LINT_WARNING, "NCCL_DEBUG", "TRACE is for debugging NCCL itself");
	assert_lint(p, LL_LINT_WARNING, "NCCL_DEBUG_FILE", "lacks %p");
	assert_lint(p, LL_LINT_WARNING, "NCCL_IB_DISABLE", "while 2 InfiniBand ports are ACTIVE");
	assert_lint(p, LL_LINT_WARNING, "NCCL_P2P_DISABLE", "peer-to-peer");
	assert_lint(p, LL_LINT_WARNING, "GLOO_SOCKET_IFNAME", "'eth7' names no network interface");
	ll_plan_free(p);

	x->n_env = 0;
	fx_env(x, "NCCL_DEBUG=INFO");
	fx_env(x, "NCCL_DEBUG_SUBSYS=INIT,ALL");
	p = fx_plan(x);
	assert_lint(p, LL_LINT_WARNING, "NCCL_DEBUG_SUBSYS", "logs every subsystem");
	ll_plan_free(p);
	fx_free(x);
}

static void t_summary(void **state)
{
	struct fx *x = two_gpu_ib();
	struct ll_buf b;
	(void)state;

	ll_buf_init(&b);
	assert_int_equal(ll_plan_parallelism_summary(&x->f, &b), 0);
	assert_string_equal(b.s, "2 GPUs per node, NVLink domain of 1; network between nodes: InfiniBand (400 Gb/s "
				 "per node); 1 node. No NVLink between GPUs: tensor parallelism would cross PCIe; "
				 "prefer data parallelism (FSDP/ZeRO sharding to save memory) and pipeline stages "
				 "if the model does not fit one GPU.");
	ll_buf_release(&b);
	fx_free(x);
}

/* An export without I/O objects: no GPU, RDMA device or interface can be said to
 * exist or not. Nothing is set from that silence, and the advice says so. */
static void t_unknown_io(void **state)
{
	struct fx *x = fx_new(2, 4, 1);
	struct ll_plan *p;
	struct ll_buf b;
	(void)state;

	x->f.gpus_known = false;
	x->f.netdevs_known = false;
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_DISABLE", NULL);
	assert_reason_has(p, "NCCL_IB_DISABLE", "network and RDMA devices unknown");
	assert_val(p, "NCCL_IB_HCA", NULL);
	assert_val(p, "NCCL_SOCKET_IFNAME", NULL);
	assert_reason_has(p, "NCCL_SOCKET_IFNAME", "no network OS devices");
	assert_val(p, "CUDA_DEVICE_ORDER", NULL);
	assert_reason_has(p, "CUDA_DEVICE_ORDER", "GPUs unknown");
	assert_val(p, "LLMLAUNCH_GPUS_PER_NODE", NULL);
	assert_val(p, "LLMLAUNCH_NVLINK_DOMAIN", NULL);
	assert_val(p, "LLMLAUNCH_NET", "unknown");
	assert_val(p, "NCCL_NET_GDR_LEVEL", NULL);
	assert_reason_has(p, "NCCL_NET_GDR_LEVEL", "RDMA devices unknown");
	assert_val(p, "torchrun.nproc_per_node", "1");
	assert_lint(p, LL_LINT_WARNING, "torchrun.nproc_per_node", "the number of GPUs is unknown");
	ll_buf_init(&b);
	ll_plan_summary(p, &b);
	assert_string_equal(b.s, "GPUs unknown (the topology has no PCI objects); network between nodes: unknown; "
				 "1 node. No layout advice without the GPUs: probe the node itself, or give an export "
				 "made with I/O ('lstopo --of xml' keeps GPUs and NICs by default).");
	ll_buf_release(&b);
	ll_plan_free(p);

	/* The PCI tree is there but no network OS device: GPUs are facts, RDMA is not. */
	x->f.gpus_known = true;
	fx_gpu(x, 0);
	p = fx_plan(x);
	assert_val(p, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
	assert_val(p, "LLMLAUNCH_GPUS_PER_NODE", "1");
	assert_val(p, "NCCL_IB_DISABLE", NULL);
	assert_val(p, "LLMLAUNCH_NET", "unknown");
	ll_plan_free(p);

	/* The same node known to have no RDMA device: then, and only then, sockets. */
	x->f.netdevs_known = true;
	p = fx_plan(x);
	assert_val(p, "NCCL_IB_DISABLE", "1");
	assert_reason_has(p, "NCCL_IB_DISABLE", "no RDMA device on this node");
	assert_val(p, "LLMLAUNCH_NET", "socket");
	ll_plan_free(p);
	fx_free(x);
}

/* GPUs known from PCI but their links not (no NVML data): the domain is unknown,
 * and the advice does not conclude "no NVLink". */
static void t_unknown_nvlink(void **state)
{
	struct fx *x = two_gpu_ib();
	struct ll_plan *p;
	struct ll_buf b;
	(void)state;

	x->gpus[0].links_known = false;
	x->gpus[1].links_known = false;
	x->f.source = "snapshot:a100.xml";
	p = fx_plan(x);
	assert_val(p, "LLMLAUNCH_NVLINK_DOMAIN", NULL);
	assert_reason_has(p, "LLMLAUNCH_NVLINK_DOMAIN", "NVLink unknown: this export has no NVML data");
	ll_buf_init(&b);
	ll_plan_summary(p, &b);
	assert_string_equal(b.s, "2 GPUs per node, NVLink unknown; network between nodes: InfiniBand (400 Gb/s per "
				 "node); 1 node. NVLink unknown: this export has no NVML data; whether tensor "
				 "parallelism stays on NVLink or crosses PCIe cannot be said: check 'nvidia-smi topo "
				 "-m' on the node (NV# entries), or probe the node itself.");
	assert_null(strstr(b.s, "No NVLink between GPUs"));
	ll_buf_release(&b);
	ll_plan_free(p);

	/* Live, NVML silent: the reason names NVML on this node, not an export. */
	x->f.source = "live";
	p = fx_plan(x);
	assert_reason_has(p, "LLMLAUNCH_NVLINK_DOMAIN", "NVML gave no answer on this node");
	ll_plan_free(p);

	/* One GPU known, the other not: still unknown, the domain needs both. */
	x->gpus[0].links_known = true;
	p = fx_plan(x);
	assert_val(p, "LLMLAUNCH_NVLINK_DOMAIN", NULL);
	ll_plan_free(p);
	/* ... unless only the known one is the workers'. */
	fx_env(x, "CUDA_VISIBLE_DEVICES=0");
	p = fx_plan(x);
	assert_val(p, "LLMLAUNCH_NVLINK_DOMAIN", "1");
	assert_reason_has(p, "LLMLAUNCH_NVLINK_DOMAIN", "one GPU");
	ll_plan_free(p);
	fx_free(x);
}

/* The domain counts the workers' GPUs only: two visible GPUs of an NVSwitch board. */
static void t_domain_of_visible(void **state)
{
	struct fx *x = fx_new(1, 8, 1);
	struct ll_nvlink links[4];
	struct ll_plan *p;
	(void)state;

	for (int i = 0; i < 4; i++) {
		fx_gpu(x, 0);
		links[i] = (struct ll_nvlink){ .remote = LL_NVLINK_REMOTE_NVSWITCH, .remote_gpu = -1,
					       .bandwidth_mbps = 450000 };
		x->gpus[i].nvlinks = &links[i];
		x->gpus[i].n_nvlinks = 1;
	}
	p = fx_plan(x);
	assert_val(p, "LLMLAUNCH_NVLINK_DOMAIN", "4");
	ll_plan_free(p);
	fx_env(x, "CUDA_VISIBLE_DEVICES=1,3");
	p = fx_plan(x);
	assert_val(p, "LLMLAUNCH_NVLINK_DOMAIN", "2");
	assert_reason_has(p, "LLMLAUNCH_NVLINK_DOMAIN", "joined by NVLink/NVSwitch");
	ll_plan_free(p);
	fx_free(x);
}

static void fx_conf(struct fx *x, const char *name, const char *value, const char *origin)
{
	x->conf[x->n_conf++] = (struct ll_assignment){ fx_str(x, "%s", name), fx_str(x, "%s", value),
						       fx_str(x, "%s", origin) };
}

static const struct ll_conf_line *conf_at(const struct ll_plan *p, const char *origin)
{
	for (size_t i = 0; i < p->n_conf; i++)
		if (strcmp(p->conf[i].origin, origin) == 0)
			return &p->conf[i];
	fail_msg("no conf line %s", origin);
	return NULL;
}

/* NCCL's own files: the environment wins over them, the first file over later
 * ones; a conflict with what llmlaunch exports says which value NCCL uses. */
static const struct ll_lint *lint_on(const struct ll_plan *p, const char *var);

static void t_nccl_conf(void **state)
{
	struct fx *x = two_gpu_ib();
	const struct ll_setting *st;
	struct ll_plan *p;
	(void)state;

	fx_conf(x, "NCCL_IB_HCA", "mlx5_0", "/tmp/job.conf:2");
	fx_conf(x, "NCCL_TOPO_FILE", "/opt/microsoft/ndv4/topo.xml", "/etc/nccl.conf:2");
	fx_conf(x, "NCCL_IB_HCA", "mlx5_1", "/etc/nccl.conf:3");
	fx_conf(x, "NCCL_IB_DISABLE", "1", "/etc/nccl.conf:4");
	fx_conf(x, "export NCCL_DEBUG", "WARN", "/etc/nccl.conf:5");
	fx_conf(x, "NCCL_SOCKET_NTHREADS", "4", "/etc/nccl.conf:6");
	fx_env(x, "NCCL_SOCKET_NTHREADS=8");
	p = fx_plan(x);

	/* llmlaunch exports its list: the environment wins, NCCL uses it. */
	assert_val(p, "NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1");
	assert_lint(p, LL_LINT_WARNING, "NCCL_IB_HCA",
		    "/tmp/job.conf:2 sets NCCL_IB_HCA=mlx5_0, but NCCL uses '=mlx5_0:1,mlx5_1:1' (probe): the "
		    "environment wins over NCCL's configuration files (NCCL src/misc/param.cc sets their lines with "
		    "setenv(..., 0)); remove the line, or keep its value with --set NCCL_IB_HCA=mlx5_0");
	assert_false(conf_at(p, "/tmp/job.conf:2")->used);
	assert_string_equal(conf_at(p, "/tmp/job.conf:2")->note,
			    "the environment wins: NCCL uses '=mlx5_0:1,mlx5_1:1' (probe)");
	/* The later file's line for the same variable never counts. */
	assert_string_equal(conf_at(p, "/etc/nccl.conf:3")->note,
			    "shadowed by /tmp/job.conf:2: NCCL keeps the first value it reads");
	/* A variable llmlaunch does not set: NCCL takes the file's value, shown as such. */
	st = ll_plan_get(p, "NCCL_TOPO_FILE");
	assert_non_null(st);
	assert_string_equal(st->value, "/opt/microsoft/ndv4/topo.xml");
	assert_int_equal(st->source, LL_SOURCE_NCCL_CONF);
	assert_string_equal(st->origin, "/etc/nccl.conf:2");
	assert_false(st->exported);
	assert_true(conf_at(p, "/etc/nccl.conf:2")->used);
	/* One the planner left unset on purpose: the file decides, the reason keeps both,
	 * and the lint judges it as any value the user brought. */
	assert_val(p, "NCCL_IB_DISABLE", "1");
	assert_int_equal(ll_plan_get(p, "NCCL_IB_DISABLE")->source, LL_SOURCE_NCCL_CONF);
	assert_reason_has(p, "NCCL_IB_DISABLE", "set in /etc/nccl.conf:4, which NCCL reads itself; probe left it unset");
	assert_lint(p, LL_LINT_WARNING, "NCCL_IB_DISABLE", "while 2 InfiniBand ports are ACTIVE");
	ll_plan_free(p);

	/* ... as long as nothing exports it: with the plan's value NULL, the file's is
	 * what ll_plan_value gives (what NCCL will use). */
	x->n_conf = 0;
	fx_conf(x, "NCCL_IB_GID_INDEX", "3", "/etc/nccl.conf:1");
	p = fx_plan(x);
	st = ll_plan_get(p, "NCCL_IB_GID_INDEX");
	assert_non_null(st);
	assert_string_equal(st->value, "3");
	assert_string_equal(st->reason, "set in /etc/nccl.conf:1, which NCCL reads itself");
	ll_plan_free(p);

	/* The inherited environment wins too; a name NCCL reads with its prefix is a warning. */
	x->n_conf = 0;
	fx_conf(x, "NCCL_SOCKET_NTHREADS", "4", "/etc/nccl.conf:6");
	fx_conf(x, "export NCCL_DEBUG", "WARN", "/etc/nccl.conf:5");
	x->conf_unreadable = "/nonexistent/nccl.conf";
	p = fx_plan(x);
	assert_string_equal(conf_at(p, "/etc/nccl.conf:6")->note,
			    "the environment wins: NCCL uses '8' (inherited environment)");
	assert_lint(p, LL_LINT_WARNING, "NCCL_SOCKET_NTHREADS", "but NCCL uses '8' (inherited environment)");
	assert_lint(p, LL_LINT_WARNING, NULL, "here 'export NCCL_DEBUG'");
	assert_lint(p, LL_LINT_WARNING, "NCCL_CONF_FILE", "'/nonexistent/nccl.conf' cannot be read");
	assert_false(lint_on(p, "NCCL_CONF_FILE")->blocking);
	ll_plan_free(p);
	/* A FIFO or a device is no file NCCL ignores: it blocks or never ends. */
	x->conf_unreadable = "/dev/zero";
	x->conf_unreadable_why = "a character device";
	x->conf_blocks = true;
	p = fx_plan(x);
	assert_lint(p, LL_LINT_ERROR, "NCCL_CONF_FILE", "'/dev/zero' is a character device, not a regular file");
	assert_true(lint_on(p, "NCCL_CONF_FILE")->blocking);
	ll_plan_free(p);
	fx_free(x);
}

static const struct ll_lint *lint_on(const struct ll_plan *p, const char *var)
{
	for (size_t i = 0; i < p->n_lints; i++)
		if (ll_streq(p->lints[i].variable, var))
			return &p->lints[i];
	return NULL;
}

/* The plumbing RDMA needs: pinned memory, the uverbs devices, GPUDirect. */
static void t_plumbing(void **state)
{
	struct fx *x = two_gpu_ib();
	const struct ll_lint *l;
	struct ll_plan *p;
	(void)state;

	/* A container's 64 KiB, no CAP_IPC_LOCK: registration fails, run must not start. */
	x->limits = (struct ll_process_limits){ .known = true, .memlock_bytes = 65536, .ipc_lock = LL_NO };
	p = fx_plan(x);
	l = lint_on(p, "RLIMIT_MEMLOCK");
	assert_non_null(l);
	assert_int_equal(l->level, LL_LINT_ERROR);
	assert_true(l->blocking);
	assert_string_equal(l->message,
			    "the locked-memory limit is 64 KiB (ulimit -l 64) and this process lacks CAP_IPC_LOCK: "
			    "NCCL's RDMA memory registration will fail ('NCCL WARN Call to ibv_reg_mr failed'); raise it "
			    "to unlimited: '* soft memlock unlimited' and '* hard memlock unlimited' in "
			    "/etc/security/limits.conf (then log in again), 'docker run --ulimit memlock=-1', or "
			    "LimitMEMLOCK=infinity in slurmd's systemd unit");
	ll_plan_free(p);
	/* Large but limited: a warning, no block. */
	x->limits.memlock_bytes = 8ULL << 30;
	p = fx_plan(x);
	l = lint_on(p, "RLIMIT_MEMLOCK");
	assert_int_equal(l->level, LL_LINT_WARNING);
	assert_false(l->blocking);
	assert_non_null(strstr(l->message, "8 GiB"));
	ll_plan_free(p);
	/* Root with CAP_IPC_LOCK: the limit does not apply, said as info. */
	x->limits = (struct ll_process_limits){ .known = true, .memlock_bytes = 65536, .ipc_lock = LL_YES };
	p = fx_plan(x);
	l = lint_on(p, "RLIMIT_MEMLOCK");
	assert_int_equal(l->level, LL_LINT_INFO);
	assert_false(l->blocking);
	ll_plan_free(p);
	/* Unlimited, or no RDMA planned: nothing. */
	x->limits = (struct ll_process_limits){ .known = true, .memlock_unlimited = true, .ipc_lock = LL_NO };
	p = fx_plan(x);
	assert_null(lint_on(p, "RLIMIT_MEMLOCK"));
	ll_plan_free(p);

	/* The uverbs devices: missing in a container, unreadable, or ib_uverbs not loaded. */
	x->rdma[0].uverbs = "uverbs0";
	x->rdma[0].uverbs_access = LL_UVERBS_MISSING;
	x->rdma[1].uverbs = "";
	p = fx_plan(x);
	assert_lint(p, LL_LINT_WARNING, "NCCL_IB_HCA",
		    "/dev/infiniband/uverbs0 (mlx5_0) missing: a container without the RDMA devices; NCCL finds none "
		    "and uses TCP sockets; pass them in: docker run --device=/dev/infiniband");
	assert_lint(p, LL_LINT_WARNING, "NCCL_IB_HCA",
		    "mlx5_1: no user-space verbs device (the kernel module ib_uverbs is not loaded)");
	ll_plan_free(p);
	x->rdma[0].uverbs_access = LL_UVERBS_DENIED;
	x->rdma[1].uverbs = "uverbs1";
	x->rdma[1].uverbs_access = LL_UVERBS_OK;
	p = fx_plan(x);
	assert_lint(p, LL_LINT_WARNING, "NCCL_IB_HCA", "/dev/infiniband/uverbs0 (mlx5_0) not readable and writable");
	ll_plan_free(p);
	x->rdma[0].uverbs_access = LL_UVERBS_OK;

	/* GPUDirect RDMA: no peer-memory module, and the proprietary driver has no DMA-BUF. */
	x->f.gdr_ready = LL_NO;
	x->f.nvidia_open_module = LL_NO;
	x->f.dmabuf = LL_NO;
	p = fx_plan(x);
	assert_val(p, "NCCL_NET_GDR_LEVEL", NULL);
	assert_lint(p, LL_LINT_WARNING, "NCCL_NET_GDR_LEVEL",
		    "GPUDirect RDMA is off: nvidia_peermem is not loaded and DMA-BUF is not usable (NVIDIA's "
		    "proprietary kernel module exports no DMA-BUF): NCCL copies every transfer through host memory; "
		    "load the module: sudo modprobe nvidia-peermem");
	ll_plan_free(p);
	/* DMA-BUF (open module, Linux 5.12+) is GPUDirect RDMA without the module. */
	x->f.nvidia_open_module = LL_YES;
	x->f.dmabuf = LL_YES;
	p = fx_plan(x);
	assert_val(p, "NCCL_NET_GDR_LEVEL", "PIX");
	assert_reason_has(p, "NCCL_NET_GDR_LEVEL", "through DMA-BUF");
	assert_null(lint_on(p, "NCCL_NET_GDR_LEVEL"));
	ll_plan_free(p);
	fx_free(x);
}

/* ---- multi-node NVLink (lint-mnnvl.c) ---- */

static const char *lint_message(const struct ll_plan *p, const char *var, size_t nth)
{
	for (size_t i = 0; i < p->n_lints; i++)
		if (ll_streq(p->lints[i].variable, var) && nth-- == 0)
			return p->lints[i].message;
	for (size_t i = 0; i < p->n_lints; i++)
		print_message("lint: %s: %s\n", p->lints[i].variable, p->lints[i].message);
	fail_msg("no lint #%zu on %s", nth, var);
	return NULL;
}

static size_t lints_on(const struct ll_plan *p, const char *var)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n_lints; i++)
		n += ll_streq(p->lints[i].variable, var);
	return n;
}

/* A GB200 tray: 4 GPUs registered in clique 1, one IMEX channel this user opens. */
static struct fx *fx_nvl72(void)
{
	struct fx *x = fx_new(2, 4, 1);

	for (int g = 0; g < 4; g++) {
		int i = fx_gpu(x, g / 2);
		x->gpus[i].nvfabric.state = LL_FABRIC_COMPLETED;
		x->gpus[i].nvfabric.status = 0;
		x->gpus[i].nvfabric.cluster_uuid = fx_str(x, "c1000000-0000-0000-0000-000000000001");
		x->gpus[i].nvfabric.clique_id = 1;
		x->gpus[i].nvfabric.health_mask = 0x2;
	}
	x->f.imex_channels = 1;
	x->f.imex_access = LL_YES;
	return x;
}

static void t_mnnvl_lints(void **state)
{
	struct fx *x;
	struct ll_plan *p;

	(void)state;
	/* A healthy tray: nothing to say. */
	x = fx_nvl72();
	p = fx_plan(x);
	assert_int_equal(lints_on(p, "MNNVL") + lints_on(p, "IMEX"), 0);
	ll_plan_free(p);

	/* NCCL_MNNVL_ENABLE=0 from the environment, NCCL_CUMEM_ENABLE=0 from a profile;
	 * with MNNVL off a missing IMEX channel does not matter. */
	x->f.imex_channels = 0;
	fx_env(x, "NCCL_MNNVL_ENABLE=0");
	x->profile[x->n_profile++] = (struct ll_assignment){ "NCCL_CUMEM_ENABLE", "0", "nvl72.yaml:3" };
	p = fx_plan(x);
	assert_string_equal(lint_message(p, "NCCL_MNNVL_ENABLE", 0),
			    "0 turns multi-node NVLink off: this node's GPUs would reach the rest of their NVLink "
			    "clique over the network; unset NCCL_MNNVL_ENABLE (NCCL's default uses it where the "
			    "fabric allows)");
	assert_string_equal(lint_message(p, "NCCL_CUMEM_ENABLE", 0),
			    "0 turns multi-node NVLink off (NCCL needs cuMem memory for it): this node's GPUs would "
			    "reach the rest of their NVLink clique over the network; unset NCCL_CUMEM_ENABLE");
	assert_int_equal(lints_on(p, "IMEX"), 0);
	ll_plan_free(p);
	fx_free(x);

	/* No IMEX channel; then one this user cannot open. */
	x = fx_nvl72();
	x->f.imex_channels = 0;
	p = fx_plan(x);
	assert_string_equal(lint_message(p, "IMEX", 0),
			    "no IMEX channel on this node (/dev/nvidia-caps-imex-channels/channel0 is missing): NCCL "
			    "stops a multi-node job ('MNNVL ... is available but not working'); create it as root "
			    "(mknod /dev/nvidia-caps-imex-channels/channel0 c MAJOR 0, MAJOR from /proc/devices), "
			    "pass it into the container, or set NCCL_MNNVL_ENABLE=0");
	ll_plan_free(p);
	x->f.imex_channels = 1;
	x->f.imex_access = LL_NO;
	p = fx_plan(x);
	assert_string_equal(lint_message(p, "IMEX", 0),
			    "the IMEX channel is not readable and writable by this user: CUDA cannot import other "
			    "nodes' memory and NCCL stops a multi-node job; make it mode 0666 (as NVIDIA's IMEX guide "
			    "creates channel0) or give the user access");
	ll_plan_free(p);
	/* Unknown channels (a snapshot without /dev): never guessed missing. */
	x->f.imex_channels = -1;
	p = fx_plan(x);
	assert_int_equal(lints_on(p, "IMEX"), 0);
	ll_plan_free(p);
	fx_free(x);

	/* IMEX's node list: this node's address in it, not in it, BIND_INTERFACE_IP not in
	 * it, the list missing; unreadable (NULL) says nothing. */
	x = fx_nvl72();
	fx_netif(x, "eth0", LL_NETIF_ETHERNET, "198.51.100.7");
	x->f.imex_nodes_file = fx_str(x, "/etc/nvidia-imex/nodes_config.cfg");
	x->f.imex_nodes = fx_str(x, "198.51.100.1,198.51.100.7,fd00::3");
	p = fx_plan(x);
	assert_int_equal(lints_on(p, "IMEX"), 0);
	ll_plan_free(p);
	x->f.imex_nodes = fx_str(x, "198.51.100.1,198.51.100.70");
	p = fx_plan(x);
	assert_string_equal(lint_message(p, "IMEX", 0),
			    "none of this node's addresses (198.51.100.7) is in IMEX's node list "
			    "/etc/nvidia-imex/nodes_config.cfg (2 addresses): the IMEX service finds its own address "
			    "there, so this node cannot join the IMEX domain and NCCL stops a multi-node job; add the "
			    "node's address to the list on every node of the domain and restart nvidia-imex (it reads "
			    "the list only at start)");
	ll_plan_free(p);
	x->f.imex_bind = fx_str(x, "198.51.100.9");
	p = fx_plan(x);
	assert_string_equal(lint_message(p, "IMEX", 0),
			    "IMEX binds to 198.51.100.9 (BIND_INTERFACE_IP in /etc/nvidia-imex/config.cfg), which its "
			    "node list /etc/nvidia-imex/nodes_config.cfg (2 addresses) does not hold: this node cannot "
			    "join the IMEX domain and NCCL stops a multi-node job; add the address to the list on every "
			    "node and restart nvidia-imex");
	ll_plan_free(p);
	x->f.imex_bind = NULL;
	x->f.imex_nodes = NULL;
	p = fx_plan(x);
	assert_int_equal(lints_on(p, "IMEX"), 0);
	ll_plan_free(p);
	x->f.imex_nodes_missing = true;
	p = fx_plan(x);
	assert_string_equal(lint_message(p, "IMEX", 0),
			    "IMEX's node list /etc/nvidia-imex/nodes_config.cfg (named by /etc/nvidia-imex/config.cfg) "
			    "does not exist: the IMEX service has no domain to join and CUDA cannot import other nodes' "
			    "memory; NCCL stops a multi-node job; write the domain's node addresses there, one a line, "
			    "and restart nvidia-imex");
	ll_plan_free(p);
	fx_free(x);

	/* Fabric states: in progress, failed, degraded bandwidth. */
	x = fx_nvl72();
	x->gpus[0].nvfabric.state = LL_FABRIC_IN_PROGRESS;
	x->gpus[1].nvfabric.status = 999;
	x->gpus[2].nvfabric.health_mask = 0x1;
	p = fx_plan(x);
	assert_int_equal(lints_on(p, "MNNVL"), 3);
	assert_string_equal(lint_message(p, "MNNVL", 0),
			    "NVLink fabric registration not completed on GPU 0000:10:00.0 (in-progress): NCCL uses "
			    "multi-node NVLink only when every GPU of the job completed it; wait for the fabric manager, "
			    "or check it on the NVLink switch trays (nvidia-smi -q, section Fabric)");
	assert_string_equal(lint_message(p, "MNNVL", 1),
			    "NVLink fabric registration failed on GPU 0000:20:00.0 (NVML status 999): NCCL uses "
			    "multi-node NVLink only when every GPU of the job completed it; drain the node and check "
			    "nvidia-smi -q (section Fabric) and the fabric manager's log");
	assert_string_equal(lint_message(p, "MNNVL", 2),
			    "NVLink fabric bandwidth is degraded on GPU 0000:30:00.0 (health mask 0x00000001): "
			    "multi-node NVLink runs slower here than on the other nodes; check the GPU's NVLinks and "
			    "the switch trays (nvidia-smi -q, section Fabric)");
	ll_plan_free(p);
	fx_free(x);

	/* One GPU in another clique than the rest of the node. */
	x = fx_nvl72();
	x->gpus[3].nvfabric.clique_id = 2;
	p = fx_plan(x);
	assert_int_equal(lints_on(p, "MNNVL"), 1);
	assert_string_equal(lint_message(p, "MNNVL", 0),
			    "this node's GPUs are in different NVLink cliques (GPU 0000:10:00.0: clique 1 of domain "
			    "c1000000-0000-0000-0000-000000000001, GPU 0000:40:00.0: clique 2 of domain "
			    "c1000000-0000-0000-0000-000000000001): the agreement orders nodes by the first GPU's clique "
			    "and NCCL puts the others' traffic on the network; check the fabric manager's partitions "
			    "(nvidia-smi -q, section Fabric)");
	ll_plan_free(p);
	fx_free(x);

	/* Every GPU pending: four named, then a count. */
	x = fx_nvl72();
	for (int g = 0; g < 4; g++)
		fx_gpu(x, 1);
	for (int g = 0; g < 8; g++) {
		x->gpus[g].nvfabric.state = LL_FABRIC_NOT_STARTED;
	}
	p = fx_plan(x);
	assert_string_equal(lint_message(p, "MNNVL", 0),
			    "NVLink fabric registration not completed on GPU 0000:10:00.0 (not-started), 0000:20:00.0 "
			    "(not-started), 0000:30:00.0 (not-started), 0000:40:00.0 (not-started) and 4 more: NCCL "
			    "uses multi-node NVLink only when every GPU of the job completed it; wait for the fabric "
			    "manager, or check it on the NVLink switch trays (nvidia-smi -q, section Fabric)");
	ll_plan_free(p);
	fx_free(x);

	/* GPUs outside any fabric (an HGX H100): no MNNVL lint, even with the switches off. */
	x = fx_new(1, 4, 1);
	fx_gpu(x, 0);
	x->gpus[0].nvfabric.state = LL_FABRIC_NOT_SUPPORTED;
	fx_env(x, "NCCL_MNNVL_ENABLE=0");
	p = fx_plan(x);
	assert_int_equal(lints_on(p, "NCCL_MNNVL_ENABLE") + lints_on(p, "IMEX") + lints_on(p, "MNNVL"), 0);
	ll_plan_free(p);
	fx_free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_ib_node),
		cmocka_unit_test(t_transport_once),
		cmocka_unit_test(t_prefix_trap),
		cmocka_unit_test(t_down_and_minority),
		cmocka_unit_test(t_no_rdma),
		cmocka_unit_test(t_gdr),
		cmocka_unit_test(t_far_nic),
		cmocka_unit_test(t_roce_gid),
		cmocka_unit_test(t_roce_class),
		cmocka_unit_test(t_nccl_version_rules),
		cmocka_unit_test(t_link_layer_inferred),
		cmocka_unit_test(t_visible_devices),
		cmocka_unit_test(t_precedence),
		cmocka_unit_test(t_placement_modes),
		cmocka_unit_test(t_interfaces),
		cmocka_unit_test(t_lint_debug),
		cmocka_unit_test(t_summary),
		cmocka_unit_test(t_unknown_io),
		cmocka_unit_test(t_unknown_nvlink),
		cmocka_unit_test(t_domain_of_visible),
		cmocka_unit_test(t_nccl_conf),
		cmocka_unit_test(t_plumbing),
		cmocka_unit_test(t_mnnvl_lints),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
