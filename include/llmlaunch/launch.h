/* Stage 4: turn a plan into torch.distributed.run's argv and environment, and run it.
 *
 * Placement crosses from llmlaunch to each worker through one environment variable,
 * LLMLAUNCH_PLACEMENT ("0:cpus=0-7:mem=0;1:cpus=8-15:mem=1"), because torchrun gives
 * every local rank the same argv: `llmlaunch __worker` looks its own entry up by
 * LOCAL_RANK, binds, then execs the interpreter. */
#ifndef LLMLAUNCH_LAUNCH_H
#define LLMLAUNCH_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "llmlaunch/plan.h"
#include "llmlaunch/torch.h"
#include "llmlaunch/torchrun-options.h"
#include "llmlaunch/util.h"

#define LL_PLACEMENT_ENV "LLMLAUNCH_PLACEMENT"
/* Where each __worker records how its interpreter ended. torchrun reports any worker
 * failure as its own exit status 1; these records let llmlaunch exit with the
 * failing script's status instead. */
#define LL_STATUS_DIR_ENV "LLMLAUNCH_STATUS_DIR"
/* Where the bootstrap writes the script's exit status before the interpreter shuts
 * down (set by the worker for its interpreter alone). */
#define LL_END_FILE_ENV "LLMLAUNCH_END_FILE"
/* "1": each __worker relays its interpreter's stdout too, so the hang watch sees
 * every line a rank prints (stderr is always relayed: the cause of a failure). */
#define LL_WATCH_OUTPUT_ENV "LLMLAUNCH_WATCH_OUTPUT"
/* Where the ranks' Python stacks go when the job hangs (JOBDIR/stacks), and the
 * signal on which the bootstrap's "stacks" feature writes them. */
#define LL_STACKS_DIR_ENV "LLMLAUNCH_STACKS_DIR"
#define LL_STACKS_SIGNAL_ENV "LLMLAUNCH_STACKS_SIGNAL"
/* The supervising llmlaunch's pid, which each rank names its ptracer (PR_SET_PTRACER)
 * so that gdb or py-spy started by it may attach where Yama's ptrace_scope is 1. */
#define LL_STACKS_TRACER_ENV "LLMLAUNCH_STACKS_TRACER"
#define LL_BOOTSTRAP_STACKS "stacks"
/* A real-time signal nothing else in a training job uses (glibc's SIGRTMIN is 34;
 * the first two are the threads library's). Its default action ends a process, so
 * it is sent only to ranks whose stacks file says the handler is in place. */
#define LL_STACKS_SIGNAL (SIGRTMIN + 4)

/* ---- what the launch itself puts in the plan (launch-plan.c) ---------------- */

/* Where NCCL logs for the watcher, inside the job directory. */
#define LL_LAUNCH_NCCL_DIR "nccl"
#define LL_LAUNCH_NCCL_FILE "nccl.%h.%p"

struct ll_launch_job {
	const char *dir;            /* the job directory (ll_jobdir_path(), ll_jobdir_create()) */
	bool records;               /* the workers record how they ended (supervised; not --exec) */
	bool watch;                 /* NCCL logs at INFO into DIR/nccl for the watcher (supervised) */
	char *const *environ;       /* the inherited environment: the user's own NCCL_DEBUG* */
};

/* Write into `plan`, with source LL_SOURCE_LAUNCH, what this launch needs: torchrun's
 * --log_dir (the job directory, unless a profile or the command line chose one),
 * LLMLAUNCH_PLACEMENT (unset: no binding, with --run_path), LLMLAUNCH_STATUS_DIR,
 * and NCCL's debug variables and "nccl_log", the file pattern the watcher reads:
 * the job's own (a profile's NCCL_DEBUG* cannot turn the watcher off), or the
 * user's NCCL_DEBUG_FILE (environment, command line, local profile), or none when
 * the user's NCCL_DEBUG logs to the job's output (the reason says so). */
void ll_launch_plan_job(struct ll_plan *plan, const struct ll_launch_job *job);
/* The bootstrap (python/llmlaunch_boot.py, docs/launch.md "The bootstrap"): the one
 * place where llmlaunch runs code in torchrun's process and each worker before the
 * script. LLMLAUNCH_BOOTSTRAP lists its features, comma-separated; set, torchrun
 * and the workers start as `PYTHON BOOTSTRAP -m torch.distributed.run ...` and
 * `PYTHON -u BOOTSTRAP SCRIPT ...`. */
#define LL_BOOTSTRAP_ENV "LLMLAUNCH_BOOTSTRAP"
#define LL_BOOTSTRAP_FILE "llmlaunch_boot.py"
#define LL_BOOTSTRAP_LIBUV_OFF "libuv-off"

/* Write LLMLAUNCH_BOOTSTRAP into `plan` (source launch, exported) from what the job's
 * torch is: "libuv-off" where torch asks for libuv by default and is built without
 * it. `torch` NULL: torch was not asked, and `not_asked` says why. The user's own
 * value (environment, --set, a profile) is kept. -ENOTSUP with err set (the value
 * and its reason are in the plan either way) where the bootstrap cannot make this
 * torch start: built without libuv and no use_libuv parameter to turn it off. */
int ll_launch_plan_bootstrap(struct ll_plan *plan, const struct ll_torch_facts *torch, const char *not_asked,
			     char *const *environ, struct ll_error *err);

/* Check what the plan hands torchrun against the torch that will run it, as lints:
 * a torchrun option newer than that torch (ll_torchrun_option.since) blocks the
 * launch (torchrun would stop at "unrecognized arguments"); a torch variable under
 * the other release's name (TORCH_NCCL_* since torch 2.2, NCCL_* before) is a
 * warning where this torch does not read it, information where it reads it with a
 * deprecation warning. Nothing when torch's version is unknown. */
void ll_launch_lint_torch(struct ll_plan *plan, const struct ll_torch_facts *torch, char *const *environ);

/* An NCCL_DEBUG_FILE pattern ("DIR/nccl.%h.%p") as the directory to watch and the
 * prefix of its files' names ("nccl."), both malloc'ed; -EINVAL when the directory
 * itself varies by host or process. */
int ll_launch_nccl_log_split(const char *pattern, char **ret_dir, char **ret_prefix);

/* The plan's torchrun options that reach torchrun, in ll_torchrun_options[] order:
 * set (a value; a flag that is on), not --no_python and --run_path (they shape the
 * entry point). Fills at most `max` of `ret`; returns how many there are. */
size_t ll_launch_options(const struct ll_plan *plan, const struct ll_setting **ret, size_t max);

/* ---- building the command ------------------------------------------------- */

struct ll_launch_request {
	const char *self_exe;       /* absolute path of llmlaunch, run by torchrun as the worker entry */
	const char *python;         /* interpreter that runs torchrun and the workers */
	const char *module;         /* -m MODULE; NULL when running a script */
	const char *script;         /* SCRIPT (a path; an executable with --no_python) */
	char *const *script_args;
	size_t n_script_args;
	char *const *environ;       /* inherited environment, NULL-terminated; NULL: empty */
	const char *bootstrap;      /* the bootstrap's path: needed when the plan sets LLMLAUNCH_BOOTSTRAP */
};

struct ll_launch {
	char **argv;                /* NULL-terminated; argv[0] is the interpreter */
	size_t argc;
	/* "NAME=VALUE" that the launch adds to the inherited environment or changes in it,
	 * in plan order. */
	char **env_added;
	size_t n_env_added;
	char **envp;                /* complete environment for execve, NULL-terminated */
	size_t n_envp;
	bool worker;                /* workers start through `llmlaunch __worker` */
	const char *status_dir;     /* the plan's LLMLAUNCH_STATUS_DIR (borrowed), NULL: none */
};

/* Build torchrun's argv and environment from the plan alone: every torchrun option
 * once, from the plan's "torchrun.NAME" settings in table order (ll_launch_options),
 * then the entry point; the inherited environment with the plan's exported values
 * (an exported setting left unset is removed: a launch inside a launch must not bind
 * or report for these workers). Returns 0 or -errno (-EINVAL with a message for
 * contradictions such as -m with --no_python). */
int ll_launch_build(const struct ll_plan *plan, const struct ll_launch_request *req, struct ll_launch **ret,
		    struct ll_error *err);
void ll_launch_free(struct ll_launch *l);
static inline void ll_launch_freep(struct ll_launch **l) { if (*l) { ll_launch_free(*l); *l = NULL; } }

/* ---- placement: plan -> LLMLAUNCH_PLACEMENT -> one worker ------------------- */

/* Encode the plan's ranks; NULL when no rank has a CPU set or memory node. */
char *ll_placement_format(const struct ll_rank_placement *ranks, size_t n_ranks);

struct ll_worker_placement {
	int local_rank;
	char *cpus;                 /* hwloc list string, NULL: leave CPU affinity alone */
	int mem;                    /* NUMA node OS index, -1: leave memory policy alone */
};
void ll_worker_placement_release(struct ll_worker_placement *p);

/* Find local_rank's entry in a LLMLAUNCH_PLACEMENT value. -ENOENT when the rank has
 * none, -EINVAL (with a message) when the value is malformed. */
int ll_placement_find(const char *spec, int local_rank, struct ll_worker_placement *ret,
		      struct ll_error *err);

/* Apply a placement to the calling process; both survive execve. No topology is
 * loaded (hwloc bitmaps only parse the list), which keeps a worker's start cheap.
 * CPUs: sched_setaffinity. Memory: set_mempolicy(MPOL_BIND); -EPERM where a
 * container's seccomp profile refuses it (Docker without CAP_SYS_NICE). Each is a
 * no-op when the placement leaves that part alone. */
int ll_placement_apply_cpus(const struct ll_worker_placement *p, struct ll_error *err);
int ll_placement_apply_mem(const struct ll_worker_placement *p, struct ll_error *err);

/* ---- how the workers ended ------------------------------------------------ */

/* Record one worker's end in `dir`: file "rank-R-attempt-A" holding
 * "exit N TIME_NS" or "signal N TIME_NS". */
int ll_worker_status_write(const char *dir, int local_rank, int attempt, int wstatus, struct ll_error *err);

/* The root cause among the records in `dir`: of the latest attempt, the failure
 * (non-zero exit or a signal) recorded first. Returns 1 with *ret_status (the exit
 * code, 128+N for signal N) and *ret_rank, 0 when no worker failed. Removes the
 * records it read. */
int ll_worker_status_collect(const char *dir, int *ret_status, int *ret_rank);

/* ---- the first failure and the stacks of a hang (failure.c) ------------------- */

/* What a __worker knows when its interpreter ended, beyond its status. */
struct ll_worker_end {
	int local_rank, rank, attempt; /* rank: the global RANK, -1 unknown */
	int wstatus;
	int shutdown_signal;        /* the script ended with wstatus's code, then its interpreter
	                             * died of this signal while shutting down; 0: it did not */
	const char *host;           /* the node's name (Slurm's, else the host's); NULL unknown */
	const char *cause;          /* the exception line or last output line; NULL none */
};
/* The same record as ll_worker_status_write, with the rank, host and cause on lines
 * of their own after the first ("rank 1", "host n2", "cause ValueError: boom"). */
int ll_worker_end_write(const char *dir, const struct ll_worker_end *e, struct ll_error *err);

/* One exit record read back. */
struct ll_worker_exit {
	int local_rank, rank, attempt;
	bool signaled;              /* `code` is a signal number, else an exit code */
	int code;
	long long time_ns;          /* CLOCK_REALTIME when the worker saw its interpreter end */
	int shutdown_signal;        /* as in struct ll_worker_end; 0: none */
	char *host, *cause;         /* NULL: not recorded */
	/* Not a rank's end: the llmlaunch of node `node` (named `host`) left the job
	 * without saying its torchrun ended (the job channel, docs/failures.md): rank and
	 * local_rank are -1, and the record reads as a SIGKILL (status 137). Never a
	 * consequence of another failure. */
	bool node_left;
	int node;
};
/* Every record in `dir`, oldest attempt first, then by time. Leaves them in place.
 * 0 (none: *ret NULL) or -errno. */
int ll_worker_exits_read(const char *dir, struct ll_worker_exit **ret, size_t *ret_n);
void ll_worker_exits_free(struct ll_worker_exit *v, size_t n);
/* qsort order of exit records: oldest attempt first, then by time, then by rank
 * (global, then local): equal times go to the lower rank. */
int ll_worker_exit_cmp(const void *a, const void *b);

/* The job's first failure: of the latest attempt, the earliest failed rank whose
 * failure is not a consequence of another's (ll_worker_cause_is_consequence; a
 * SIGTERM, SIGKILL or SIGINT after an earlier failure is torchrun or llmlaunch
 * stopping it), else the earliest failed rank. A node that left (node_left) is a
 * failure and never a consequence: its ranks went with it unreported. */
struct ll_failure {
	const struct ll_worker_exit *first; /* NULL: no rank failed */
	size_t n_after;             /* the other ranks of that attempt that failed (not nodes) */
	int status;                 /* the first's exit code, 128+N for signal N */
	bool consequence;           /* every failure here looks like a consequence */
};
void ll_failure_find(const struct ll_worker_exit *v, size_t n, struct ll_failure *ret);
/* "rank 1 on n2 failed first (exit 1, 12:34:15): ValueError: boom; 1 other rank
 * stopped after it" (local time); a node that left first: "llmlaunch on p3 (node 2)
 * left the job at 12:34:15 without a word (killed, or its host went down); 2 other
 * ranks stopped after it". With `other_nodes` (the job has ranks elsewhere)
 * and only consequences here, it says so instead: "rank 0 on n1 failed because
 * another rank did (exit 1, ...): ...; the first failure was on another node".
 * Malloc'ed; NULL when nothing failed. */
char *ll_failure_text(const struct ll_failure *f, bool other_nodes);
/* Text that says a rank failed because another did: a peer's connection closed or
 * reset, an aborted communicator, a remote process gone (gloo's tcp/pair.cc, NCCL's
 * ncclRemoteError, ProcessGroupNCCL's abort), torchrun's SignalException. */
bool ll_worker_cause_is_consequence(const char *cause);
/* The cause in what a worker wrote last (its stderr's tail): the exception line of
 * the last Python traceback, else the last line that is not blank. Malloc'ed, at
 * most LL_CAUSE_MAX bytes; NULL when there is nothing. */
#define LL_CAUSE_MAX 300
char *ll_worker_cause_from_output(const char *text, size_t len);
/* The message of torchelastic's error file (TORCHELASTIC_ERROR_FILE, written by a
 * script that uses torch.distributed.elastic's @record): its "message". NULL when
 * the file is missing or says nothing. */
char *ll_worker_cause_from_error_file(const char *path);

/* Where a worker's Python stack is written when the job hangs: JOBDIR/stacks/rank-R.txt. */
#define LL_STACKS_DIR "stacks"
/* Where torch's flight recorder dumps go (TORCH_NCCL_DEBUG_INFO_TEMP_FILE=DIR/flight/rank_). */
#define LL_FLIGHT_DIR "flight"
/* One rank's stack, as faulthandler writes it: the innermost frame of the thread
 * that took the signal ("Current thread", else the first thread listed). */
struct ll_rank_stack {
	int rank;
	char *text;                 /* the whole dump (owned) */
	char *where;                /* "time.sleep in train.py:12" or "train.py:12 (main)"; NULL: none */
	bool collective;            /* it waits inside torch.distributed (also read from `text`) */
};
/* The innermost frame of faulthandler's dump `text`: "FUNC in FILE:LINE" named by the
 * frame below it where the innermost one is in a library. Malloc'ed, NULL: no frame. */
char *ll_stack_where(const char *text);
/* Group the ranks by `where`: the largest group is the majority; *ret_text says
 * which ranks differ and where each waits ("rank 1 waits in time.sleep in
 * train.py:12; ranks 0 wait in all_reduce in train.py:30"). Malloc'ed. Returns the
 * number of ranks outside the majority. */
size_t ll_stacks_group(const struct ll_rank_stack *v, size_t n, char **ret_text);

/* ---- native stacks of a hung job (stacks-native.c) ------------------------- */

/* The first of py-spy and gdb found in $PATH (its path in *ret_path, malloc'ed), or
 * NULL with none. */
const char *ll_native_stack_tool(char **ret_path);
struct ll_native_target {
	int rank;
	pid_t pid;
};
/* Every target's native stack into DIR/rank-R.native.txt, the dumps taken at once and
 * all ended by timeout_s (a dump that outlives it is killed, and every target is
 * sent SIGCONT, so a process a killed debugger left stopped goes on). *ret_tool: the tool used, NULL when none is installed. Returns the number
 * of dumps that ended well. */
size_t ll_native_stacks(const struct ll_native_target *t, size_t n, const char *dir, double timeout_s,
			const char **ret_tool);

/* ---- the job directory (jobdir.c) ------------------------------------------ */

/* The lock file a running launch holds (flock) inside its job directory. */
#define LL_JOBDIR_LOCK ".llmlaunch-lock"

struct ll_jobdir {
	char *path;                 /* $TMPDIR/llmlaunch-PID (or llmlaunch-PID-XXXXXX) */
	int lock_fd;                /* holds the flock() until released or until we die */
};

/* The job directory's name for this process, without creating it (the dry run). `tmp`
 * NULL: $TMPDIR, else /tmp. Malloc'ed. */
char *ll_jobdir_path(const char *tmp);
/* The same for a launch not yet started ("$TMPDIR/llmlaunch-PID", PID literally), for
 * `explain`. Malloc'ed. */
char *ll_jobdir_pattern(const char *tmp);
/* Create it (0700) and take its lock. 0, or -errno with err set. */
int ll_jobdir_create(const char *tmp, struct ll_jobdir *ret, struct ll_error *err);
/* The launch is over: drop the lock file, then remove the directory if torchrun left
 * only empty directories in it (kept logs keep it, no longer locked). */
void ll_jobdir_release(struct ll_jobdir *j);
/* Remove every job directory in `tmp` (NULL: $TMPDIR or /tmp) left by a launcher
 * that died without cleaning up: ours, its PID gone and its lock file not held.
 * Symbolic links are never followed. *ret_removed lists the paths removed
 * (malloc'ed, free with ll_strv_free). 0, or -errno when `tmp` cannot be read. */
int ll_jobdir_clean_stale(const char *tmp, char ***ret_removed, size_t *ret_n);

/* ---- running it ----------------------------------------------------------- */

/* Called by ll_supervise for things a person should know (a forwarded signal, an
 * escalation); the command layer prints them. */
typedef void (*ll_supervise_notify_fn)(void *data, const char *message);

/* A watcher polled while the job runs (the NCCL log watcher, the failure and hang
 * watch): returns 0 to go on, LL_WATCH_STOP to stop the job as a forwarded SIGTERM
 * would (SIGKILL after grace_s), LL_WATCH_STOP_NOW to stop it with SIGKILL after
 * LL_SUPERVISE_STOP_GRACE_S: a job whose rank failed or hangs has nothing to save. */
enum { LL_WATCH_GO_ON = 0, LL_WATCH_STOP = 1, LL_WATCH_STOP_NOW = 2 };
#define LL_SUPERVISE_STOP_GRACE_S 2.0
typedef int (*ll_supervise_watch_fn)(void *data);

struct ll_supervise_options {
	/* After forwarding a terminating signal, SIGKILL the group when it is still
	 * alive this many seconds later. */
	double grace_s;
	ll_supervise_notify_fn notify;
	void *notify_data;
	/* Optional: called when watch_fd (>= 0; -1 for none) becomes readable and at
	 * least every watch_interval_ms. A return of 1 stops the job as a forwarded
	 * SIGTERM would (same grace), and llmlaunch then exits 1. */
	ll_supervise_watch_fn watch;
	void *watch_data;
	int watch_fd;
	int watch_interval_ms;
	/* Optional: set to when (CLOCK_REALTIME, ns) the job was first asked to stop (a
	 * forwarded stop signal, a watcher's stop), left alone when it never was: what
	 * ended after that was stopped. */
	long long *ret_stop_time_ns;
};

/* Run argv[0] (a path, no PATH search) with envp as the leader of a new process
 * group, forward SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2 to the group, and wait.
 * *ret_status is what llmlaunch should exit with: the child's exit code, 128+N when
 * it died of signal N, 128+N when it was asked to stop by a forwarded signal N
 * and then failed, 1 when the watcher stopped it. Orphaned workers left in the
 * group are killed before return. */
int ll_supervise(char *const argv[], char *const envp[], const struct ll_supervise_options *opts,
		 int *ret_status, struct ll_error *err);

#endif
