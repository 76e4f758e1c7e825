/* The Prolog's verdict (launcher/slurm/slurm-health.c): which facts are faults, which are
 * only notes (unknown is never a fault), and the exact wording an admin reads in
 * `sinfo -R`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "llmlaunch/slurm.h"

/* A node with `ngpus` GPUs and one port per entry of `ports`: 'A' active
 * InfiniBand, 'E' active Ethernet, 'U' active with unknown link layer, 'D' down
 * InfiniBand. Devices are mlx5_0, mlx5_1, ... */
static struct ll_facts *node(size_t ngpus, const char *ports, enum ll_tristate gdr)
{
	struct ll_facts *f = ll_calloc(1, sizeof(*f));
	size_t n = strlen(ports);

	f->gpus = ll_calloc(ngpus ? ngpus : 1, sizeof(*f->gpus));
	f->n_gpus = ngpus;
	f->rdma = ll_calloc(n ? n : 1, sizeof(*f->rdma));
	f->n_rdma = n;
	for (size_t i = 0; i < n; i++) {
		struct ll_rdma_port *p;

		f->rdma[i].name = ll_asprintf("mlx5_%zu", i);
		f->rdma[i].ports = p = ll_calloc(1, sizeof(*p));
		f->rdma[i].n_ports = 1;
		p->number = 1;
		p->state = ports[i] == 'D' ? LL_PORT_DOWN : LL_PORT_ACTIVE;
		p->link_layer = ports[i] == 'E'	  ? LL_LINK_LAYER_ETHERNET
				: ports[i] == 'U' ? LL_LINK_LAYER_UNKNOWN
						  : LL_LINK_LAYER_INFINIBAND;
	}
	f->gdr_ready = gdr;
	f->gpus_known = f->netdevs_known = true;
	return f;
}

static void node_free(struct ll_facts *f)
{
	for (size_t i = 0; i < f->n_rdma; i++) {
		free(f->rdma[i].name);
		free(f->rdma[i].ports);
	}
	free(f->rdma);
	free(f->gpus);
	free(f);
}

static const struct ll_profile_expect dgx = { .gpus = 8, .active_rdma_ports = 8,
					      .link_layer = LL_LINK_LAYER_INFINIBAND, .gdr_required = LL_YES };

static void check(const struct ll_facts *f, const struct ll_profile_expect *e, const char *faults, size_t n_notes,
		  unsigned checked, unsigned stated)
{
	struct ll_health h;
	char *line;

	ll_health_check(f, e, &h);
	line = ll_health_faults_line(&h);
	if (faults)
		assert_string_equal(line, faults);
	else
		assert_null(line);
	assert_int_equal(h.n_notes, n_notes);
	assert_int_equal(h.n_checked, checked);
	assert_int_equal(h.n_stated, stated);
	free(line);
	ll_health_release(&h);
}

static void test_all_met(void **state)
{
	struct ll_facts *f = node(8, "AAAAAAAAEE", LL_YES); /* 8 compute ports and two storage ports */

	(void)state;
	check(f, &dgx, NULL, 0, 4, 4);
	node_free(f);
}

static void test_nothing_stated(void **state)
{
	struct ll_facts *f = node(0, "", LL_NO);
	struct ll_profile_expect none = { .gpus = -1, .active_rdma_ports = -1, .gdr_required = LL_UNKNOWN };

	(void)state;
	check(f, &none, NULL, 0, 0, 0);
	node_free(f);
}

/* A fetched profile's expectations never drain: what they add is a note; a local
 * expectation beside them still acts. */
static void test_fetched_only_warns(void **state)
{
	struct ll_facts *f = node(8, "AAAAAAAA", LL_NO);
	struct ll_profile_expect e = dgx;
	struct ll_health h;

	(void)state;
	e.gpus = 64;
	e.fetched = LL_EXPECT_GPUS | LL_EXPECT_GDR_REQUIRED;
	ll_health_check(f, &e, &h);
	assert_int_equal(h.n_faults, 0);
	assert_int_equal(h.n_notes, 2);
	assert_string_equal(h.notes[0], "expected 64 GPUs, found 8 (stated by a profile fetched over the network: a "
					"warning, it cannot drain the node)");
	ll_health_release(&h);
	e.fetched = LL_EXPECT_GPUS;
	ll_health_check(f, &e, &h);
	assert_int_equal(h.n_faults, 1);
	assert_non_null(strstr(h.faults[0], "GPUDirect RDMA is required"));
	assert_int_equal(h.n_notes, 1);
	ll_health_release(&h);
	node_free(f);
}

static void test_gpu_missing(void **state)
{
	struct ll_facts *f = node(7, "AAAAAAAA", LL_YES);

	(void)state;
	check(f, &dgx, "expected 8 GPUs, found 7", 0, 4, 4);
	node_free(f);
}

static void test_more_gpus_is_fine(void **state)
{
	struct ll_facts *f = node(9, "AAAAAAAA", LL_YES);

	(void)state;
	check(f, &dgx, NULL, 0, 4, 4);
	node_free(f);
}

static void test_port_down_named(void **state)
{
	struct ll_facts *f = node(8, "AAADAAAAE", LL_YES);

	(void)state;
	check(f, &dgx, "expected at least 8 active InfiniBand RDMA ports, found 7 (mlx5_3:1 DOWN, mlx5_8:1 Ethernet)", 0,
	      4, 4);
	node_free(f);
}

static void test_many_down_capped(void **state)
{
	struct ll_facts *f = node(8, "DDDDDDAA", LL_YES);

	(void)state;
	check(f, &dgx,
	      "expected at least 8 active InfiniBand RDMA ports, found 2 "
	      "(mlx5_0:1 DOWN, mlx5_1:1 DOWN, mlx5_2:1 DOWN, mlx5_3:1 DOWN and 2 more)",
	      0, 4, 4);
	node_free(f);
}

static void test_link_layer_alone(void **state)
{
	struct ll_facts *f = node(0, "E", LL_NO);
	struct ll_profile_expect ib = { .gpus = -1, .active_rdma_ports = -1, .link_layer = LL_LINK_LAYER_INFINIBAND,
					.gdr_required = LL_UNKNOWN };

	(void)state;
	check(f, &ib, "expected an active InfiniBand RDMA port, found none (mlx5_0:1 Ethernet)", 0, 1, 1);
	node_free(f);
	f = node(0, "EA", LL_NO);
	check(f, &ib, NULL, 0, 1, 1);
	node_free(f);
}

static void test_zero_ports_expected(void **state)
{
	struct ll_facts *f = node(0, "", LL_NO);
	struct ll_profile_expect eth = { .gpus = -1, .active_rdma_ports = 0, .gdr_required = LL_UNKNOWN };

	(void)state;
	check(f, &eth, NULL, 0, 1, 1);
	node_free(f);
}

/* A plain lstopo export: ports active, link layer unknown. Not a fault. */
static void test_unknown_link_layer_is_a_note(void **state)
{
	struct ll_facts *f = node(8, "UUUUUUUU", LL_YES);

	(void)state;
	check(f, &dgx, NULL, 1, 2, 4);
	node_free(f);
	/* ... but too few ports even counting the unknown ones is a fault. */
	f = node(8, "UUUUUUUD", LL_YES);
	check(f, &dgx, "expected at least 8 active InfiniBand RDMA ports, found 0 (mlx5_7:1 DOWN)", 0, 4, 4);
	node_free(f);
}

static void test_gdr(void **state)
{
	struct ll_facts *f = node(8, "AAAAAAAA", LL_NO);

	(void)state;
	check(f, &dgx, "GPUDirect RDMA is required but neither nvidia_peermem nor nv_peer_mem is loaded, and DMA-BUF is not usable", 0, 4, 4);
	node_free(f);
	f = node(8, "AAAAAAAA", LL_UNKNOWN);
	check(f, &dgx, NULL, 1, 3, 4);
	node_free(f);
}

static void test_several_faults_one_line(void **state)
{
	struct ll_facts *f = node(6, "AAAAAAAD", LL_NO);

	(void)state;
	check(f, &dgx,
	      "expected 8 GPUs, found 6; expected at least 8 active InfiniBand RDMA ports, found 7 (mlx5_7:1 DOWN); "
	      "GPUDirect RDMA is required but neither nvidia_peermem nor nv_peer_mem is loaded, and DMA-BUF is not usable",
	      0, 4, 4);
	node_free(f);
}

/* A topology that cannot tell (no PCI objects, no network OS devices): notes only,
 * never a fault that would drain the node. */
static void test_unknown_is_a_note(void **state)
{
	struct ll_facts *f = node(0, "", LL_YES);
	struct ll_health h;

	(void)state;
	f->gpus_known = false;
	f->netdevs_known = false;
	check(f, &dgx, NULL, 2, 1, 4);
	ll_health_check(f, &dgx, &h);
	assert_string_equal(h.notes[0], "GPUs are unknown, the topology has no PCI objects (an export without I/O): the GPU count is not checked");
	assert_string_equal(h.notes[1], "RDMA devices are unknown (a topology without network OS devices): ports not checked");
	ll_health_release(&h);
	node_free(f);
}

/* Devices NCCL cannot use do not make up the count; a missing plugin is a note. */
static void test_classes(void **state)
{
	struct ll_facts *f = node(8, "AAAAAAAA", LL_YES);
	const struct ll_profile_expect two = { .gpus = -1, .active_rdma_ports = 2, .gdr_required = LL_UNKNOWN };
	struct ll_health h;

	(void)state;
	for (size_t i = 0; i < 7; i++)
		f->rdma[i].rdma_class = LL_RDMA_CLASS_UNUSABLE;
	check(f, &two, "expected at least 2 active RDMA ports, found 1 (mlx5_0:1 unusable, mlx5_1:1 unusable, "
		       "mlx5_2:1 unusable, mlx5_3:1 unusable and 3 more)", 0, 1, 1);
	for (size_t i = 0; i < 8; i++)
		f->rdma[i].rdma_class = LL_RDMA_CLASS_PLUGIN;
	check(f, &two, NULL, 0, 1, 1);
	f->net_plugins_known = true;
	ll_health_check(f, &two, &h);
	assert_int_equal(h.n_faults, 0);
	assert_int_equal(h.n_notes, 1);
	assert_non_null(strstr(h.notes[0], "mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7 need the "
					    "aws-ofi-nccl net plugin, which is not on the library path"));
	ll_health_release(&h);
	node_free(f);
}

/* The expected ports must be usable from user space; DMA-BUF stands in for the
 * peer-memory module. */
static void test_plumbing(void **state)
{
	struct ll_facts *f = node(8, "AAAAAAAA", LL_NO);
	const struct ll_profile_expect ib = { .gpus = -1, .active_rdma_ports = 8,
					      .link_layer = LL_LINK_LAYER_INFINIBAND, .gdr_required = LL_YES };

	(void)state;
	f->dmabuf = LL_YES;
	check(f, &ib, NULL, 0, 3, 3);
	f->rdma[2].uverbs = "";
	f->rdma[5].uverbs = "uverbs5";
	f->rdma[5].uverbs_access = LL_UVERBS_MISSING;
	check(f, &ib, "RDMA devices unusable from user space: mlx5_2 has no uverbs device (ib_uverbs not loaded), "
		      "/dev/infiniband/uverbs5 of mlx5_5 is missing (udev)", 0, 3, 3);
	/* Access rights of a user are no node fault. */
	f->rdma[2].uverbs = NULL;
	f->rdma[5].uverbs_access = LL_UVERBS_DENIED;
	check(f, &ib, NULL, 0, 3, 3);
	f->rdma[5].uverbs = NULL;
	node_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_met),
		cmocka_unit_test(test_unknown_is_a_note),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_plumbing),
		cmocka_unit_test(test_nothing_stated),
		cmocka_unit_test(test_gpu_missing),
		cmocka_unit_test(test_fetched_only_warns),
		cmocka_unit_test(test_more_gpus_is_fine),
		cmocka_unit_test(test_port_down_named),
		cmocka_unit_test(test_many_down_capped),
		cmocka_unit_test(test_link_layer_alone),
		cmocka_unit_test(test_zero_ports_expected),
		cmocka_unit_test(test_unknown_link_layer_is_a_note),
		cmocka_unit_test(test_gdr),
		cmocka_unit_test(test_several_faults_one_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
