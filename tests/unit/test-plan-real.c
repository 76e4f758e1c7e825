/* The planner over lstopo exports: the project's own fixture
 * ($LL_FIXTURES/hwloc/two-socket-4gpu-2hca.xml), which always runs, and real ones
 * (LL_REALDATA/hwloc_xml), whose cases skip one by one when the real data is absent.
 * Chosen HCAs, GDR level, interface, GID index and rank placement asserted exactly,
 * with the reasons checked. Plain lstopo exports carry port states and LIDs but no
 * link layer, rates, GID types, addresses or GDR facts: the plan must say so instead
 * of guessing. */
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

static struct loaded load_path(const char *path)
{
	struct ll_probe_options opts = { .skip_nvml = true, .topology_file = path };
	struct ll_error err = { 0 };
	struct loaded l = { 0 };

	if (ll_probe(&opts, NULL, &l.facts, &err) < 0)
		fail_msg("probe %s: %s", path, err.message);
	plan_env(&l, NULL);
	return l;
}

static struct loaded load(const char *rel)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/hwloc_xml/%s", realdata, rel);
	return load_path(path);
}

/* True (and said on stderr) when the real data is absent: the case skips. */
static bool realdata_absent(const char *test)
{
	char probe[4096];

	if (realdata) {
		snprintf(probe, sizeof(probe), "%s/hwloc_xml/psmgmt/topo.jrc0323.xml", realdata);
		if (access(probe, R_OK) == 0)
			return false;
	}
	fprintf(stderr, "%s: skipped, real data not found (LL_REALDATA=%s)\n", test, realdata ? realdata : "");
	return true;
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
	if (realdata_absent(__func__))
		skip();
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
	if (realdata_absent(__func__))
		skip();
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
	if (realdata_absent(__func__))
		skip();
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
	if (realdata_absent(__func__))
		skip();
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
	if (realdata_absent(__func__))
		skip();
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
	if (realdata_absent(__func__))
		skip();
	struct loaded l = load("hwloc-v2x-nvidiaDGX2.xml");
	struct ll_buf b;
	(void)state;

	assert_val(l.plan, "LLMLAUNCH_NVLINK_DOMAIN", "16");
	/* The export keeps no network OS device: "no RDMA" is not a fact. */
	assert_val(l.plan, "NCCL_IB_DISABLE", NULL);
	assert_reason_has(l.plan, "NCCL_IB_DISABLE", "network and RDMA devices unknown");
	assert_val(l.plan, "LLMLAUNCH_NET", "unknown");
	assert_val(l.plan, "NCCL_SOCKET_IFNAME", NULL);
	assert_reason_has(l.plan, "NCCL_SOCKET_IFNAME", "network and RDMA devices unknown");
	assert_int_equal(l.plan->nproc_per_node, 16);
	ll_buf_init(&b);
	assert_int_equal(ll_plan_parallelism_summary(l.facts, &b), 0);
	assert_non_null(strstr(b.s, "16 GPUs per node, NVLink domain of 16"));
	assert_non_null(strstr(b.s, "tensor-parallel size at most 16"));
	ll_buf_release(&b);
	unload(&l);
}

/* The project's own fixture: two sockets, each with two H100 and one ConnectX-6
 * (IB, ACTIVE), one GPU PIX to its HCA and one PHB; eno1, an I350, on socket 0. */
static void t_fixture(void **state)
{
	static const char *const busids[] = { "0000:03:00.0", "0000:05:00.0", "0000:83:00.0", "0000:85:00.0" };
	static const char *const cpus[] = { "0-1", "2-3", "4-5", "6-7" };
	const char *fixtures = getenv("LL_FIXTURES");
	char path[4096];
	struct loaded l;
	(void)state;

	if (!fixtures)
		fail_msg("%s", "LL_FIXTURES is not set (tests/CMakeLists.txt sets it to tests/fixtures)");
	snprintf(path, sizeof(path), "%s/hwloc/two-socket-4gpu-2hca.xml", fixtures);
	l = load_path(path);

	assert_val(l.plan, "NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1");
	assert_reason_has(l.plan, "NCCL_IB_HCA", "2 ACTIVE InfiniBand ports serving the GPUs");
	assert_val(l.plan, "NCCL_IB_DISABLE", NULL);
	assert_val(l.plan, "NCCL_NET_GDR_LEVEL", NULL);
	assert_reason_has(l.plan, "NCCL_NET_GDR_LEVEL", "readiness unknown");
	/* No NetKind in the export: eno1 is Ethernet by its MAC, and the reason says so. */
	assert_val(l.plan, "NCCL_SOCKET_IFNAME", "=eno1");
	assert_reason_has(l.plan, "NCCL_SOCKET_IFNAME", "kind inferred from its 6-byte MAC address");
	assert_reason_has(l.plan, "NCCL_SOCKET_IFNAME", "state and addresses unknown");
	assert_val(l.plan, "GLOO_SOCKET_IFNAME", "eno1");
	assert_null(ll_plan_get(l.plan, "NCCL_IB_GID_INDEX"));
	assert_val(l.plan, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
	assert_val(l.plan, "CUDA_VISIBLE_DEVICES", NULL);
	assert_val(l.plan, "LLMLAUNCH_NET", "ib");
	assert_val(l.plan, "LLMLAUNCH_NET_GBPS", NULL);
	assert_val(l.plan, "LLMLAUNCH_GPUS_PER_NODE", "4");
	/* PCI devices only: NVLink is unknown, not absent. */
	assert_val(l.plan, "LLMLAUNCH_NVLINK_DOMAIN", NULL);
	assert_reason_has(l.plan, "LLMLAUNCH_NVLINK_DOMAIN", "NVLink unknown: this export has no NVML data");
	assert_val(l.plan, "nproc-per-node", "4");
	/* Two ranks share each NUMA node's 4 cores. */
	assert_val(l.plan, "OMP_NUM_THREADS", "2");
	assert_int_equal(l.plan->bind, LL_BIND_NUMA);
	assert_int_equal(l.plan->nproc_per_node, 4);
	assert_int_equal(l.plan->n_ranks, 4);
	for (size_t r = 0; r < 4; r++) {
		assert_int_equal(l.plan->ranks[r].local_rank, (int)r);
		assert_int_equal(l.plan->ranks[r].gpu, (int)r);
		assert_string_equal(l.plan->ranks[r].gpu_busid, busids[r]);
		assert_int_equal(l.plan->ranks[r].numa_node, r < 2 ? 0 : 1);
		assert_string_equal(l.plan->ranks[r].cpuset, cpus[r]);
		assert_int_equal(l.plan->ranks[r].n_cores, 2);
	}

	/* With GPUDirect RDMA ready, the level covers the worst nearest class: GPU1
	 * and GPU3 reach their HCA through the host bridge. */
	l.facts->gdr_ready = LL_YES;
	plan_env(&l, NULL);
	assert_val(l.plan, "NCCL_NET_GDR_LEVEL", "PHB");

	/* The two GPUs of socket 1: only mlx5_1 serves them; they split NUMA 1. */
	{
		char *env[] = { "CUDA_VISIBLE_DEVICES=2,3", NULL };

		plan_env(&l, env);
		assert_int_equal(l.plan->nproc_per_node, 2);
		assert_int_equal(l.plan->n_ranks, 2);
		assert_string_equal(l.plan->ranks[0].gpu_busid, "0000:83:00.0");
		assert_string_equal(l.plan->ranks[0].cpuset, "4-5");
		assert_int_equal(l.plan->ranks[0].numa_node, 1);
		assert_string_equal(l.plan->ranks[1].gpu_busid, "0000:85:00.0");
		assert_string_equal(l.plan->ranks[1].cpuset, "6-7");
		assert_val(l.plan, "NCCL_IB_HCA", "=mlx5_1:1");
		assert_val(l.plan, "LLMLAUNCH_GPUS_PER_NODE", "2");
	}
	unload(&l);
}

/* A real export without any I/O object (Cascade Lake-AP, hwloc 1.11.8): GPUs, RDMA
 * devices and interfaces are all unknown; nothing is set from that. */
static void t_no_io(void **state)
{
	if (realdata_absent(__func__))
		skip();
	struct loaded l = load("mpibind-2/cascade-lake-ap-snl-hwloc1.xml");
	struct ll_buf b;
	(void)state;

	assert_false(l.facts->gpus_known);
	assert_false(l.facts->netdevs_known);
	assert_val(l.plan, "NCCL_IB_DISABLE", NULL);
	assert_val(l.plan, "NCCL_IB_HCA", NULL);
	assert_val(l.plan, "NCCL_SOCKET_IFNAME", NULL);
	assert_val(l.plan, "CUDA_DEVICE_ORDER", NULL);
	assert_val(l.plan, "LLMLAUNCH_GPUS_PER_NODE", NULL);
	assert_val(l.plan, "LLMLAUNCH_NET", "unknown");
	assert_val(l.plan, "OMP_NUM_THREADS", "96");
	ll_buf_init(&b);
	assert_int_equal(ll_plan_parallelism_summary(l.facts, &b), 0);
	assert_non_null(strstr(b.s, "GPUs unknown"));
	ll_buf_release(&b);
	unload(&l);
}

/* JURECA-DC's A100-SXM4 appear as PCI devices only: the advice says NVLink is
 * unknown instead of "No NVLink between GPUs". */
static void t_a100_pci_only_advice(void **state)
{
	if (realdata_absent(__func__))
		skip();
	struct loaded l = load("psmgmt/topo.jrc0323.xml");
	struct ll_buf b;
	(void)state;

	ll_buf_init(&b);
	ll_plan_summary(l.plan, &b);
	assert_non_null(strstr(b.s, "4 GPUs per node, NVLink unknown"));
	assert_non_null(strstr(b.s, "NVLink unknown: this export has no NVML data"));
	assert_null(strstr(b.s, "No NVLink between GPUs"));
	ll_buf_release(&b);
	unload(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_fixture),
		cmocka_unit_test(t_jrc0323),
		cmocka_unit_test(t_mel3001),
		cmocka_unit_test(t_dp_dam01),
		cmocka_unit_test(t_arm64_ulna),
		cmocka_unit_test(t_usnic),
		cmocka_unit_test(t_dgx2),
		cmocka_unit_test(t_no_io),
		cmocka_unit_test(t_a100_pci_only_advice),
	};

	realdata = getenv("LL_REALDATA");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
