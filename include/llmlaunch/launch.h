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
#include "llmlaunch/agree.h"
#include "llmlaunch/plan.h"
#include "llmlaunch/torchrun-options.h"
#include "llmlaunch/util.h"

#define LL_PLACEMENT_ENV "LLMLAUNCH_PLACEMENT"
/* Where each __worker records how its interpreter ended. torchrun reports any worker
 * failure as its own exit status 1; these records let llmlaunch exit with the
 * failing script's status instead. */
#define LL_STATUS_DIR_ENV "LLMLAUNCH_STATUS_DIR"

/* A torchrun option the user gave. `name` points into ll_torchrun_options;
 * `value` is borrowed (argv), NULL for flags. */
struct ll_torchrun_arg {
	const char *name;
	const char *value;
};

/* ---- what stage 3 decided: struct ll_cluster (llmlaunch/agree.h) ---------- */

/* ---- building the command ------------------------------------------------- */

struct ll_launch_request {
	const char *self_exe;       /* absolute path of llmlaunch, run by torchrun as the worker entry */
	const char *python;         /* interpreter that runs torchrun and the workers */
	const char *module;         /* -m MODULE; NULL when running a script */
	const char *script;         /* SCRIPT (a path; an executable with --no_python) */
	char *const *script_args;
	size_t n_script_args;
	const struct ll_torchrun_arg *user;  /* torchrun options as given, in order */
	size_t n_user;
	const char *log_dir;        /* --log_dir unless the user gave one; NULL: none */
	const char *status_dir;     /* LLMLAUNCH_STATUS_DIR for the workers; NULL: none (--exec) */
	char *const *environ;       /* inherited environment, NULL-terminated; NULL: empty */
};

struct ll_launch {
	char **argv;                /* NULL-terminated; argv[0] is the interpreter */
	size_t argc;
	/* "NAME=VALUE" that the launch adds to the inherited environment or changes in it:
	 * the plan's in plan order, then LLMLAUNCH_PLACEMENT and LLMLAUNCH_STATUS_DIR, then
	 * those of ll_launch_setenv. */
	char **env_added;
	size_t n_env_added;
	char **envp;                /* complete environment for execve, NULL-terminated */
	size_t n_envp;
	char *placement;            /* LLMLAUNCH_PLACEMENT value; NULL when no rank is bound */
	bool worker;                /* workers start through `llmlaunch __worker` */
	int nproc_per_node;
	/* Things worth a warning at launch (e.g. binding not possible with --run_path). */
	char **notes;
	size_t n_notes;
};

/* Build torchrun's argv and environment. Options the user gave win over the plan
 * and the cluster; the plan's "torchrun.NAME" settings become --NAME VALUE unless the
 * user gave --NAME. Returns 0 or -errno (-EINVAL with a message for contradictions). */
int ll_launch_build(const struct ll_plan *plan, const struct ll_cluster *cluster,
		    const struct ll_launch_request *req, struct ll_launch **ret, struct ll_error *err);
void ll_launch_free(struct ll_launch *l);
/* Add or change one variable of the launch's environment after building (values only
 * known then, such as the NCCL log watcher's); recorded in env_added. */
void ll_launch_setenv(struct ll_launch *l, const char *name, const char *value);
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

/* A watcher polled while the job runs (the NCCL log watcher): returns 1 when the
 * job must be stopped, 0 otherwise. */
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
