/* The job channel (launcher/launch/channel.c, docs/failures.md "The job channel"):
 * for the job's life, every node's supervising llmlaunch holds one TCP connection to
 * node 0's, which decides for the whole job.
 *
 * Each node reports its workers' ends (ll_worker_exit) and a hang its watch saw; node
 * 0 stops every node at the first failure of a final attempt or a hang (STOP), waits
 * until each node's torchrun has ended (DONE) and sends every node one verdict, the
 * same line on each (VERDICT). A node whose connection to node 0 breaks stops its own
 * ranks: nothing waits for a node 0 that is gone. A node whose connection breaks
 * before it said its torchrun ended, while the job runs, is a failure node 0 stops
 * the job for, and the verdict names that node (ll_worker_exit's node_left).
 *
 * The channel uses the agreement's check-in protocol (LLMLAUNCH2, agree-rdzv.c): the
 * same hello and token, node 0 listening on the first free of LL_RDZV_PORTS ports
 * after torchrun's master port (which torchrun's store holds), the other nodes
 * connecting to the agreed master address, answered HELLO or ALIEN. */
#ifndef LLMLAUNCH_CHANNEL_H
#define LLMLAUNCH_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include "llmlaunch/launch.h"

struct ll_channel_job {
	const char *id;             /* the same text on every node (the token) */
	size_t nnodes, node_rank;
	const char *master_addr;    /* node 0's agreed address, numeric */
	int master_port;            /* torchrun's; the channel uses the ports after it */
	const char *name;           /* this node's name, as its workers record it */
	int max_restarts;           /* a failure of an earlier attempt is restarted, not final */
	double connect_s;           /* how long a node tries to reach node 0 */
};

struct ll_channel;

/* What ll_channel_poll() says, as flags that stay set once raised. */
enum {
	LL_CHANNEL_STOP = 0x1,      /* node 0 stops the job: stop this node's torchrun */
	LL_CHANNEL_STACKS = 0x2,    /* a node saw a hang: take this node's ranks' stacks */
	LL_CHANNEL_VERDICT = 0x4,   /* the verdict arrived (ll_channel_verdict) */
	LL_CHANNEL_LOST = 0x8,      /* the connection to node 0 broke (ll_channel_lost) */
	LL_CHANNEL_GONE = 0x10,     /* no channel: node 0 ended well first, or never answered */
};

/* Node 0 listens, the others start connecting (non-blocking: ll_channel_poll does
 * the work). 0 or -errno with err set. */
int ll_channel_open(const struct ll_channel_job *job, struct ll_channel **ret, struct ll_error *err);
/* Move the channel on without blocking; the flags above. */
int ll_channel_poll(struct ll_channel *c);
/* Report one of this node's workers' ends (again: ignored). */
void ll_channel_exit(struct ll_channel *c, const struct ll_worker_exit *x);
/* Report this node's hang: each rank's innermost frame (`collective`: it waits inside
 * torch.distributed), then how long no rank here printed. */
void ll_channel_stack(struct ll_channel *c, int rank, bool collective, const char *where);
void ll_channel_hang(struct ll_channel *c, double silent_s);
/* This node's torchrun ended with `status`; then wait up to `wait_s` for the verdict
 * where one is coming (node 0 stopped the job, or this node's job failed). Returns
 * the flags. Node 0 serves the others meanwhile and sends the verdict or, its job
 * having ended well with no failure known, lets the others go on without it. */
int ll_channel_done(struct ll_channel *c, int status, double wait_s);
/* The verdict, the same line on every node, and the job's exit status; NULL: none. */
const char *ll_channel_verdict(const struct ll_channel *c, int *ret_status);
/* Why there is no channel (LL_CHANNEL_LOST or _GONE): "the channel to node 0 (n1) was
 * lost: Connection reset by peer". NULL: none. */
const char *ll_channel_lost(const struct ll_channel *c);
/* Node 0: every node's records, one "host rank R (local L, attempt A): exit N at
 * TIME: CAUSE" line each, "host node N: llmlaunch left the job at TIME: ERROR" for a
 * node that left (malloc'ed). NULL on the other nodes. */
char *ll_channel_record(const struct ll_channel *c);
void ll_channel_close(struct ll_channel *c);
static inline void ll_channel_closep(struct ll_channel **c) { if (*c) { ll_channel_close(*c); *c = NULL; } }

/* ---- node 0's decision, pure (for tests) ---- */

/* The verdict on what every node reported: the first failure of the latest attempt
 * across nodes, its consequences counted after it (ll_failure_find; equal times: the
 * lower rank), a node that left among them. *ret_status: the failing rank's, 137 for
 * a node that left. Malloc'ed; NULL: no rank failed. */
char *ll_channel_failure_verdict(const struct ll_worker_exit *v, size_t n, int *ret_status);
/* The hang verdict from every node's ranks (ll_stacks_group): `host` the node whose
 * watch saw it first. Malloc'ed. */
char *ll_channel_hang_verdict(const char *host, double silent_s, const struct ll_rank_stack *v, size_t n);
/* One worker's end as a line of the channel ("EXIT ...\n", malloc'ed) and back
 * (-EPROTO when it is not one; *ret owns host and cause). */
char *ll_channel_exit_line(const struct ll_worker_exit *x);
int ll_channel_exit_parse(const char *line, struct ll_worker_exit *ret);

#endif
