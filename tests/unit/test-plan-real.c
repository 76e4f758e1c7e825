/* The planner over real lstopo exports (LL_REALDATA/hwloc_xml) and a fake sysfs tree
 * (tests/fixtures/sysfs): chosen HCAs, GDR level, interface and GID index asserted
 * exactly, with the reasons checked. Plain lstopo exports carry port states and LIDs
 * but no link layer, rates, GID types, addresses or GDR facts: the plan must say so
 * instead of guessing. Skips (77) when the real data is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "llmlaunch/plan.h"
#include "llmlaunch/probe.h"

static const char *realdata;

struct loaded {
	struct ll_facts *facts;
	struct ll_plan *plan;
};

static void plan_env(struct loaded *l, char *const *env)
{
	static char *const none[] = { NULL };
	struct ll_plan_input in = { .facts = l->facts, .environ = env ? env : none, .nnodes = 1 };
	struct ll_error err = { 0 };

	if (l->plan)
		ll_plan_free(l->plan);
	l->plan = NULL;
	if (ll_plan_build(&in, &l->plan, &err) < 0)
		fail_msg("plan: %s", err.message);
}

static struct loaded load(const char *rel)
{
	struct ll_probe_options opts = { .skip_nvml = true };
	struct ll_error err = { 0 };
	struct loaded l = { 0 };
	char path[4096];

	snprintf(path, sizeof(path), "%s/hwloc_xml/%s", realdata, rel);
	opts.topology_file = path;
	if (ll_probe(&opts, NULL, &l.facts, &err) < 0)
		fail_msg("probe %s: %s", path, err.message);
	plan_env(&l, NULL);
	return l;
}

static void unload(struct loaded *l)
{
	ll_plan_free(l->plan);
	ll_facts_free(l->facts);
}

static void assert_val(const struct ll_plan *p, const char *name, const char *expected)
{
	const struct ll_setting *s = ll_plan_get(p, name);

	if (!s)
		fail_msg("%s: not in the plan", name);
	if (!expected && s->value)
		fail_msg("%s: expected unset, got '%s'", name, s->value);
	if (expected && !s->value)
		fail_msg("%s: expected '%s', got unset (%s)", name, expected, s->reason);
	if (expected)
		assert_string_equal(s->value, expected);
}

static void assert_reason_has(const struct ll_plan *p, const char *name, const char *needle)
{
	const struct ll_setting *s = ll_plan_get(p, name);

	assert_non_null(s);
	if (!strstr(s->reason, needle))
		fail_msg("%s: reason '%s' lacks '%s'", name, s->reason, needle);
}

/* JURECA-DC GPU node: 4 A100, each beside its own HDR HCA (PIX), the others SYS. */
static void t_jrc0323(void **state)
{
	struct loaded l = load("psmgmt/topo.jrc0323.xml");
	(void)state;

	assert_val(l.plan, "NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1");
	assert_reason_has(l.plan, "NCCL_IB_HCA", "4 ACTIVE InfiniBand ports serving the GPUs");
	assert_val(l.plan, "NCCL_IB_DISABLE", NULL);
	/* No peer-memory facts in a plain export: no level, and the reason says why. */
	assert_val(l.plan, "NCCL_NET_GDR_LEVEL", NULL);
	assert_reason_has(l.plan, "NCCL_NET_GDR_LEVEL", "readiness unknown");
	assert_val(l.plan, "NCCL_SOCKET_IFNAME", "=enp225s0f0");
	assert_reason_has(l.plan, "NCCL_SOCKET_IFNAME", "state and addresses unknown");
	assert_val(l.plan, "GLOO_SOCKET_IFNAME", "enp225s0f0");
	assert_null(ll_plan_get(l.plan, "NCCL_IB_GID_INDEX"));
	assert_val(l.plan, "LLMLAUNCH_NET", "ib");
	assert_val(l.plan, "LLMLAUNCH_NET_GBPS", NULL);
	assert_val(l.plan, "LLMLAUNCH_GPUS_PER_NODE", "4");
	assert_val(l.plan, "OMP_NUM_THREADS", "16");
	assert_int_equal(l.plan->n_ranks, 4);
	assert_string_equal(l.plan->ranks[0].gpu_busid, "0000:03:00.0");
	assert_string_equal(l.plan->ranks[0].cpuset, "48-63,176-191");
	assert_int_equal(l.plan->ranks[0].numa_node, 3);
	assert_string_equal(l.plan->ranks[3].cpuset, "80-95,208-223");
	assert_int_equal(l.plan->ranks[3].numa_node, 5);

	/* With GPUDirect RDMA ready, the level follows the real classes: every GPU
	 * has its HCA on its own switch. */
	l.facts->gdr_ready = LL_YES;
	plan_env(&l, NULL);
	assert_val(l.plan, "NCCL_NET_GDR_LEVEL", "PIX");

	/* A subset of the GPUs: the two on NUMA nodes 1 and 7; their HCAs still serve. */
	{
		char *env[] = { "CUDA_VISIBLE_DEVICES=1,2", "NCCL_IB_HCA=mlx5_1", NULL };

		plan_env(&l, env);
		assert_int_equal(l.plan->nproc_per_node, 2);
		assert_string_equal(l.plan->ranks[0].gpu_busid, "0000:44:00.0");
		assert_string_equal(l.plan->ranks[1].cpuset, "112-127,240-255");
		assert_val(l.plan, "NCCL_IB_HCA", "mlx5_1");
		/* GPUs 1 and 2 are PIX to mlx5_1 and mlx5_2 only; mlx5_0 and mlx5_3 are the
		 * nearest NIC of no visible GPU. */
		assert_reason_has(l.plan, "NCCL_IB_HCA", "probe chose '=mlx5_1:1,mlx5_2:1'");
	}
	unload(&l);
}

/* MeluXina FPGA node: no GPU, 2 IB + 2 Ethernet ConnectX ports: a tie goes to IB. */
static void t_mel3001(void **state)
{
	struct loaded l = load("psmgmt/topo.mel3001.xml");
	(void)state;

	assert_int_equal(l.facts->n_gpus, 0);
	assert_val(l.plan, "NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1");
	assert_reason_has(l.plan, "NCCL_IB_HCA", "no GPUs: every port of the majority link layer");
	assert_reason_has(l.plan, "NCCL_IB_HCA", "minority link layer Ethernet");
	assert_val(l.plan, "CUDA_DEVICE_ORDER", NULL);
	assert_val(l.plan, "nproc-per-node", "1");
	assert_val(l.plan, "LLMLAUNCH_GPUS_PER_NODE", "0");
	unload(&l);
}

/* DEEP-EST DAM: one ConnectX-4 Lx on Ethernet (RoCE), GID types unknown in the export. */
static void t_dp_dam01(void **state)
{
	struct loaded l = load("psmgmt/topo.dp-dam01.xml");
	(void)state;

	assert_val(l.plan, "NCCL_IB_HCA", "=mlx5_0:1");
	assert_val(l.plan, "LLMLAUNCH_NET", "roce");
	assert_val(l.plan, "NCCL_IB_GID_INDEX", NULL);
	assert_reason_has(l.plan, "NCCL_IB_GID_INDEX", "GID types unknown on mlx5_0:1");
	unload(&l);
}

/* HPE Apollo 70: 2 IB CX-5 (one DOWN... here mlx5_2), 2 Ethernet CX-4 Lx, AMD GPUs. */
static void t_arm64_ulna(void **state)
{
	struct loaded l = load("mpibind/arm64-ulna-hwloc1.xml");
	(void)state;

	assert_val(l.plan, "NCCL_IB_HCA", "=mlx5_0:1,mlx5_3:1");
	assert_reason_has(l.plan, "NCCL_IB_HCA", "mlx5_2:1 (DOWN)");
	assert_reason_has(l.plan, "NCCL_IB_HCA", "mlx5_1:1 (minority link layer Ethernet");
	unload(&l);
}

/* Cisco usNIC node: OpenFabrics devices NCCL's IB transport does not drive. */
static void t_usnic(void **state)
{
	struct loaded l = load("hwloc-v2x-16intel64-manyVFs.xml");
	(void)state;

	assert_val(l.plan, "NCCL_IB_DISABLE", "1");
	assert_reason_has(l.plan, "NCCL_IB_DISABLE", "usNIC");
	assert_val(l.plan, "NCCL_IB_HCA", NULL);
	assert_val(l.plan, "LLMLAUNCH_NET", "socket");
	assert_val(l.plan, "NCCL_SOCKET_IFNAME", "=eth0");
	unload(&l);
}

/* DGX-2: 16 V100 on NVSwitches, no NIC in the export. */
static void t_dgx2(void **state)
{
	struct loaded l = load("hwloc-v2x-nvidiaDGX2.xml");
	struct ll_buf b;
	(void)state;

	assert_val(l.plan, "LLMLAUNCH_NVLINK_DOMAIN", "16");
	assert_val(l.plan, "NCCL_IB_DISABLE", "1");
	assert_val(l.plan, "NCCL_SOCKET_IFNAME", NULL);
	assert_reason_has(l.plan, "NCCL_SOCKET_IFNAME", "no network interface known");
	assert_int_equal(l.plan->nproc_per_node, 16);
	ll_buf_init(&b);
	assert_int_equal(ll_plan_parallelism_summary(l.facts, &b), 0);
	assert_non_null(strstr(b.s, "16 GPUs per node, NVLink domain of 16"));
	assert_non_null(strstr(b.s, "tensor-parallel size at most 16"));
	ll_buf_release(&b);
	unload(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_jrc0323),
		cmocka_unit_test(t_mel3001),
		cmocka_unit_test(t_dp_dam01),
		cmocka_unit_test(t_arm64_ulna),
		cmocka_unit_test(t_usnic),
		cmocka_unit_test(t_dgx2),
	};
	char probe[4096];

	realdata = getenv("LL_REALDATA");
	if (realdata)
		snprintf(probe, sizeof(probe), "%s/hwloc_xml/psmgmt/topo.jrc0323.xml", realdata);
	if (!realdata || access(probe, R_OK) != 0) {
		fprintf(stderr, "skipped: real data not found (LL_REALDATA=%s)\n", realdata ? realdata : "");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
