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
	/* ib0, the IPoIB interface of mlx5_0's ACTIVE port: on JURECA-DC only the
	 * IPoIB addresses reach across InfiniBand cells (pytorch/pytorch#73656; JSC's
	 * job scripts export NCCL_SOCKET_IFNAME=ib0). */
	assert_val(l.plan, "NCCL_SOCKET_IFNAME", "=ib0");
	assert_reason_has(l.plan, "NCCL_SOCKET_IFNAME", "state and addresses unknown");
	assert_reason_has(l.plan, "NCCL_SOCKET_IFNAME", "on the ACTIVE port mlx5_0:1");
	assert_val(l.plan, "GLOO_SOCKET_IFNAME", "ib0");
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
	assert_val(l.plan, "torchrun.nproc_per_node", "1");
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
	/* ib0 is the IPoIB interface of mlx5_0's ACTIVE port: the fabric's own
	 * interface comes before the I350 (NCCL's default takes ib* first). */
	assert_val(l.plan, "NCCL_SOCKET_IFNAME", "=ib0");
	assert_reason_has(l.plan, "NCCL_SOCKET_IFNAME", "on the ACTIVE port mlx5_0:1");
	assert_reason_has(l.plan, "NCCL_SOCKET_IFNAME", "state and addresses unknown");
	assert_val(l.plan, "GLOO_SOCKET_IFNAME", "ib0");
	assert_null(ll_plan_get(l.plan, "NCCL_IB_GID_INDEX"));
	assert_val(l.plan, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
	assert_val(l.plan, "CUDA_VISIBLE_DEVICES", NULL);
	assert_val(l.plan, "LLMLAUNCH_NET", "ib");
	assert_val(l.plan, "LLMLAUNCH_NET_GBPS", NULL);
	assert_val(l.plan, "LLMLAUNCH_GPUS_PER_NODE", "4");
	/* PCI devices only: NVLink is unknown, not absent. */
	assert_val(l.plan, "LLMLAUNCH_NVLINK_DOMAIN", NULL);
	assert_reason_has(l.plan, "LLMLAUNCH_NVLINK_DOMAIN", "NVLink unknown: this export has no NVML data");
	assert_val(l.plan, "torchrun.nproc_per_node", "4");
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

	/* Both ports DOWN: IPoIB is no longer the fabric's interface, and eno1 is
	 * Ethernet by its MAC (no NetKind in the export); the reason says so. */
	for (size_t d = 0; d < l.facts->n_rdma; d++)
		for (size_t p = 0; p < l.facts->rdma[d].n_ports; p++)
			l.facts->rdma[d].ports[p].state = LL_PORT_DOWN;
	plan_env(&l, NULL);
	assert_val(l.plan, "NCCL_SOCKET_IFNAME", "=eno1");
	assert_reason_has(l.plan, "NCCL_SOCKET_IFNAME", "kind inferred from its 6-byte MAC address");
	assert_reason_has(l.plan, "NCCL_SOCKET_IFNAME", "chosen by kind, speed, then name");
	assert_val(l.plan, "GLOO_SOCKET_IFNAME", "eno1");
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

static struct loaded load_fixture(const char *name)
{
	const char *fixtures = getenv("LL_FIXTURES");
	char path[4096];

	if (!fixtures)
		fail_msg("%s", "LL_FIXTURES is not set (tests/CMakeLists.txt sets it to tests/fixtures)");
	snprintf(path, sizeof(path), "%s/hwloc/%s", fixtures, name);
	return load_path(path);
}

static void lint_has(const struct ll_plan *p, enum ll_lint_level level, const char *var, const char *needle)
{
	for (size_t i = 0; i < p->n_lints; i++)
		if (p->lints[i].level == level && ll_streq(p->lints[i].variable, var) && strstr(p->lints[i].message, needle))
			return;
	for (size_t i = 0; i < p->n_lints; i++)
		print_message("lint %s: %s\n", p->lints[i].variable, p->lints[i].message);
	fail_msg("no %s lint on %s saying '%s'", ll_lint_level_name(level), var, needle);
}

/* The plugin libraries the probe would have found (facts own the strings). */
static void set_plugins(struct loaded *l, const char *const *paths)
{
	ll_strv_free(l->facts->net_plugins, l->facts->n_net_plugins);
	l->facts->net_plugins = NULL;
	l->facts->n_net_plugins = 0;
	l->facts->net_plugins_known = true;
	for (; paths && *paths; paths++)
		*(char **)ll_array_push(&l->facts->net_plugins, &l->facts->n_net_plugins, sizeof(char *)) =
			ll_strdup(*paths);
	plan_env(l, NULL);
}

/* AWS EFA (tests/fixtures/hwloc/aws-efa-4gpu.xml): EFA devices are never NCCL_IB_HCA;
 * what the plan does depends on whether aws-ofi-nccl is where NCCL finds it. */
static void t_efa(void **state)
{
	static const char *const ofi_default[] = { "/opt/amazon/ofi-nccl/lib/libnccl-net.so",
						   "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so", NULL };
	static const char *const ofi_named[] = { "/usr/lib/libnccl-net-ofi.so", NULL };
	static const char *const hpcx_first[] = { "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so",
						  "/opt/amazon/ofi-nccl/lib/libnccl-net.so",
						  "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so", NULL };
	static const char *const none[] = { NULL };
	struct loaded l = load_fixture("aws-efa-4gpu.xml");
	(void)state;

	assert_int_equal(l.facts->n_rdma, 2);
	assert_string_equal(l.facts->rdma[0].name, "rdmap16s27");
	assert_int_equal(l.facts->rdma[0].rdma_class, LL_RDMA_CLASS_PLUGIN);
	assert_string_equal(l.facts->rdma[0].provider, "efa");
	/* A plain export: whether the plugin is installed is unknown. */
	assert_false(l.facts->net_plugins_known);
	assert_val(l.plan, "NCCL_IB_HCA", NULL);
	assert_reason_has(l.plan, "NCCL_IB_HCA", "rdmap16s27, rdmap144s27: never NCCL_IB_HCA");
	assert_reason_has(l.plan, "NCCL_IB_HCA", "AWS EFA");
	assert_val(l.plan, "NCCL_IB_DISABLE", NULL);
	assert_val(l.plan, "LLMLAUNCH_NET", "unknown");
	assert_null(ll_plan_get(l.plan, "FI_PROVIDER"));
	lint_has(l.plan, LL_LINT_INFO, "NCCL_NET_PLUGIN", "whether it is installed is not recorded");
	assert_val(l.plan, "NCCL_SOCKET_IFNAME", "=ens5");

	/* Known missing: sockets, and the lint says which plugin and what happens instead. */
	set_plugins(&l, none);
	assert_val(l.plan, "NCCL_IB_DISABLE", "1");
	assert_reason_has(l.plan, "NCCL_IB_DISABLE", "aws-ofi-nccl, which AWS EFA needs, is not installed");
	assert_val(l.plan, "LLMLAUNCH_NET", "socket");
	assert_val(l.plan, "NCCL_IB_HCA", NULL);
	lint_has(l.plan, LL_LINT_WARNING, "NCCL_NET_PLUGIN",
		 "rdmap16s27, rdmap144s27: AWS EFA, which NCCL's IB transport cannot drive; NCCL needs the "
		 "aws-ofi-nccl net plugin (libnccl-net.so, with libfabric's efa provider), which is not on the "
		 "library path; without it this job's traffic between nodes uses TCP sockets over ens5");

	/* Installed as NCCL's default libnccl-net.so: nothing to name, the provider set. */
	set_plugins(&l, ofi_default);
	assert_val(l.plan, "LLMLAUNCH_NET", "ofi");
	assert_reason_has(l.plan, "LLMLAUNCH_NET", "AWS EFA (rdmap16s27, rdmap144s27) through aws-ofi-nccl");
	assert_val(l.plan, "NCCL_NET_PLUGIN", NULL);
	assert_reason_has(l.plan, "NCCL_NET_PLUGIN", "NCCL loads /opt/amazon/ofi-nccl/lib/libnccl-net.so");
	assert_val(l.plan, "FI_PROVIDER", "efa");
	assert_val(l.plan, "NCCL_IB_DISABLE", NULL);
	assert_val(l.plan, "NCCL_IB_HCA", NULL);
	assert_val(l.plan, "NCCL_NET_GDR_LEVEL", NULL);
	assert_reason_has(l.plan, "NCCL_NET_GDR_LEVEL", "aws-ofi-nccl decides");

	/* Only under its own name: NCCL_NET_PLUGIN=ofi makes NCCL load libnccl-net-ofi.so. */
	set_plugins(&l, ofi_named);
	assert_val(l.plan, "NCCL_NET_PLUGIN", "ofi");
	/* Another plugin is NCCL's default libnccl-net.so: OFI must be named too. */
	set_plugins(&l, hpcx_first);
	assert_val(l.plan, "NCCL_NET_PLUGIN", "ofi");

	/* An EFA device named in NCCL_IB_HCA is a mistake the lint names. */
	{
		char *env[] = { "NCCL_IB_HCA==rdmap16s27", NULL };

		plan_env(&l, env);
		lint_has(l.plan, LL_LINT_WARNING, "NCCL_IB_HCA",
			 "'rdmap16s27' is not a device NCCL's IB transport drives");
	}
	unload(&l);
}

/* Cisco usNIC (real export): unusable, by its PCI vendor; the Prolog does not count it. */
static void t_usnic_class(void **state)
{
	if (realdata_absent(__func__))
		skip();
	struct loaded l = load("hwloc-v2x-16intel64-manyVFs.xml");
	(void)state;

	for (size_t i = 0; i < l.facts->n_rdma; i++)
		assert_int_equal(l.facts->rdma[i].rdma_class, LL_RDMA_CLASS_UNUSABLE);
	assert_reason_has(l.plan, "NCCL_IB_DISABLE", "usnic_0:1, usnic_1:1, usnic_2:1 (PCI vendor 1137 (Cisco usNIC)");
	unload(&l);
}

/* HPE Slingshot on tuo (MI300A, hwloc 2.12.2 export): the hsi interfaces are the
 * fabric; the socket interface is one of them, not the management port. */
static void t_slingshot_tuo(void **state)
{
	if (realdata_absent(__func__))
		skip();
	struct loaded l = load("flux-core/tuo.SPX.xml");
	/* AMD GPUs: RCCL loads librccl-net*.so; NCCL's names do not count. */
	static const char *const nccl_only[] = { "/opt/cray/aws-ofi-nccl/lib/libnccl-net.so",
						 "/opt/cray/aws-ofi-nccl/lib/libnccl-net-ofi.so", NULL };
	static const char *const ofi[] = { "/opt/cray/aws-ofi-rccl/lib/librccl-net.so",
					   "/opt/cray/aws-ofi-rccl/lib/librccl-net-ofi.so", NULL };
	(void)state;

	assert_true(ll_facts_netif(l.facts, "hsi0")->slingshot);
	assert_val(l.plan, "NCCL_SOCKET_IFNAME", "=hsi0");
	assert_reason_has(l.plan, "NCCL_SOCKET_IFNAME", "HPE Slingshot");
	assert_val(l.plan, "NCCL_IB_HCA", NULL);
	assert_val(l.plan, "LLMLAUNCH_NET", "unknown");
	set_plugins(&l, nccl_only);
	assert_val(l.plan, "LLMLAUNCH_NET", "socket");
	lint_has(l.plan, LL_LINT_WARNING, "NCCL_NET_PLUGIN", "(librccl-net.so, with libfabric's cxi provider)");
	set_plugins(&l, ofi);
	assert_val(l.plan, "LLMLAUNCH_NET", "ofi");
	assert_val(l.plan, "NCCL_NET_PLUGIN", NULL);
	assert_reason_has(l.plan, "NCCL_NET_PLUGIN", "RCCL loads /opt/cray/aws-ofi-rccl/lib/librccl-net.so");
	assert_val(l.plan, "HSA_FORCE_FINE_GRAIN_PCIE", "1");
	assert_val(l.plan, "NCCL_NET_GDR_LEVEL", "PHB");
	assert_val(l.plan, "FI_CXI_DISABLE_HOST_REGISTER", "1");
	assert_val(l.plan, "FI_MR_CACHE_MONITOR", "userfaultfd");
	assert_val(l.plan, "FI_CXI_DEFAULT_CQ_SIZE", "131072");
	assert_val(l.plan, "NCCL_CROSS_NIC", "1");
	assert_val(l.plan, "FI_CXI_RDZV_PROTO", NULL);
	assert_reason_has(l.plan, "FI_CXI_RDZV_PROTO", "--network=disable_rdzv_get");
	{
		char *env[] = { "SLURM_NETWORK=disable_rdzv_get", NULL };

		plan_env(&l, env);
		assert_val(l.plan, "FI_CXI_RDZV_PROTO", "alt_read");
		assert_val(l.plan, "FI_CXI_RDZV_THRESHOLD", "0");
	}
	unload(&l);
}

/* A Frontier-class AMD node (tests/fixtures/hwloc/mi250x-slingshot.xml): ROCm's
 * visibility variables, never CUDA's; XGMI as the GPU fabric; ranks bound by each
 * GCD's NUMA node (OLCF's Frontier guide: GCD 0-1 on NUMA 3, 2-3 on 1, 4-5 on 0, 6-7
 * on 2, its map_cpu:49,57,17,25,1,9,33,41 lies in exactly these sets); Slingshot over
 * the management port; RCCL's plugin names. */
static void t_mi250x(void **state)
{
	static const char *const rccl_ofi[] = { "/opt/aws-ofi-rccl/lib/librccl-net.so",
						"/opt/aws-ofi-rccl/lib/librccl-net-ofi.so", NULL };
	static const char *const cpus[] = { "48-55", "56-63", "16-23", "24-31", "0-7", "8-15", "32-39", "40-47" };
	static const int numa[] = { 3, 3, 1, 1, 0, 0, 2, 2 };
	struct loaded l = load_fixture("mi250x-slingshot.xml");
	struct ll_buf b;
	(void)state;

	assert_int_equal(l.facts->n_gpus, 8);
	assert_int_equal(l.facts->gpus[0].vendor, LL_GPU_VENDOR_AMD);
	assert_string_equal(l.facts->gpus[0].model, "AMD Instinct MI250X");
	assert_string_equal(l.facts->gpus[4].uuid, "6b3c1a0000000004");
	assert_int_equal(l.facts->gpus[0].nvlinks[0].fabric, LL_GPU_FABRIC_XGMI);
	assert_val(l.plan, "CUDA_DEVICE_ORDER", NULL);
	assert_reason_has(l.plan, "CUDA_DEVICE_ORDER", "AMD GPUs");
	assert_null(ll_plan_get(l.plan, "CUDA_VISIBLE_DEVICES"));
	assert_val(l.plan, "ROCR_VISIBLE_DEVICES", NULL);
	assert_reason_has(l.plan, "ROCR_VISIBLE_DEVICES", "all 8 AMD GPUs are visible");
	assert_val(l.plan, "LLMLAUNCH_GPU_FABRIC", "xgmi");
	assert_val(l.plan, "LLMLAUNCH_GPU_DOMAIN", "8");
	assert_val(l.plan, "LLMLAUNCH_NVLINK_DOMAIN", NULL);
	assert_val(l.plan, "NCCL_SOCKET_IFNAME", "=hsn0");
	assert_reason_has(l.plan, "NCCL_SOCKET_IFNAME", "HPE Slingshot Ethernet interface");
	assert_reason_has(l.plan, "NCCL_SOCKET_IFNAME", "the fabric's own interface before any other");
	assert_val(l.plan, "NCCL_IB_HCA", NULL);
	assert_val(l.plan, "NCCL_IB_DISABLE", NULL);
	assert_val(l.plan, "torchrun.nproc_per_node", "8");
	assert_val(l.plan, "OMP_NUM_THREADS", "8");
	for (size_t r = 0; r < 8; r++) {
		assert_int_equal(l.plan->ranks[r].numa_node, numa[r]);
		assert_string_equal(l.plan->ranks[r].cpuset, cpus[r]);
	}
	ll_buf_init(&b);
	ll_plan_summary(l.plan, &b);
	assert_non_null(strstr(b.s, "8 GPUs per node, XGMI domain of 8"));
	assert_non_null(strstr(b.s, "inside the XGMI domain: tensor-parallel size at most 8"));
	ll_buf_release(&b);

	/* ROCm's own selections: ROCR_VISIBLE_DEVICES by unique id, HIP_VISIBLE_DEVICES. */
	{
		char *env[] = { "ROCR_VISIBLE_DEVICES=GPU-6b3c1a0000000004,5", NULL };

		plan_env(&l, env);
		assert_int_equal(l.plan->n_ranks, 2);
		assert_string_equal(l.plan->ranks[0].gpu_busid, "0000:d3:00.0");
		assert_string_equal(l.plan->ranks[1].gpu_busid, "0000:d6:00.0");
		assert_val(l.plan, "LLMLAUNCH_GPU_DOMAIN", "2");
	}
	{
		char *env[] = { "HIP_VISIBLE_DEVICES=2", NULL };

		plan_env(&l, env);
		assert_val(l.plan, "HIP_VISIBLE_DEVICES", "2");
		assert_string_equal(l.plan->ranks[0].gpu_busid, "0000:cb:00.0");
		assert_int_equal(l.plan->ranks[0].numa_node, 1);
	}
	/* Slurm's allocation is exported as ROCR_VISIBLE_DEVICES. */
	{
		char *env[] = { "SLURM_STEP_GPUS=6,7", NULL };

		plan_env(&l, env);
		assert_val(l.plan, "ROCR_VISIBLE_DEVICES", "6,7");
		assert_null(ll_plan_get(l.plan, "CUDA_VISIBLE_DEVICES"));
	}
	/* RCCL's aws-ofi plugin found: the Slingshot settings HPE gives for RCCL. */
	set_plugins(&l, rccl_ofi);
	assert_val(l.plan, "LLMLAUNCH_NET", "ofi");
	assert_val(l.plan, "HSA_FORCE_FINE_GRAIN_PCIE", "1");
	assert_val(l.plan, "FI_CXI_DISABLE_HOST_REGISTER", "1");
	assert_val(l.plan, "NCCL_NET_GDR_LEVEL", "PHB");
	assert_val(l.plan, "NCCL_NET_PLUGIN", NULL);
	unload(&l);
}

/* A workstation with an NVIDIA and an AMD GPU (flux-sched chimera.xml): one vendor is
 * planned for, and the lint says so. */
static void t_mixed_vendors(void **state)
{
	if (realdata_absent(__func__))
		skip();
	struct loaded l = load("flux-sched/chimera.xml");
	(void)state;

	assert_int_equal(l.facts->n_gpus, 2);
	assert_val(l.plan, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
	assert_val(l.plan, "torchrun.nproc_per_node", "1");
	assert_string_equal(l.plan->ranks[0].gpu_busid, l.facts->gpus[0].vendor == LL_GPU_VENDOR_NVIDIA
								? l.facts->gpus[0].busid : l.facts->gpus[1].busid);
	lint_has(l.plan, LL_LINT_WARNING, "CUDA_VISIBLE_DEVICES",
		 "GPUs of two vendors (1 NVIDIA, 1 AMD): a PyTorch build drives one of them (CUDA or ROCm); "
		 "planned for the 1 NVIDIA GPU, the others are left alone");
	unload(&l);
}

/* HP ProLiant SL390s G7 (hwloc's 24em64t-2n6c2t-pci, v2.x and 1.11 files): the
 * ES1000 beside the BMC (1002:515e) is no GPU, and mlx4_0, whose ports the export
 * does not list, is no reason to disable InfiniBand. */
static void t_sl390s(void **state)
{
	static const char *const files[] = { "hwloc-v2x-24em64t-2n6c2t-pci.xml", "hwloc/hwloc-v111-24em64t-2n6c2t-pci.xml" };

	if (realdata_absent(__func__))
		skip();
	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct loaded l = load(files[i]);

		assert_int_equal(l.facts->n_gpus, 3);
		for (size_t g = 0; g < 3; g++)
			assert_int_equal(l.facts->gpus[g].vendor, LL_GPU_VENDOR_NVIDIA);
		for (size_t k = 0; k < l.plan->n_lints; k++)
			assert_null(strstr(l.plan->lints[k].message, "two vendors"));
		assert_int_equal(l.facts->n_rdma, 1);
		assert_int_equal(l.facts->rdma[0].n_ports, 0);
		assert_val(l.plan, "NCCL_IB_DISABLE", NULL);
		assert_reason_has(l.plan, "NCCL_IB_DISABLE", "RDMA port states unknown");
		assert_val(l.plan, "NCCL_IB_HCA", NULL);
		assert_reason_has(l.plan, "NCCL_IB_HCA", "mlx4_0 (ports not in the snapshot)");
		assert_val(l.plan, "LLMLAUNCH_NET", "unknown");
		/* ib0's port is not known ACTIVE: Ethernet first. */
		assert_val(l.plan, "NCCL_SOCKET_IFNAME", "=eth0");
		unload(&l);
	}
}

/* LLNL Corona (flux-core corona.xml, epyc-corona-p2.xml): 8 MI50 whose ROCm SMI hive
 * id is 0, in no XGMI hive: PCIe is a fact, and the advice names XGMI, not NVLink. */
static void t_corona_pcie(void **state)
{
	static const char *const files[] = { "flux-core/corona.xml", "mpibind-2/epyc-corona-p2.xml" };

	if (realdata_absent(__func__))
		skip();
	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct loaded l = load(files[i]);
		struct ll_buf b;

		assert_val(l.plan, "LLMLAUNCH_GPU_FABRIC", "pcie");
		assert_val(l.plan, "LLMLAUNCH_GPU_DOMAIN", "1");
		assert_val(l.plan, "LLMLAUNCH_NVLINK_DOMAIN", NULL);
		assert_val(l.plan, "NCCL_SOCKET_IFNAME", "=hsi0");
		assert_reason_has(l.plan, "NCCL_SOCKET_IFNAME", "on the ACTIVE port mlx5_0:1");
		ll_buf_init(&b);
		ll_plan_summary(l.plan, &b);
		assert_non_null(strstr(b.s, "8 GPUs per node, XGMI domain of 1"));
		assert_non_null(strstr(b.s, "No XGMI between GPUs: tensor parallelism would cross PCIe"));
		assert_null(strstr(b.s, "NVLink"));
		ll_buf_release(&b);
		unload(&l);
	}
}

/* LLNL Quartz (cts1-quartz-smt1.xml): Omni-Path's hfi1 is an RC verbs device NCCL's
 * IB transport drives; its IPoIB hsi0 comes before the I350 ports aci0 and eno1. */
static void t_quartz_opa(void **state)
{
	if (realdata_absent(__func__))
		skip();
	struct loaded l = load("mpibind-2/cts1-quartz-smt1.xml");
	(void)state;

	assert_int_equal(l.facts->rdma[0].rdma_class, LL_RDMA_CLASS_VERBS);
	assert_val(l.plan, "NCCL_IB_HCA", "=hfi1_0:1");
	assert_val(l.plan, "LLMLAUNCH_NET", "ib");
	assert_val(l.plan, "NCCL_SOCKET_IFNAME", "=hsi0");
	assert_reason_has(l.plan, "NCCL_SOCKET_IFNAME", "on the ACTIVE port hfi1_0:1");
	unload(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_fixture),
		cmocka_unit_test(t_efa),
		cmocka_unit_test(t_mi250x),
		cmocka_unit_test(t_mixed_vendors),
		cmocka_unit_test(t_sl390s),
		cmocka_unit_test(t_corona_pcie),
		cmocka_unit_test(t_quartz_opa),
		cmocka_unit_test(t_usnic_class),
		cmocka_unit_test(t_slingshot_tuo),
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
