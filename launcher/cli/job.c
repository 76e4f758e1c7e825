/* One job as `run` and the preflight check start it (job.h). */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job.h"
#include "llmlaunch/cli.h"

int run_job_open(struct run_job *job, struct ll_plan *plan, char *const *environ_, const struct run_job_options *o,
		 struct ll_error *err)
{
	const struct ll_setting *file;
	const char *status, *pattern;
	int r;

	*job = (struct run_job){ .o = o, .dir = { .lock_fd = -1 } };
	if (o->dry_run) {
		job->path = ll_jobdir_path(NULL);
	} else {
		char **stale = NULL;
		size_t n_stale = 0;

		/* What a launcher killed with SIGKILL left behind (its job died with it). */
		if (ll_jobdir_clean_stale(NULL, &stale, &n_stale) == 0)
			for (size_t i = 0; i < n_stale; i++)
				ll_warnf("removed '%s', left by a launcher that was killed", stale[i]);
		ll_strv_free(stale, n_stale);
		r = ll_jobdir_create(NULL, &job->dir, err);
		if (r < 0)
			return r;
		job->path = ll_strdup(job->dir.path);
	}
	ll_launch_plan_job(plan, &(struct ll_launch_job){
					 .dir = job->path,
					 .records = !o->exec,
					 .watch = !o->exec,
					 .environ = environ_,
				 });
	status = ll_plan_value(plan, LL_STATUS_DIR_ENV);
	if (status && !o->dry_run && mkdir(status, 0700) < 0)
		return ll_error_set(err, -errno, "cannot create '%s': %s", status, strerror(errno));
	pattern = ll_plan_value(plan, "nccl_log");
	if (pattern && ll_launch_nccl_log_split(pattern, &job->nccl_dir, &job->nccl_prefix) == 0) {
		file = ll_plan_get(plan, "NCCL_DEBUG_FILE");
		job->nccl_ours = file && file->source == LL_SOURCE_LAUNCH;
		if (job->nccl_ours && !o->dry_run && mkdir(job->nccl_dir, 0755) < 0)
			return ll_error_set(err, -errno, "cannot create NCCL log directory '%s': %s", job->nccl_dir,
					    strerror(errno));
	}
	return 0;
}

static void notify_stderr(void *data, const char *message)
{
	(void)data;
	ll_errorf("%s", message);
}

static int job_watch(void *data)
{
	struct run_job *job = data;

	if (job->nccl && ll_ncclwatch_poll(job->nccl, stderr) == 1) {
		ll_errorf("%s", ll_ncclwatch_stop_reason(job->nccl));
		job->stopped = true;
		return 1;
	}
	return job->o->watch ? job->o->watch(job->o->watch_data, job->nccl) : 0;
}

int run_job_supervise(struct run_job *job, const struct ll_plan *plan, int *ret_status, struct ll_error *err)
{
	struct ll_error werr = { 0 };
	int worker_status, rank, status, r;

	if (job->nccl_dir &&
	    ll_ncclwatch_new(job->nccl_dir, job->nccl_prefix, ll_ncclwatch_expect(ll_plan_value(plan, "LLMLAUNCH_NET")),
			     job->o->on_fallback, &job->nccl, &werr) < 0) {
		/* The user's own directory for NCCL_DEBUG_FILE may not exist: the job runs,
		 * unwatched, and the warning says why. */
		ll_warnf("NCCL's log is not watched: %s", werr.message);
		ll_error_clear(&werr);
	}
	fflush(stdout);
	fflush(stderr);
	{
		struct ll_supervise_options so = {
			.grace_s = job->o->grace_s,
			.notify = notify_stderr,
			.watch = job->nccl || job->o->watch ? job_watch : NULL,
			.watch_data = job,
			.watch_fd = job->nccl ? ll_ncclwatch_fd(job->nccl) : -1,
			.watch_interval_ms = LL_NCCLWATCH_INTERVAL_MS,
		};

		r = ll_supervise(job->launch->argv, job->launch->envp, &so, &status, err);
	}
	if (r < 0)
		return r;
	/* torchrun exits 1 whatever a worker's status was: report the first failing
	 * worker's own. Statuses above 128 are signals and stay. */
	if (job->launch->status_dir && ll_worker_status_collect(job->launch->status_dir, &worker_status, &rank) == 1 &&
	    status == 1)
		status = worker_status;
	if (job->nccl)
		ll_ncclwatch_finish(job->nccl, stderr);
	*ret_status = status;
	return 0;
}

/* Remove the job's own NCCL logs: the files it named, nothing else. */
static void remove_nccl_logs(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (ll_startswith(e->d_name, prefix)) {
			_cleanup_free_ char *p = ll_asprintf("%s/%s", dir, e->d_name);

			unlink(p);
		}
	closedir(d);
}

void run_job_release(struct run_job *job, bool keep)
{
	if (job->nccl_dir && job->nccl_ours && job->dir.path) {
		if (keep && job->nccl && ll_ncclwatch_verdict(job->nccl)->files > 0)
			ll_errorf("NCCL logs kept in '%s' (read them with 'llmlaunch logs %s')", job->nccl_dir,
				  job->nccl_dir);
		else
			remove_nccl_logs(job->nccl_dir, job->nccl_prefix);
	}
	if (job->launch && job->launch->status_dir && job->dir.path)
		ll_worker_status_collect(job->launch->status_dir, &(int){ 0 }, &(int){ 0 });
	ll_ncclwatch_free(job->nccl);
	ll_launch_free(job->launch);
	if (job->dir.path)
		ll_jobdir_release(&job->dir);
	free(job->path);
	free(job->nccl_dir);
	free(job->nccl_prefix);
	*job = (struct run_job){ .dir = { .lock_fd = -1 } };
}
