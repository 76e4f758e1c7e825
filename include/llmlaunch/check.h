/* The preflight check (docs/check.md): which node pairs with which, what the
 * measurements cost, and the verdict on what the measuring script reported.
 *
 * llmlaunch launches python/llmlaunch_check.py through torchrun like any job; the
 * script only measures and writes one JSON object a line. Everything here is pure:
 * the schedule (ll_check_partner), the cost model and its simulation
 * (ll_check_estimate), reading the script's lines (ll_check_parse) and the verdict
 * (ll_check_decide). Every node reads the same lines and so reaches the same verdict:
 * under --on-slow stop or exclude, no node starts the job. */
#ifndef LLMLAUNCH_CHECK_H
#define LLMLAUNCH_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include "llmlaunch/nccl-scan.h"
#include "llmlaunch/profile.h"
#include "llmlaunch/util.h"

/* ---- the schedule (check.c) ---- */

/* Rounds of pair tests for n nodes: nodes sit in a ring in node-rank order and each
 * ring edge (i, i+1 mod n) is tested once, so every node is in exactly two pairs with
 * two different partners. Even n: 2 rounds (even edges, then odd edges); odd n >= 3:
 * 3 (the edge closing the ring alone in the last); n == 2: 1; n < 2: 0. */
int ll_check_rounds(size_t n);
/* Node `node`'s partner in `round`, or -1 when it waits that round. */
long ll_check_partner(size_t n, int round, size_t node);

/* ---- what it costs (check.c) ---- */

/* The measurement's parameters: llmlaunch passes them to the script. */
struct ll_check_params {
	size_t sizes[8];            /* all-reduce sizes in bytes */
	size_t n_sizes;
	size_t pair_bytes;
	int iters, reps, lat_iters;
	int allreduce_reps;
};
/* Defaults: GPUs get sizes up to 256 MiB and 64 MiB pairs (bandwidth shows only at
 * large messages), 5 iterations of 5 repetitions; CPUs (gloo) 8 B and 1 MiB, with
 * 1 MiB pairs, 3 iterations and 15 repetitions of a pair (noise: docs/check.md). */
void ll_check_params_default(struct ll_check_params *p, bool gpus);

/* A link model for the simulation: per-message latency and bandwidth of one node's
 * network (GB/s per direction), the all-reduce's per-step overhead. */
struct ll_check_model {
	double alpha_us;            /* one message's latency */
	double node_gbps;           /* one node's bandwidth per direction, GB/s */
	int nproc;                  /* ranks a node */
};

struct ll_check_estimate {
	int rounds;
	size_t pair_tests_per_node; /* at most 2: flat in the job's size */
	double allreduce_s;         /* the whole job's all-reduces, every size */
	double pairs_s;             /* every round, with its barrier */
	double gather_s;            /* every node's figures to every node (one all-reduce) */
	double total_s;             /* measurement alone: without torch's start and NCCL's init */
	size_t gather_bytes;        /* that all-reduce's size: a row per node */
};
/* Simulate the schedule's rounds for n nodes under the model: each round is as long as
 * its slowest pair (all pairs of a round run at once) plus a barrier (a tree: 2 log2 w
 * steps); an all-reduce takes the faster of a pipelined ring (2(w-1) latencies, the data
 * twice through each node's links) and a pipelined tree (2 log2 w latencies, the same
 * data), as NCCL picks between them. Pure. */
void ll_check_estimate(size_t n, const struct ll_check_params *p, const struct ll_check_model *m,
		       struct ll_check_estimate *ret);

/* ---- what the script reported (check-result.c) ---- */

struct ll_check_size {
	size_t bytes;
	int iters;
	double time_us;             /* median over repetitions of the slowest rank's mean */
	double algbw_gbps;          /* bytes / time */
	double busbw_gbps;          /* algbw * 2(w-1)/w, as nccl-tests defines it for all-reduce */
};

struct ll_check_node {
	char *name;                 /* a host name (ll_check_node_name_valid), NULL: unknown */
	bool seen;                  /* its node line was read */
	double pair_gbps[3];        /* per round: bytes each way of this node's ranks / the
				       slower view of the pair (each view: its best
				       repetition); -1: no pair that round */
	double pair_lat_us[3];
	double gbps;                /* the node's figure: its best pair (-1: none) */
	double lat_us;              /* its best pair's latency (-1: none) */
	bool slow, broken;
	bool nccl_fallback;         /* that node's llmlaunch saw NCCL fall back in its logs */
	char *why;                  /* for slow or broken: "1.2 GB/s, 0.05 of the median 24.0 GB/s" */
};

struct ll_check_result {
	char *backend;              /* "nccl" or "gloo" */
	int world, nnodes, nproc, rounds;
	struct ll_check_size *sizes;
	size_t n_sizes;
	struct ll_check_node *nodes;
	bool complete;              /* the script wrote its "end" line */
	char *last_phase;           /* the last progress line: "pairs 3 of 5" */
};
void ll_check_result_release(struct ll_check_result *r);

/* Bounds of a result: nodes, processes a node, and a node name's length (the
 * script carries 63 bytes a node). */
#define LL_CHECK_MAX_NODES (1 << 20)
#define LL_CHECK_MAX_NPROC 4096
#define LL_CHECK_NAME_MAX 63

/* A node name that may go into the exclude file and to scontrol: host name syntax
 * (letters, digits, '-' inside dot-separated labels of at most 63; '_' as Slurm
 * allows), at most LL_CHECK_NAME_MAX bytes. */
bool ll_check_node_name_valid(const char *name);

/* Read the script's lines. `text` may end in the middle of a line (a job that was
 * stopped): what came before is kept and complete stays false. -EINVAL (message
 * names `origin` and the line) on a line that is not what the script writes. */
int ll_check_parse(const char *text, const char *origin, struct ll_check_result *ret, struct ll_error *err);

/* ---- the verdict (check-result.c) ---- */

/* Without an expectation, a node is slow when its figure is below the job's median by
 * this ratio (and its latency above the median by the latency ratio and a gap). */
#define LL_CHECK_SLOW_RATIO 0.5
#define LL_CHECK_LAT_RATIO 3.0
#define LL_CHECK_LAT_GAP_US 50.0
/* The median rule needs this many nodes: with two, both share their only pair. */
#define LL_CHECK_MEDIAN_MIN_NODES 3

/* One threshold and where it came from ("profile FILE:LINE", "the job's median"). */
struct ll_check_threshold {
	double value;               /* < 0: none */
	char *source;
};

struct ll_check_verdict {
	double median_gbps, median_lat_us;  /* over the nodes with a figure; -1: none */
	struct ll_check_threshold slow_gbps;        /* a node below it is slow */
	struct ll_check_threshold slow_lat_us;      /* a node above it is slow */
	struct ll_check_threshold job_busbw_gbps;   /* the whole job's all-reduce, largest size */
	size_t *named;              /* indices of slow or broken nodes, in node order */
	size_t n_named;
	bool job_slow;              /* the whole job below its expectation */
	char *job_why;
	bool transport_fallback;    /* NCCL ran over sockets where the plan expected RDMA */
	char *transport_why;
	bool ok;                    /* nothing named, nothing slow, no fallback, complete */
	char *advice;               /* what a fetched profile's figures say: a warning, never acted on */
};
void ll_check_verdict_release(struct ll_check_verdict *v);

/* Decide on a complete result. `expect` (NULL: none) gives the profile's figures;
 * those a fetched profile stated (figure.fetched) decide nothing: what they would
 * say is v.advice;
 * `nccl` (NULL: no NCCL log was read) the log verdict: a fallback to sockets where
 * the plan expected InfiniBand or RoCE makes the check fail whatever the numbers.
 * Fills node slow/broken/why in `res`. */
void ll_check_decide(struct ll_check_result *res, const struct ll_profile_expect *expect,
		     const struct ll_nccl_verdict *nccl, struct ll_check_verdict *ret);

/* ---- acting on it ---- */

enum ll_check_on_slow { LL_ON_SLOW_WARN = 0, LL_ON_SLOW_STOP, LL_ON_SLOW_EXCLUDE };
const char *ll_check_on_slow_name(enum ll_check_on_slow p);
int ll_check_on_slow_parse(const char *s, enum ll_check_on_slow *ret); /* 0 or -EINVAL */

/* The named nodes in Slurm hostlist syntax, for sbatch --exclude (malloc'ed); NULL
 * when a named node has no name (no list that leaves one out, no placeholder). */
char *ll_check_exclude_list(const struct ll_check_result *res, const struct ll_check_verdict *v);

#endif
