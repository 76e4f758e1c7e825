/* The preflight check's cost at any size, simulated (docs/check.md): walks the pair
 * schedule of ll_check_partner() for N nodes (how many pair tests a node is in, how
 * many rounds) and prices every phase with ll_check_estimate() under three link
 * models. Usage: check-cost [N...] (default 4 1000 10000). One line per model and N:
 *   model nodes rounds pair_tests_per_node allreduce_s pairs_s gather_s total_s gather_bytes */
#include <stdio.h>
#include <stdlib.h>

#include "llmlaunch/check.h"

struct model {
	const char *name;
	bool gpus;
	struct ll_check_model m;
};

static const struct model models[] = {
	/* 8 GPUs a node, 8 NDR InfiniBand ports of 400 Gb/s (50 GB/s) each; 10 us a message */
	{ "ndr-8gpu", true, { .alpha_us = 10, .node_gbps = 400, .nproc = 8 } },
	/* the same nodes after a fallback to sockets over one 100 GbE port: 12.5 GB/s, 50 us */
	{ "eth100g-8gpu", true, { .alpha_us = 50, .node_gbps = 12.5, .nproc = 8 } },
	/* this project's emulated cluster: gloo on veths, 1 process a node (measured:
	 * about 0.5 GB/s a pair and 250 us a small exchange on a 2-core machine) */
	{ "emulated-gloo", false, { .alpha_us = 250, .node_gbps = 0.5, .nproc = 1 } },
};

int main(int argc, char **argv)
{
	static const size_t defaults[] = { 4, 1000, 10000 };
	size_t n_sizes = argc > 1 ? (size_t)argc - 1 : LL_ARRAY_SIZE(defaults);

	printf("%-14s %6s %6s %10s %11s %8s %9s %8s %12s\n", "model", "nodes", "rounds", "tests/node", "allreduce_s",
	       "pairs_s", "gather_s", "total_s", "gather_bytes");
	for (size_t k = 0; k < LL_ARRAY_SIZE(models); k++)
		for (size_t i = 0; i < n_sizes; i++) {
			size_t n = argc > 1 ? strtoul(argv[i + 1], NULL, 10) : defaults[i];
			struct ll_check_params p;
			struct ll_check_estimate e;

			ll_check_params_default(&p, models[k].gpus);
			ll_check_estimate(n, &p, &models[k].m, &e);
			printf("%-14s %6zu %6d %10zu %11.3f %8.3f %9.3f %8.3f %12zu\n", models[k].name, n, e.rounds,
			       e.pair_tests_per_node, e.allreduce_s, e.pairs_s, e.gather_s, e.total_s, e.gather_bytes);
		}
	return 0;
}
