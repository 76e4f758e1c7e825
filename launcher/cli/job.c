/* One job as `run` and the preflight check start it (job.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "job.h"
#include "llmlaunch/cli.h"
#include "llmlaunch/clock.h"
#include "llmlaunch/file.h"

int run_job_open(struct run_job *job, struct ll_plan *plan, char *const *environ_, const struct run_job_options *o,
		 struct ll_error *err)
{
	const struct ll_setting *file, *flight;
	const char *status, *pattern, *stacks;
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
	stacks = ll_plan_value(plan, LL_STACKS_DIR_ENV);
	if (stacks && !o->dry_run && mkdir(stacks, 0700) < 0)
		return ll_error_set(err, -errno, "cannot create '%s': %s", stacks, strerror(errno));
	flight = ll_plan_get(plan, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE");
	if (flight && flight->source == LL_SOURCE_LAUNCH && flight->value && !o->dry_run) {
		_cleanup_free_ char *fdir = ll_asprintf("%s/" LL_FLIGHT_DIR, job->path);

		if (mkdir(fdir, 0700) < 0)
			return ll_error_set(err, -errno, "cannot create '%s': %s", fdir, strerror(errno));
	}
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

/* How often the workers' records are read while the job runs. */
#define RECORDS_INTERVAL_S 0.25
/* torchrun looks at its workers every --monitor-interval seconds (5 by default,
 * torch.distributed.run), then stops the rest: wait that long and a second more,
 * at most MAX_SETTLE_S (stopped within 10 s however torchrun is set), before
 * llmlaunch stops torchrun itself. */
#define DEFAULT_MONITOR_INTERVAL_S 5.0
#define MAX_SETTLE_S 4.0

/* Has a rank failed in an attempt that no restart will follow? */
static bool final_failure_seen(struct run_job *job)
{
	struct ll_worker_exit *v;
	size_t n;
	bool found = false;

	if (ll_worker_exits_read(job->launch->status_dir, &v, &n) < 0)
		return false;
	for (size_t i = 0; i < n && !found; i++)
		found = (v[i].signaled || v[i].code != 0) && v[i].attempt >= job->max_restarts;
	ll_worker_exits_free(v, n);
	return found;
}

static int failure_watch(struct run_job *job)
{
	double now = ll_now_s();

	if (!job->launch->status_dir || job->failure_stop)
		return LL_WATCH_GO_ON;
	if (!job->failure_seen && now >= job->next_records) {
		job->next_records = now + RECORDS_INTERVAL_S;
		if (final_failure_seen(job))
			job->failure_seen = now;
	}
	if (job->failure_seen && now >= job->failure_seen + job->settle_s) {
		ll_errorf("a rank failed %.0f s ago and torchrun has not ended: stopping the job", now - job->failure_seen);
		job->failure_stop = true;
		return LL_WATCH_STOP_NOW;
	}
	return LL_WATCH_GO_ON;
}

/* ---- the hang watch ---- */

/* How often the workers' activity files are looked at, and how long the ranks get to
 * write their stacks once asked. */
#define HANG_CHECK_INTERVAL_S 0.5
#define STACKS_WAIT_S 3.0
/* gdb takes about 4 s on a rank with torch loaded (2 cores); all ranks at once. */
#define NATIVE_STACKS_WAIT_S 10.0

static double real_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct rank_worker {
	int rank;
	pid_t pid;                  /* the rank's interpreter */
};

/* The last time any rank printed (each __worker sets its activity file's time when its
 * rank writes), and the ranks' interpreters. */
static double last_activity(const struct run_job *job, struct rank_worker **ret, size_t *ret_n, bool *ret_printed)
{
	double last = job->started;
	DIR *d = opendir(job->launch->status_dir);
	struct dirent *e;

	*ret = NULL;
	*ret_n = 0;
	*ret_printed = false;
	if (!d)
		return last;
	while ((e = readdir(d))) {
		_cleanup_free_ char *path = NULL, *text = NULL;
		struct rank_worker w = { .rank = -1 };
		struct stat st;
		int pid = 0;

		if (!ll_startswith(e->d_name, "worker-") || strchr(e->d_name, '.'))
			continue;
		path = ll_asprintf("%s/%s", job->launch->status_dir, e->d_name);
		if (stat(path, &st) < 0)
			continue;
		if (st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9 > last)
			last = st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9;
		if (ll_read_file(path, 256, &text) < 0 || sscanf(text, "pid %d\nworker %*d\nrank %d", &pid, &w.rank) != 2 ||
		    pid <= 0)
			continue;
		w.pid = pid;
		if (strstr(text, "\nprinted\n"))
			*ret_printed = true;
		*(struct rank_worker *)ll_array_push(ret, ret_n, sizeof(w)) = w;
	}
	closedir(d);
	return last;
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

/* Ask every rank whose bootstrap registered the stacks handler for its stack and wait
 * until each has written it: one ll_rank_stack per worker (free_stacks). */
static struct ll_rank_stack *collect_stacks(const struct run_job *job, const struct rank_worker *w, size_t n)
{
	struct ll_rank_stack *v = ll_calloc(n ? n : 1, sizeof(*v));
	char **paths = ll_calloc(n ? n : 1, sizeof(char *));
	off_t *sizes = ll_calloc(n ? n : 1, sizeof(off_t));
	double deadline = ll_now_s() + STACKS_WAIT_S;
	size_t asked = 0;

	for (size_t i = 0; i < n; i++) {
		paths[i] = ll_asprintf("%s/rank-%d.txt", job->stacks_dir, w[i].rank);
		sizes[i] = -1;
		/* The file exists once the handler is registered: only then is the signal,
		 * whose default action ends a process, safe to send. */
		if (w[i].rank >= 0 && truncate(paths[i], 0) == 0 && kill(w[i].pid, LL_STACKS_SIGNAL) == 0) {
			sizes[i] = 0;
			asked++;
		}
	}
	/* Written when each file has grown and then stayed the same for one look. */
	while (asked && ll_now_s() < deadline) {
		bool settled = true;

		usleep(100000);
		for (size_t i = 0; i < n; i++) {
			off_t sz;

			if (sizes[i] < 0)
				continue;
			sz = file_size(paths[i]);
			if (sz <= 0 || sz != sizes[i])
				settled = false;
			sizes[i] = sz;
		}
		if (settled)
			break;
	}
	for (size_t i = 0; i < n; i++) {
		v[i].rank = w[i].rank;
		if (sizes[i] > 0 && ll_read_file(paths[i], 1 << 20, &v[i].text) == 0)
			v[i].where = ll_stack_where(v[i].text);
		free(paths[i]);
	}
	free(paths);
	free(sizes);
	return v;
}

static void free_stacks(struct ll_rank_stack *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].text);
		free(v[i].where);
	}
	free(v);
}

/* The ranks' native frames, where py-spy or gdb is installed: what a rank blocked in
 * C++ (NCCL, the store, CUDA) waits on below its Python frame. Said in the verdict. */
static char *native_stacks(const struct run_job *job, const struct rank_worker *w, size_t n)
{
	struct ll_native_target *t = ll_calloc(n ? n : 1, sizeof(*t));
	const char *tool;
	size_t got, asked = 0;

	for (size_t i = 0; i < n; i++)
		if (w[i].rank >= 0)
			t[asked++] = (struct ll_native_target){ .rank = w[i].rank, .pid = w[i].pid };
	got = ll_native_stacks(t, asked, job->stacks_dir, NATIVE_STACKS_WAIT_S, &tool);
	free(t);
	if (!tool)
		return ll_strdup("no native frames: neither py-spy nor gdb is installed");
	return ll_asprintf("native frames from %s: %zu of %zu ranks in rank-R.native.txt", tool, got, asked);
}

/* Several nodes: this node's ranks' stacks go to node 0, which names the ranks that
 * differ among all of them and stops every node. */
static void send_stacks(struct run_job *job, const struct rank_worker *w, size_t n, double silent)
{
	struct ll_rank_stack *v = collect_stacks(job, w, n);
	_cleanup_free_ char *native = NULL;

	for (size_t i = 0; i < n; i++)
		ll_channel_stack(job->channel, v[i].rank, v[i].text && strstr(v[i].text, "torch/distributed/"),
				 v[i].where);
	ll_channel_hang(job->channel, silent);
	free_stacks(v, n);
	/* After the Python frames are on their way: node 0 waits for those, not these. */
	native = native_stacks(job, w, n);
	ll_errorf("this node's %s, beside the Python stacks in %s", native, job->stacks_dir);
	job->stacks_sent = true;
	job->hung = true;
	job->failed = true;
}

static int rank_cmp(const void *a, const void *b)
{
	return ((const struct rank_worker *)a)->rank - ((const struct rank_worker *)b)->rank;
}

static int hang_watch(struct run_job *job)
{
	struct rank_worker *w;
	size_t n;
	double last, now = ll_now_s(), silent;
	bool printed;
	_cleanup_free_ char *where = NULL, *native = NULL, *verdict = NULL, *path = NULL, *line = NULL;

	if (job->hang_timeout_s <= 0 || job->hang_stop || now < job->next_hang_check)
		return LL_WATCH_GO_ON;
	job->next_hang_check = now + HANG_CHECK_INTERVAL_S;
	last = last_activity(job, &w, &n, &printed);
	silent = real_now() - last;
	/* The watch starts at the job's first line. --on-hang dump: once per silence; a
	 * line printed since starts the watch again. */
	if (!printed || silent < job->hang_timeout_s || (job->hang_dumped && last < job->hang_dumped)) {
		free(w);
		return LL_WATCH_GO_ON;
	}
	qsort(w, n, sizeof(*w), rank_cmp);
	if (job->channel && !job->hang_dump) {
		/* node 0 decides, says and stops (channel_watch) */
		if (!job->stacks_sent)
			send_stacks(job, w, n, silent);
		free(w);
		job->hang_stop = true;
		return LL_WATCH_GO_ON;
	}
	{
		struct ll_rank_stack *v = collect_stacks(job, w, n);

		ll_stacks_group(v, n, &where);
		free_stacks(v, n);
	}
	native = native_stacks(job, w, n);
	free(w);
	verdict = ll_asprintf("the job hangs: no rank has printed anything for %.0f s; %s; every rank's stack is in %s (%s)",
			      silent, where, job->stacks_dir, native);
	ll_errorf("%s", verdict);
	path = ll_asprintf("%s/verdict", job->path);
	line = ll_asprintf("%s\n", verdict);
	ll_file_replace(path, line, strlen(line), 0600);
	job->hung = true;
	job->failed = true; /* the stacks stay, even if the job then ends well */
	job->hang_dumped = real_now();
	if (job->hang_dump)
		return LL_WATCH_GO_ON;
	job->hang_stop = true;
	return LL_WATCH_STOP_NOW;
}

/* ---- the job channel ---- */

/* How long a node tries to reach node 0's channel, and waits for the verdict once its
 * own torchrun has ended (node 0 waits up to 8 s for every node's end after a stop). */
#define CHANNEL_CONNECT_S 60.0
#define CHANNEL_VERDICT_WAIT_S 12.0

static void channel_open(struct run_job *job, const struct ll_plan *plan)
{
	const char *addr = ll_plan_value(plan, "torchrun.master_addr");
	const char *port = ll_plan_value(plan, "torchrun.master_port");
	const char *rank = ll_plan_value(plan, "torchrun.node_rank");
	_cleanup_free_ char *id = NULL, *name = run_node_name();
	struct ll_error err = { 0 };

	if (plan->nnodes < 2 || !job->launch->status_dir || !addr || !port || !rank)
		return;
	id = ll_asprintf("llmlaunch channel %s:%s %d", addr, port, plan->nnodes);
	if (ll_channel_open(&(struct ll_channel_job){ .id = id,
						     .nnodes = (size_t)plan->nnodes,
						     .node_rank = (size_t)atoi(rank),
						     .master_addr = addr,
						     .master_port = atoi(port),
						     .name = name,
						     .max_restarts = job->max_restarts,
						     .connect_s = CHANNEL_CONNECT_S },
			    &job->channel, &err) < 0) {
		ll_warnf("%s: each node stops on its own failures only", err.message);
		ll_error_clear(&err);
	}
}

/* Send node 0 this node's records not yet sent. */
static void channel_report(struct run_job *job)
{
	struct ll_worker_exit *v;
	size_t n;

	if (ll_worker_exits_read(job->launch->status_dir, &v, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		ll_channel_exit(job->channel, &v[i]);
	ll_worker_exits_free(v, n);
}

static int channel_watch(struct run_job *job)
{
	double now = ll_now_s();
	int f;

	if (!job->channel || job->channel_stop)
		return LL_WATCH_GO_ON;
	if (now >= job->next_report) {
		job->next_report = now + RECORDS_INTERVAL_S;
		channel_report(job);
	}
	f = ll_channel_poll(job->channel);
	if ((f & LL_CHANNEL_STACKS) && !job->stacks_sent && !job->stacks_dir) {
		/* no stacks here (no hang watch on this node): say so, node 0 goes on */
		ll_channel_hang(job->channel, 0);
		job->stacks_sent = true;
	}
	if ((f & LL_CHANNEL_STACKS) && !job->stacks_sent && !(f & LL_CHANNEL_STOP)) {
		struct rank_worker *w;
		size_t n;
		bool printed;
		double last = last_activity(job, &w, &n, &printed);

		qsort(w, n, sizeof(*w), rank_cmp);
		send_stacks(job, w, n, real_now() - last);
		free(w);
		f = ll_channel_poll(job->channel);
	}
	if (f & LL_CHANNEL_LOST) {
		ll_errorf("%s: stopping this node's ranks", ll_channel_lost(job->channel));
		job->channel_stop = true;
		return LL_WATCH_STOP_NOW;
	}
	if ((f & LL_CHANNEL_GONE) && ll_channel_lost(job->channel)) {
		ll_warnf("%s", ll_channel_lost(job->channel));
		ll_channel_closep(&job->channel);
		return LL_WATCH_GO_ON;
	}
	if (f & LL_CHANNEL_STOP) {
		job->channel_stop = true;
		return LL_WATCH_STOP_NOW;
	}
	return LL_WATCH_GO_ON;
}

/* This node's job ended: its last records and its end go to node 0, and the verdict
 * comes back. True when the channel gave the verdict (printed, and *status is the
 * job's). */
static bool channel_finish(struct run_job *job, int *status)
{
	const char *verdict;
	int f, vstatus;

	if (!job->channel)
		return false;
	channel_report(job);
	f = ll_channel_done(job->channel, *status, CHANNEL_VERDICT_WAIT_S);
	verdict = ll_channel_verdict(job->channel, &vstatus);
	if (verdict) {
		_cleanup_free_ char *path = ll_asprintf("%s/verdict", job->path);
		_cleanup_free_ char *line = ll_asprintf("%s\n", verdict);
		_cleanup_free_ char *record = ll_channel_record(job->channel);

		ll_errorf("%s", verdict);
		ll_file_replace(path, line, strlen(line), 0600);
		if (record && *record) {
			_cleanup_free_ char *rpath = ll_asprintf("%s/job-record", job->path);

			ll_file_replace(rpath, record, strlen(record), 0600);
		}
		job->failed = true;
		*status = vstatus;
		return true;
	}
	if ((f & LL_CHANNEL_LOST) && !job->channel_stop)
		ll_errorf("%s", ll_channel_lost(job->channel));
	return false;
}

static int job_watch(void *data)
{
	struct run_job *job = data;
	int r = channel_watch(job);

	if (r == LL_WATCH_GO_ON)
		r = failure_watch(job);

	if (r == LL_WATCH_GO_ON)
		r = hang_watch(job);
	if (r != LL_WATCH_GO_ON)
		return r;

	if (job->nccl && ll_ncclwatch_poll(job->nccl, stderr) == 1) {
		ll_errorf("%s", ll_ncclwatch_stop_reason(job->nccl));
		job->stopped = true;
		return 1;
	}
	return job->o->watch ? job->o->watch(job->o->watch_data, job->nccl) : 0;
}

/* torch's flight recorder writes its dumps when its own watchdog times out, after
 * llmlaunch's verdict: name them once the job is over, on the verdict's file too. */
static void note_flight_dumps(const struct run_job *job)
{
	_cleanup_free_ char *dir = ll_asprintf("%s/" LL_FLIGHT_DIR, job->path);
	_cleanup_free_ char *line = NULL, *path = NULL;
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;
	int fd;

	if (!d)
		return;
	while ((e = readdir(d)))
		n += ll_startswith(e->d_name, "rank_");
	closedir(d);
	if (!n)
		return;
	line = ll_asprintf("torch's flight recorder wrote %zu dump%s (each rank's last collectives) in %s", n,
			   n == 1 ? "" : "s", dir);
	ll_errorf("%s", line);
	path = ll_asprintf("%s/verdict", job->path);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0) {
		dprintf(fd, "%s\n", line);
		close(fd);
	}
}

int run_job_supervise(struct run_job *job, const struct ll_plan *plan, int *ret_status, struct ll_error *err)
{
	struct ll_error werr = { 0 };
	long long stop_time = 0;
	int status, r;

	if (job->nccl_dir &&
	    ll_ncclwatch_new(job->nccl_dir, job->nccl_prefix, ll_ncclwatch_expect(ll_plan_value(plan, "LLMLAUNCH_NET")),
			     job->o->on_fallback, &job->nccl, &werr) < 0) {
		/* The user's own directory for NCCL_DEBUG_FILE may not exist: the job runs,
		 * unwatched, and the warning says why. */
		ll_warnf("NCCL's log is not watched: %s", werr.message);
		ll_error_clear(&werr);
	}
	{
		const char *restarts = ll_plan_value(plan, "torchrun.max_restarts");
		const char *interval = ll_plan_value(plan, "torchrun.monitor_interval");
		double mi = interval ? atof(interval) : DEFAULT_MONITOR_INTERVAL_S;

		const char *hang = ll_plan_value(plan, "hang_timeout");
		const char *stacks = ll_plan_value(plan, LL_STACKS_DIR_ENV);

		job->max_restarts = restarts ? atoi(restarts) : 0;
		job->settle_s = mi + 1 < MAX_SETTLE_S ? mi + 1 : MAX_SETTLE_S;
		/* The plan names the stacks directory only where a watch can run (supervised,
		 * each worker through __worker). */
		if (hang && stacks && job->launch->status_dir &&
		    ll_parse_seconds("hang_timeout", hang, 1, LL_HANG_TIMEOUT_MAX_S, &job->hang_timeout_s, NULL) == 0) {
			job->hang_dump = ll_streq(ll_plan_value(plan, "on_hang"), "dump");
			job->stacks_dir = ll_strdup(stacks);
		}
		job->started = real_now();
	}
	channel_open(job, plan);
	fflush(stdout);
	fflush(stderr);
	{
		struct ll_supervise_options so = {
			.grace_s = job->o->grace_s,
			.notify = notify_stderr,
			.watch = job_watch,
			.watch_data = job,
			.watch_fd = job->nccl ? ll_ncclwatch_fd(job->nccl) : -1,
			.watch_interval_ms = LL_NCCLWATCH_INTERVAL_MS,
			.ret_stop_time_ns = &stop_time,
		};

		r = ll_supervise(job->launch->argv, job->launch->envp, &so, &status, err);
	}
	if (r < 0)
		return r;
	/* torchrun exits 1 whatever a worker's status was: report the first failing
	 * rank's own, and name it. Statuses above 128 are signals and stay. Several
	 * nodes: node 0's verdict, the same on each; this node's own when the channel
	 * did not give one. */
	if (!channel_finish(job, &status) && job->launch->status_dir) {
		struct ll_worker_exit *v;
		struct ll_failure f;
		size_t n;

		if (ll_worker_exits_read(job->launch->status_dir, &v, &n) == 0) {
			ll_failure_find(v, n, &f);
			/* Ranks that ended after a forwarded stop signal were asked to. */
			if (job->hang_stop) {
				job->failed = true; /* the stacks and the hang's verdict stay */
			} else if (f.first && !(stop_time && f.first->time_ns >= stop_time)) {
				_cleanup_free_ char *text = ll_failure_text(&f, plan->nnodes > 1);
				_cleanup_free_ char *path = ll_asprintf("%s/verdict", job->path);
				_cleanup_free_ char *line = ll_asprintf("%s\n", text);

				ll_errorf("%s", text);
				ll_file_replace(path, line, strlen(line), 0600);
				job->failed = true;
				if (status == 1 || job->failure_stop)
					status = f.status;
			}
			ll_worker_exits_free(v, n);
		}
	}
	if (job->failed)
		note_flight_dumps(job);
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

/* The workers' records and activity files, the stacks and the verdict: a job that
 * ended well keeps none of them. */
static void remove_records(const char *status_dir, const char *job_dir)
{
	_cleanup_free_ char *stacks = ll_asprintf("%s/" LL_STACKS_DIR, job_dir);
	_cleanup_free_ char *verdict = ll_asprintf("%s/verdict", job_dir);
	const char *dirs[] = { status_dir, stacks };

	for (size_t i = 0; i < LL_ARRAY_SIZE(dirs); i++) {
		DIR *d = opendir(dirs[i]);
		struct dirent *e;

		if (!d)
			continue;
		while ((e = readdir(d)))
			if (ll_startswith(e->d_name, "rank-") || ll_startswith(e->d_name, "worker-")) {
				_cleanup_free_ char *p = ll_asprintf("%s/%s", dirs[i], e->d_name);

				unlink(p);
			}
		closedir(d);
	}
	unlink(verdict);
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
	if (job->launch && job->launch->status_dir && job->dir.path) {
		if ((keep || job->hung) && job->failed)
			ll_errorf("the job's record is kept in '%s' (read it with 'llmlaunch logs %s')", job->path,
				  job->path);
		else
			remove_records(job->launch->status_dir, job->path);
	}
	ll_channel_closep(&job->channel);
	ll_ncclwatch_free(job->nccl);
	ll_launch_free(job->launch);
	if (job->dir.path)
		ll_jobdir_release(&job->dir);
	free(job->path);
	free(job->nccl_dir);
	free(job->nccl_prefix);
	free(job->stacks_dir);
	*job = (struct run_job){ .dir = { .lock_fd = -1 } };
}
