/* The preflight check's schedule and its cost (llmlaunch/check.h, docs/check.md). */
#include "llmlaunch/check.h"

#include <errno.h>
#include <math.h>
#include <string.h>

int ll_check_rounds(size_t n)
{
	if (n < 2)
		return 0;
	if (n == 2)
		return 1;
	return n % 2 ? 3 : 2;
}

long ll_check_partner(size_t n, int round, size_t node)
{
	long i = (long)node, last = (long)n - 1;

	if (node >= n || round < 0 || round >= ll_check_rounds(n))
		return -1;
	if (n == 2)
		return 1 - i;
	if (n % 2 == 0) {
		if (round == 0)
			return i ^ 1;
		/* the odd edges (1,2), (3,4), ..., (n-1,0) */
		return i % 2 ? (i + 1) % (long)n : (i + last) % (long)n;
	}
	switch (round) {
	case 0: /* (0,1), (2,3), ..., (n-3,n-2); n-1 waits */
		return i == last ? -1 : i ^ 1;
	case 1: /* (1,2), ..., (n-2,n-1); 0 waits */
		return i == 0 ? -1 : i % 2 ? i + 1 : i - 1;
	default: /* (n-1,0) closes the ring */
		return i == last ? 0 : i == 0 ? last : -1;
	}
}

void ll_check_params_default(struct ll_check_params *p, bool gpus)
{
	*p = (struct ll_check_params){ .iters = 5, .reps = 5, .lat_iters = 20, .allreduce_reps = 5 };
	if (gpus) {
		static const size_t s[] = { 8, 1 << 20, 64 << 20, 256 << 20 };

		memcpy(p->sizes, s, sizeof(s));
		p->n_sizes = LL_ARRAY_SIZE(s);
		p->pair_bytes = 64 << 20;
	} else {
		/* gloo copies through the CPU: smaller messages show a slow link as well,
		 * in a fraction of the time */
		p->sizes[0] = 8;
		p->sizes[1] = 1 << 20;
		p->n_sizes = 2;
		p->pair_bytes = 1 << 20;
		p->iters = 3;
		p->reps = 15;
	}
}

/* A tree's depth in messages: 2 log2(w) (up, then down). */
static double tree_steps(double w)
{
	return w > 1 ? 2 * ceil(log2(w)) : 0;
}

/* GB/s -> bytes per microsecond. */
static double bytes_per_us(double gbps)
{
	return gbps * 1e3;
}

static double allreduce_us(double w, double bytes, const struct ll_check_model *m)
{
	double bw = bytes_per_us(m->node_gbps) / (m->nproc > 0 ? m->nproc : 1), ring, tree;

	if (w <= 1)
		return 0;
	/* both pipelined: the data crosses each link twice (reduce, then broadcast), the
	 * latency is a step per rank around the ring, a step per level of the tree */
	ring = 2 * (w - 1) * m->alpha_us + 2 * (w - 1) / w * bytes / bw;
	tree = tree_steps(w) * m->alpha_us + 2 * bytes / bw;
	return ring < tree ? ring : tree;
}

void ll_check_estimate(size_t n, const struct ll_check_params *p, const struct ll_check_model *m,
		       struct ll_check_estimate *ret)
{
	double w = (double)n * (m->nproc > 0 ? m->nproc : 1), node_bw = bytes_per_us(m->node_gbps);
	double barrier = tree_steps(w) * m->alpha_us, per_rank_row, ar = 0, pairs = 0;
	int rounds = ll_check_rounds(n);

	*ret = (struct ll_check_estimate){ .rounds = rounds };
	for (size_t i = 0; i < p->n_sizes; i++) {
		double one = allreduce_us(w, (double)p->sizes[i], m);

		/* a warm-up, then per repetition a barrier and `iters` all-reduces, then the
		 * MAX all-reduce of the repetitions' times */
		ar += one + p->allreduce_reps * (barrier + p->iters * one) + allreduce_us(w, 8.0 * p->allreduce_reps, m);
	}
	for (int r = 0; r < rounds; r++) {
		/* every rank of a node sends pair_bytes at once through the node's links */
		double exchange = m->alpha_us + (double)p->pair_bytes * (m->nproc > 0 ? m->nproc : 1) / node_bw;
		double small = 2 * m->alpha_us;

		pairs += barrier + exchange + p->reps * (p->iters * exchange + p->lat_iters * small);
	}
	for (size_t i = 0; i < n; i++) {
		int in = 0;

		for (int r = 0; r < rounds; r++)
			in += ll_check_partner(n, r, i) >= 0;
		if ((size_t)in > ret->pair_tests_per_node)
			ret->pair_tests_per_node = (size_t)in;
	}
	/* the script's table: a row per node (2 doubles a round and repetition, the NCCL
	 * flag, 64 for the name), one MAX all-reduce, then a barrier */
	per_rank_row = 8.0 * (2.0 * rounds * p->reps + 1 + 64);
	ret->gather_bytes = (size_t)(per_rank_row * (double)n);
	ret->gather_s = (allreduce_us(w, per_rank_row * (double)n, m) + barrier) / 1e6;
	ret->allreduce_s = ar / 1e6;
	ret->pairs_s = pairs / 1e6;
	ret->total_s = ret->allreduce_s + ret->pairs_s + ret->gather_s;
}

const char *ll_check_on_slow_name(enum ll_check_on_slow p)
{
	static const char *const names[] = { "warn", "stop", "exclude" };

	return (unsigned)p < LL_ARRAY_SIZE(names) ? names[p] : "?";
}

int ll_check_on_slow_parse(const char *s, enum ll_check_on_slow *ret)
{
	for (int i = LL_ON_SLOW_WARN; i <= LL_ON_SLOW_EXCLUDE; i++)
		if (strcmp(s, ll_check_on_slow_name(i)) == 0) {
			*ret = i;
			return 0;
		}
	return -EINVAL;
}
