/* Rank 0's work per node at check-in, for the full agreement without PMIx: parse the
 * node's record (ll_agree_node_parse, the text a CHECKIN line carries) and note its
 * digests in the table that says whose full summary to ask for (ll_agree_digests_add).
 * Records as 10,000-node jobs send them: one hardware and one network digest for all
 * but one node in a thousand, a leaf switch each, arriving in a shuffled order. Prints
 * one JSON line per node count (the counts interleaved in each run): the median over R runs of the time per node in
 * nanoseconds (parse and table; the table alone), and the summaries asked for. Flat time per node from 16 to 10,000 nodes
 * is the point: no rescan of the nodes already here.
 * Usage: agree-digests [R [N...]]   (default 21 runs; 16 100 1000 5000 10000 nodes) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llmlaunch/agree.h"

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct job {
	size_t n, asked;
	char **lines;               /* the records as CHECKIN lines carry them */
	size_t *arrival;            /* node 0 first (rank 0 itself), then any order */
	double *per_node, *table_only;
};

static void job_init(struct job *j, size_t n, int runs)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	j->n = n;
	j->lines = ll_calloc(n, sizeof(char *));
	j->arrival = ll_calloc(n, sizeof(size_t));
	j->per_node = ll_calloc((size_t)runs, sizeof(double));
	j->table_only = ll_calloc((size_t)runs, sizeof(double));
	for (size_t i = 0; i < n; i++) {
		struct ll_agree_node rec = {
			.hw_digest = i % 1000 == 999 ? 0x5eed0000ull + i : 0x1234abcd5678ef01ull,
			.net_digest = 0x0fedcba987654321ull,
			.host_key = 0x1000 + i,
			.port = 29500,
			.topology_addr = ll_asprintf("core.leaf%02zu.gpu%05zu", i % 40, i + 1),
		};
		j->lines[i] = ll_agree_node_format(&rec);
		ll_agree_node_release(&rec);
		j->arrival[i] = i;
	}
	for (size_t i = n - 1; i > 1; i--) {
		size_t k, t;
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		k = 1 + (size_t)(x % i);
		t = j->arrival[i], j->arrival[i] = j->arrival[k], j->arrival[k] = t;
	}
}

/* One pass: every node's record parsed and its digests noted, as rank 0 does when the
 * CHECKIN lines come in; then the table alone on the parsed records. */
static int job_run(struct job *j, int r)
{
	struct ll_agree_node *nodes = ll_calloc(j->n, sizeof(*nodes));
	struct ll_agree_digests *d = ll_agree_digests_new();
	struct ll_error err = { 0 };
	double t0 = now_ns();

	j->asked = 0;
	for (size_t k = 0; k < j->n; k++) {
		size_t i = j->arrival[k];
		if (ll_agree_node_parse(j->lines[i], "bench", &nodes[i], &err) < 0) {
			fprintf(stderr, "agree-digests: %s\n", err.message);
			return 1;
		}
		j->asked += ll_agree_digests_add(d, &nodes[i], i) && i != 0;
	}
	j->per_node[r] = (now_ns() - t0) / (double)j->n;
	ll_agree_digests_free(d);
	d = ll_agree_digests_new();
	t0 = now_ns();
	for (size_t k = 0; k < j->n; k++)
		ll_agree_digests_add(d, &nodes[j->arrival[k]], j->arrival[k]);
	j->table_only[r] = (now_ns() - t0) / (double)j->n;
	ll_agree_digests_free(d);
	for (size_t i = 0; i < j->n; i++)
		ll_agree_node_release(&nodes[i]);
	free(nodes);
	return 0;
}

static void job_report(struct job *j, int runs)
{
	qsort(j->per_node, (size_t)runs, sizeof(double), cmp_double);
	qsort(j->table_only, (size_t)runs, sizeof(double), cmp_double);
	printf("{\"nodes\":%zu,\"runs\":%d,\"ns_per_node_median\":%.1f,\"ns_per_node_max\":%.1f,"
	       "\"table_ns_per_node_median\":%.1f,\"summaries_asked\":%zu}\n",
	       j->n, runs, j->per_node[runs / 2], j->per_node[runs - 1], j->table_only[runs / 2], j->asked);
	for (size_t i = 0; i < j->n; i++)
		free(j->lines[i]);
	free(j->lines);
	free(j->arrival);
	free(j->per_node);
	free(j->table_only);
}

int main(int argc, char **argv)
{
	static const size_t counts[] = { 16, 100, 1000, 5000, 10000 };
	int runs = argc > 1 ? atoi(argv[1]) : 21;
	size_t n_jobs = argc > 2 ? (size_t)(argc - 2) : LL_ARRAY_SIZE(counts);
	struct job *jobs;

	if (runs < 1)
		return 2;
	jobs = ll_calloc(n_jobs, sizeof(*jobs));
	for (size_t k = 0; k < n_jobs; k++)
		job_init(&jobs[k], argc > 2 ? strtoul(argv[k + 2], NULL, 10) : counts[k], runs);
	/* Sizes interleaved within each run: a burst of other work on the machine falls on
	 * all of them alike, so their ratios hold. */
	for (int r = 0; r < runs; r++)
		for (size_t k = 0; k < n_jobs; k++)
			if (jobs[k].n < 1 || job_run(&jobs[k], r) != 0)
				return 1;
	for (size_t k = 0; k < n_jobs; k++)
		job_report(&jobs[k], runs);
	free(jobs);
	return 0;
}
