/* Live NCCL watcher for supervise mode: follows the NCCL_DEBUG_FILE outputs of a job
 * while it runs, says once per node which transport NCCL settled on, passes each
 * warning on as it appears, and tells the supervisor to stop the job when NCCL fell
 * back to sockets and the policy says so.
 *
 * Use from a supervisor loop (the launch's plan says which files NCCL writes: its
 * "nccl_log", llmlaunch/launch.h):
 *
 *	ll_ncclwatch_new(dir, prefix, ll_ncclwatch_expect(LLMLAUNCH_NET), policy, &w, &err);
 *	loop: poll ll_ncclwatch_fd(w) (or sleep LL_NCCLWATCH_INTERVAL_MS), then
 *	      if (ll_ncclwatch_poll(w, stderr) == 1) stop the job: ll_ncclwatch_stop_reason(w)
 *	at exit: ll_ncclwatch_finish(w, stderr); ll_ncclwatch_free(w);
 */
#ifndef LLMLAUNCH_NCCLWATCH_H
#define LLMLAUNCH_NCCLWATCH_H

#include <stdbool.h>
#include <stdio.h>
#include "llmlaunch/nccl-scan.h"
#include "llmlaunch/util.h"

/* How often to poll when ll_ncclwatch_fd() gives no descriptor, and the longest a
 * caller should wait between polls even with one (a host's summary may be due on a
 * timer, see docs/logs.md). */
#define LL_NCCLWATCH_INTERVAL_MS 150
enum ll_fallback_policy { LL_FALLBACK_WARN = 0, LL_FALLBACK_STOP };
int ll_fallback_policy_parse(const char *s, enum ll_fallback_policy *ret); /* 0 or -EINVAL */

/* What the plan's transport (LLMLAUNCH_NET, decided once by the planner with the
 * user's NCCL_NET and NCCL_IB_DISABLE in it) leads one to expect: "ib", "roce",
 * "socket"; anything else: any. */
enum ll_net_expect ll_ncclwatch_expect(const char *llmlaunch_net);

struct ll_ncclwatch;

/* Watch `dir`, which must exist, for regular files whose names start with `prefix`
 * (NULL: every regular file, as `llmlaunch logs --follow DIR` reads a directory the
 * user chose). -errno with a message naming the directory. */
int ll_ncclwatch_new(const char *dir, const char *prefix, enum ll_net_expect expect, enum ll_fallback_policy policy,
		     struct ll_ncclwatch **ret, struct ll_error *err);
void ll_ncclwatch_free(struct ll_ncclwatch *w);
static inline void ll_ncclwatch_freep(struct ll_ncclwatch **w) { if (*w) { ll_ncclwatch_free(*w); *w = NULL; } }

/* An inotify descriptor that becomes readable when the directory changes, or -1
 * (then poll every LL_NCCLWATCH_INTERVAL_MS). ll_ncclwatch_poll drains it. */
int ll_ncclwatch_fd(const struct ll_ncclwatch *w);

/* Non-blocking: read the bytes written since the last call (partial lines are kept
 * for the next call), then write to `out` one line per node whose NCCL finished
 * initialising (again when its summary changes) and one line per new warning.
 * Returns 1 when the policy says stop, 0 otherwise. Only a proven fallback stops
 * (docs/logs.md): lines that prove nothing yet, like the NET/Socket line NCCL 2.4 prints
 * at init whatever it then uses, never do. */
int ll_ncclwatch_poll(struct ll_ncclwatch *w, FILE *out);
/* NULL until stop; then which host, why, and the lines that proved it:
 * "NCCL on n2 is not using RDMA: NET/IB found no usable device (shown by FILE:LINE: TEXT);
 * sockets: FILE:LINE: TEXT". The caller says it once. */
const char *ll_ncclwatch_stop_reason(const struct ll_ncclwatch *w);

/* The job ended: read what is left, scan unterminated last lines, and print the
 * summary of every node not printed yet. */
void ll_ncclwatch_finish(struct ll_ncclwatch *w, FILE *out);

/* Everything seen so far; valid until the next call on `w`. */
const struct ll_nccl_verdict *ll_ncclwatch_verdict(struct ll_ncclwatch *w);

#endif
