/* Live NCCL watcher for supervise mode: follows the NCCL_DEBUG_FILE outputs of a job
 * while it runs, says once per node which transport NCCL settled on, passes each
 * warning on as it appears, and tells the supervisor to stop the job when NCCL fell
 * back to sockets and the policy says so.
 *
 * Use from a supervisor loop:
 *
 *	add = ll_ncclwatch_env(dir, environ, vars);     // NCCL_DEBUG=INFO, NCCL_DEBUG_FILE=DIR/nccl.%h.%p
 *	ll_ncclwatch_new(dir, expect, policy, &w, &err);
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
/* Files the watcher reads: the names ll_ncclwatch_env() gives NCCL. */
#define LL_NCCLWATCH_FILE_PREFIX "nccl."

enum ll_fallback_policy { LL_FALLBACK_WARN = 0, LL_FALLBACK_STOP };
const char *ll_fallback_policy_name(enum ll_fallback_policy p); /* "warn", "stop" */
int ll_fallback_policy_parse(const char *s, enum ll_fallback_policy *ret); /* 0 or -EINVAL */

/* Decide NCCL's debug variables for a supervised launch. When the inherited
 * environment `envp` (NULL-terminated "NAME=VALUE", may be NULL) sets neither
 * NCCL_DEBUG nor NCCL_DEBUG_FILE, fills add[0] = "NCCL_DEBUG=INFO" and
 * add[1] = "NCCL_DEBUG_FILE=DIR/nccl.%h.%p" (malloc'ed, the caller frees them) and
 * returns true: watch DIR. Otherwise returns false and leaves `add` alone: the
 * user's own NCCL logging stands and there is nothing to watch. */
bool ll_ncclwatch_env(const char *dir, char *const *envp, char *add[2]);

/* What a plan leads one to expect, from its values (NULL when unset):
 * LLMLAUNCH_NET "ib"/"roce"/"socket" (what the probe found), overridden by a user's
 * NCCL_NET=Socket or NCCL_IB_DISABLE=1 (sockets on purpose). Anything else: any. */
enum ll_net_expect ll_ncclwatch_expect_from_plan(const char *llmlaunch_net, const char *nccl_net,
						 const char *nccl_ib_disable);

struct ll_ncclwatch;

/* Watch `dir`, which must exist, for files named LL_NCCLWATCH_FILE_PREFIX*.
 * -errno with a message naming the directory. */
int ll_ncclwatch_new(const char *dir, enum ll_net_expect expect, enum ll_fallback_policy policy,
		     struct ll_ncclwatch **ret, struct ll_error *err);
void ll_ncclwatch_free(struct ll_ncclwatch *w);
static inline void ll_ncclwatch_freep(struct ll_ncclwatch **w) { if (*w) { ll_ncclwatch_free(*w); *w = NULL; } }

/* Read every regular file in the directory, not only NCCL_DEBUG_FILE names
 * (`llmlaunch logs --follow` on a directory the user chose). */
void ll_ncclwatch_watch_all(struct ll_ncclwatch *w);

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

/* For ll_supervise's watch hook (ll_supervise_watch_fn): `data` is the watcher;
 * polls it printing to stderr, returns 1 when the job must stop. */
int ll_ncclwatch_supervise(void *data);

/* The job ended: read what is left, scan unterminated last lines, and print the
 * summary of every node not printed yet. */
void ll_ncclwatch_finish(struct ll_ncclwatch *w, FILE *out);

/* Everything seen so far; valid until the next call on `w`. */
const struct ll_nccl_verdict *ll_ncclwatch_verdict(struct ll_ncclwatch *w);

#endif
