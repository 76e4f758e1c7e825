/* `match` against facts built by hand, and the shipped platform profiles against
 * the nodes they are for (and not against the others). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "llmlaunch/profile.h"

/* A node: n GPUs of one model, RDMA devices "name:linklayer:state" and a DMI name. */
struct node {
	struct ll_facts f;
	struct ll_gpu gpus[16];
	struct ll_rdma_device rdma[8];
	struct ll_rdma_port ports[8];
};

static void node_init(struct node *n, const char *dmi, const char *host, const char *model, int n_gpus)
{
	memset(n, 0, sizeof(*n));
	n->f.dmi_product_name = (char *)dmi;
	n->f.hostname = (char *)host;
	n->f.gpus = n->gpus;
	n->f.n_gpus = (size_t)n_gpus;
	for (int i = 0; i < n_gpus; i++)
		n->gpus[i].model = (char *)model;
	n->f.rdma = n->rdma;
}

static void node_rdma(struct node *n, const char *name, enum ll_link_layer ll, enum ll_port_state st)
{
	size_t i = n->f.n_rdma++;

	n->rdma[i].name = (char *)name;
	n->ports[i].number = 1;
	n->ports[i].link_layer = ll;
	n->ports[i].state = st;
	n->rdma[i].ports = &n->ports[i];
	n->rdma[i].n_ports = 1;
}

static struct ll_profile *parse(const char *text)
{
	struct ll_profile *p = NULL;
	struct ll_error err = { 0 };

	if (ll_profile_parse("m.yaml", text, strlen(text), NULL, &p, NULL, &err) < 0)
		fail_msg("%s", err.message);
	return p;
}

static struct ll_profile *shipped(const char *name)
{
	const char *src = getenv("LL_SRCDIR");
	_cleanup_free_ char *path = ll_asprintf("%s/profiles/%s.yaml", src ? src : ".", name);
	struct ll_profile *p = NULL;
	struct ll_error err = { 0 };

	if (ll_profile_load_file(path, NULL, &p, NULL, &err) < 0)
		fail_msg("%s", err.message);
	return p;
}

static void assert_match(const struct ll_profile *p, const struct ll_facts *f, const char *why_expected)
{
	char *why = NULL;
	bool m = ll_profile_matches(p, f, &why);

	if (!why_expected) {
		if (!m)
			fail_msg("expected '%s' to match, but: %s", p->name, why);
	} else {
		assert_false(m);
		assert_non_null(why);
		assert_string_equal(why, why_expected);
	}
	free(why);
}

static void test_driver_of(void **state)
{
	(void)state;
	const char *cases[][2] = {
		{ "mlx5_0", "mlx5" }, { "mlx5_10", "mlx5" }, { "irdma1", "irdma" }, { "bnxt_re0", "bnxt_re" },
		{ "efa_0", "efa" },   { "qib0", "qib" },     { "rxe0", "rxe" },     { "hfi1_0", "hfi1" },
	};
	for (size_t i = 0; i < LL_ARRAY_SIZE(cases); i++) {
		char *d = ll_rdma_driver_of(cases[i][0]);
		assert_string_equal(d, cases[i][1]);
		free(d);
	}
}

static void test_conditions(void **state)
{
	(void)state;
	struct node n;
	struct ll_profile *p;

	node_init(&n, "ProLiant XL675d", "gpu-017", "NVIDIA A100-SXM4-80GB", 8);
	node_rdma(&n, "mlx5_0", LL_LINK_LAYER_INFINIBAND, LL_PORT_ACTIVE);
	node_rdma(&n, "mlx5_1", LL_LINK_LAYER_ETHERNET, LL_PORT_DOWN);

	p = parse("match:\n  gpu_model: '*a100*'\n  gpu_count: 8\n  hostname: 'gpu-[0-9]*'\n");
	assert_match(p, &n.f, NULL);
	n.f.hostname = "login1";
	assert_match(p, &n.f, "hostname: 'login1' is not 'gpu-[0-9]*'");
	n.f.hostname = NULL; /* unknown never matches */
	assert_match(p, &n.f, "hostname: 'unknown' is not 'gpu-[0-9]*'");
	n.f.hostname = "gpu-017";
	n.f.n_gpus = 4;
	assert_match(p, &n.f, "gpu_count: 4 GPUs, not 8");
	n.f.n_gpus = 8;
	ll_profile_free(p);

	p = parse("match:\n  gpu_model: ['*H100*', '*H200*']\n");
	assert_match(p, &n.f, "gpu_model: no GPU model is '*H100*', '*H200*'");
	ll_profile_free(p);

	p = parse("match:\n  gpu_count_min: 9\n");
	assert_match(p, &n.f, "gpu_count_min: 8 GPUs, fewer than 9");
	ll_profile_free(p);

	/* Link layer: only usable ports count; mlx5_1 is Ethernet but down. */
	p = parse("match:\n  link_layer: Ethernet\n");
	assert_match(p, &n.f, "link_layer: no usable Ethernet port");
	n.ports[1].state = LL_PORT_ACTIVE;
	assert_match(p, &n.f, NULL);
	n.ports[1].state = LL_PORT_STATE_UNKNOWN; /* plain lstopo export: state unknown, still counts */
	assert_match(p, &n.f, NULL);
	ll_profile_free(p);

	p = parse("match:\n  rdma_driver: [efa, irdma]\n");
	assert_match(p, &n.f, "rdma_driver: no RDMA device of driver 'efa', 'irdma'");
	n.rdma[0].name = "efa_0";
	assert_match(p, &n.f, NULL);
	ll_profile_free(p);

	p = parse("match:\n  rdma: false\n");
	assert_match(p, &n.f, "rdma: the node has 2 RDMA devices");
	n.f.n_rdma = 0;
	assert_match(p, &n.f, NULL);
	ll_profile_free(p);

	p = parse("match:\n  dmi_product_name: 'ProLiant*'\n");
	assert_match(p, &n.f, NULL);
	n.f.dmi_product_name = NULL;
	assert_match(p, &n.f, "dmi_product_name: 'unknown' is not 'ProLiant*'");
	ll_profile_free(p);

	p = parse("name: x\n");
	assert_match(p, &n.f, "no 'match': applies only when asked for");
	ll_profile_free(p);
	p = parse("match:\n  gpu_count: 0\n");
	assert_match(p, NULL, "no facts about this node");
	ll_profile_free(p);
}

/* Each platform profile matches its own node and none of the others. */
static void test_shipped_platforms(void **state)
{
	(void)state;
	static const char *const names[] = { "dgx-h100", "azure-nd-h100-v5", "aws-p5", "gcp-a3-ultra" };
	struct node nodes[5];
	struct ll_profile *p;
	char *why = NULL;

	/* DGX H100: 8 H100, 8 IB compute ports. */
	node_init(&nodes[0], "DGXH100", "dgx01", "NVIDIA H100 80GB HBM3", 8);
	for (int i = 0; i < 8; i++)
		node_rdma(&nodes[0], "mlx5_0", LL_LINK_LAYER_INFINIBAND, LL_PORT_ACTIVE);
	/* Azure ND H100 v5: a "Virtual Machine" with 8 H100 and IB. */
	node_init(&nodes[1], "Virtual Machine", "nd96", "NVIDIA H100 80GB HBM3", 8);
	node_rdma(&nodes[1], "mlx5_ib0", LL_LINK_LAYER_INFINIBAND, LL_PORT_ACTIVE);
	/* AWS p5: the instance type is the DMI name; EFA has no link layer. */
	node_init(&nodes[2], "p5.48xlarge", "ip-10-0-0-1", "NVIDIA H100 80GB HBM3", 8);
	node_rdma(&nodes[2], "efa_0", LL_LINK_LAYER_UNKNOWN, LL_PORT_ACTIVE);
	/* GCP A3 Ultra: 8 H200 with RoCE. */
	node_init(&nodes[3], "Google Compute Engine", "a3u-1", "NVIDIA H200", 8);
	node_rdma(&nodes[3], "mlx5_0", LL_LINK_LAYER_ETHERNET, LL_PORT_ACTIVE);
	/* An Azure VM of another size: NC A100 v4 (4 A100, no IB). */
	node_init(&nodes[4], "Virtual Machine", "nc24", "NVIDIA A100 80GB PCIe", 4);

	for (size_t i = 0; i < LL_ARRAY_SIZE(names); i++) {
		p = shipped(names[i]);
		for (size_t j = 0; j < LL_ARRAY_SIZE(nodes); j++) {
			bool m = ll_profile_matches(p, &nodes[j].f, &why);
			if (m != (i == j))
				fail_msg("%s on node %zu: %s (%s)", names[i], j, m ? "matches" : "does not match",
					 why ? why : "");
			free(why);
			why = NULL;
		}
		ll_profile_free(p);
	}

	/* The generic profiles never apply by themselves. */
	p = shipped("infiniband");
	assert_false(ll_profile_matches(p, &nodes[0].f, NULL));
	ll_profile_free(p);

	/* The p5e (H200) is also AWS p5's; an Azure H100 VM with only 4 GPUs is not ND H100 v5. */
	p = shipped("aws-p5");
	nodes[2].f.dmi_product_name = "p5e.48xlarge";
	assert_match(p, &nodes[2].f, NULL);
	nodes[2].f.dmi_product_name = "p4d.24xlarge";
	assert_match(p, &nodes[2].f, "dmi_product_name: 'p4d.24xlarge' is not 'p5.48xlarge', 'p5e.48xlarge'");
	ll_profile_free(p);
	p = shipped("azure-nd-h100-v5");
	nodes[1].f.n_gpus = 4;
	assert_match(p, &nodes[1].f, "gpu_count: 4 GPUs, not 8");
	ll_profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_driver_of),
		cmocka_unit_test(test_conditions),
		cmocka_unit_test(test_shipped_platforms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
