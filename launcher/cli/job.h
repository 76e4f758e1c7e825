/* One job as `run` and the preflight check start it (docs/launch.md): the job
 * directory, what the launch puts in the plan (ll_launch_plan_job), torchrun's
 * command from the plan, then (not on a dry run) NCCL's log directory, the watcher,
 * supervision, the workers' exit records, and the directory released with NCCL's
 * logs kept when someone will read them. Internal to launcher/cli/. */
#ifndef LLMLAUNCH_CLI_JOB_H
#define LLMLAUNCH_CLI_JOB_H

#include <stdbool.h>
#include "llmlaunch/channel.h"
#include "llmlaunch/launch.h"
#include "llmlaunch/nccl-watch.h"
#include "llmlaunch/plan.h"

struct run_job_options {
	bool dry_run;               /* name the directory and build the command; create nothing */
	bool exec;                  /* the launch replaces llmlaunch: no exit records, no watcher */
	enum ll_fallback_policy on_fallback;
	double grace_s;             /* SIGKILL this long after a forwarded stop signal */
	/* Polled with the NCCL watcher while the job runs (the check's progress and its
	 * deadline): returns 1 to stop the job. `nccl` is the watcher, NULL when none. */
	int (*watch)(void *data, struct ll_ncclwatch *nccl);
	void *watch_data;
};

struct run_job {
	const struct run_job_options *o;
	struct ll_jobdir dir;       /* lock_fd -1: not created (dry run) */
	char *path;                 /* the job directory */
	struct ll_launch *launch;   /* the caller's, from the plan; freed with the job */
	struct ll_ncclwatch *nccl;  /* NULL: nothing to watch */
	char *nccl_dir, *nccl_prefix; /* the plan's nccl_log, split; NULL: none */
	bool nccl_ours;             /* the job directory's files: removed unless kept */
	bool stopped;               /* the watcher stopped the job (--on-fallback stop) */
	/* The failure watch: a rank's failure that no restart follows ends the job;
	 * torchrun stops the other ranks itself, and llmlaunch stops torchrun when it
	 * has not ended `settle_s` after the failure was seen. */
	int max_restarts;
	double settle_s;
	double failure_seen;        /* ll_now_s() when seen; 0: none yet */
	double next_records;        /* when to read the records again */
	bool failure_stop;          /* llmlaunch stopped torchrun after a failure */
	bool failed;                /* a rank failed: the record stays in the directory */
	/* The hang watch (--hang-timeout): no output from any rank for hang_timeout_s. */
	double hang_timeout_s;      /* 0: no watch */
	bool hang_dump;             /* --on-hang dump: the stacks, and the job goes on */
	char *stacks_dir;
	double started;             /* CLOCK_REALTIME seconds when the job started */
	double next_hang_check;     /* ll_now_s() */
	double hang_dumped;         /* CLOCK_REALTIME of the last dump; 0: none */
	bool hung;                  /* the stacks were taken: they stay with the record */
	bool hang_stop;             /* ... and the job was stopped for it */
	/* The job channel (several nodes, supervised): node 0 decides for every node. */
	struct ll_channel *channel;
	double next_report;         /* when to send this node's new records */
	bool stacks_sent;           /* this node's stacks went to node 0 */
	bool channel_stop;          /* node 0 stopped the job, or the channel was lost */
};

/* Everything up to the command: the directory (created unless dry_run; what killed
 * launchers left behind is removed first, with a warning), the launch's values in
 * `plan` (`environ_`: the inherited environment), the status and NCCL log
 * directories. The caller then builds job->launch from the plan (ll_launch_build),
 * with the job directory's paths in the script's arguments where it needs them.
 * 0 or -errno (err set). */
int run_job_open(struct run_job *job, struct ll_plan *plan, char *const *environ_, const struct run_job_options *o,
		 struct ll_error *err);
/* Start the watcher, supervise torchrun, and collect the workers' records:
 * *ret_status is the job's exit status (the failing script's own, not torchrun's 1).
 * 0 or -errno when the job could not be started. */
int run_job_supervise(struct run_job *job, const struct ll_plan *plan, int *ret_status, struct ll_error *err);
/* The node's name as its users know it: Slurm's for the node (emulated nodes share
 * one host), else the host's. Malloc'ed; NULL unknown. */
char *run_node_name(void);

/* The job is over: keep the job's own NCCL logs (and say where) when `keep`, else
 * remove them; release the directory. Safe on a job never prepared. */
void run_job_release(struct run_job *job, bool keep);

#endif
