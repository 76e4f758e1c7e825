/* What the launch itself puts in the plan (llmlaunch/launch.h, ll_launch_plan_job):
 * values only a launch knows (its job directory) or needs (the workers' placement and
 * exit records, NCCL's log for the watcher), each with source "launch" and a reason,
 * so that the dry run shows them like every other value. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "llmlaunch/env.h"
#include "llmlaunch/launch.h"

#define TORCH_NCCL_RENAMED 202 /* torch's NCCL_* switches renamed TORCH_NCCL_* */

/* A value the launch needs: over profiles, under the environment and the command line. */
static void put(struct ll_plan *plan, const char *name, const char *value, bool exported, const char *reason)
{
	const struct ll_setting *old = ll_plan_get(plan, name);

	if (old && old->source > LL_SOURCE_LAUNCH)
		return;
	ll_plan_set(plan, name, value, LL_SOURCE_LAUNCH, NULL, reason, exported);
}

/* The user's own value of an NCCL variable: the environment (which the plan holds only
 * for variables it decides), else the plan's from a profile or the command line. */
static const char *users(const struct ll_plan *plan, char *const *env, const char *name, const char **ret_from,
			 bool *ret_profile)
{
	const struct ll_setting *s = ll_plan_get(plan, name);
	const char *e = env ? ll_env_get(env, name) : NULL;

	*ret_profile = false;
	if (s && s->value && s->source >= LL_SOURCE_PROFILE && s->source != LL_SOURCE_LAUNCH) {
		*ret_from = s->origin ? s->origin : ll_source_name(s->source);
		*ret_profile = s->source == LL_SOURCE_PROFILE;
		return s->value;
	}
	if (e) {
		*ret_from = "environment";
		return e;
	}
	return NULL;
}

int ll_launch_nccl_log_split(const char *pattern, char **ret_dir, char **ret_prefix)
{
	const char *slash = pattern ? strrchr(pattern, '/') : NULL;
	const char *base = slash ? slash + 1 : pattern;

	/* A directory that varies by host or process (%h, %p before the last '/') is no
	 * one directory to watch; the file's prefix is what comes before its first '%'. */
	if (!pattern || (slash && memchr(pattern, '%', (size_t)(slash - pattern))))
		return -EINVAL;
	*ret_dir = slash ? (slash == pattern ? ll_strdup("/") : ll_strndup(pattern, (size_t)(slash - pattern)))
			 : ll_strdup(".");
	*ret_prefix = ll_strndup(base, strcspn(base, "%"));
	return 0;
}

/* NCCL_DEBUG at INFO or above (TRACE): the lines that say which transport NCCL uses. */
static bool level_shows_transport(const char *v)
{
	return v && (strcasecmp(v, "INFO") == 0 || strcasecmp(v, "TRACE") == 0);
}

/* NCCL_DEBUG_SUBSYS lets INIT and NET through: a list naming both (or ALL), or an
 * exclusion ("^...") naming neither (NCCL's debug.cc reads it so). */
static bool subsys_shows_transport(const char *v)
{
	bool init = false, net = false, all = false, invert = v[0] == '^';
	const char *p = invert ? v + 1 : v;

	while (*p) {
		size_t n = strcspn(p, ",");

		init |= n == 4 && strncasecmp(p, "INIT", 4) == 0;
		net |= n == 3 && strncasecmp(p, "NET", 3) == 0;
		all |= n == 3 && strncasecmp(p, "ALL", 3) == 0;
		p += n + (p[n] == ',');
	}
	return invert ? !(init || net || all) : all || (init && net);
}

/* NCCL's log for the watcher. The user's own file is read where it is; a profile's
 * NCCL_DEBUG or NCCL_DEBUG_SUBSYS never turns the watcher off (its log goes to the job
 * directory, not to anyone's screen, so INFO costs nothing to see). */
static void plan_nccl_log(struct ll_plan *plan, const struct ll_launch_job *job)
{
	const char *file_from = NULL, *level_from = NULL, *subsys_from = NULL;
	bool file_profile, level_profile, subsys_profile;
	const char *file = users(plan, job->environ, "NCCL_DEBUG_FILE", &file_from, &file_profile);
	const char *level = users(plan, job->environ, "NCCL_DEBUG", &level_from, &level_profile);
	const char *subsys = users(plan, job->environ, "NCCL_DEBUG_SUBSYS", &subsys_from, &subsys_profile);
	_cleanup_free_ char *pattern = NULL, *why = NULL;

	if (!file && level && !level_profile) {
		why = ll_asprintf("NCCL_DEBUG=%s (%s) without NCCL_DEBUG_FILE: NCCL logs to the job's output, which "
				  "llmlaunch does not read; set NCCL_DEBUG_FILE too and it reads that",
				  level, level_from);
		put(plan, "nccl_log", NULL, false, why);
		return;
	}
	if (file) {
		_cleanup_free_ char *dir = NULL, *prefix = NULL;

		if (ll_launch_nccl_log_split(file, &dir, &prefix) < 0) {
			why = ll_asprintf("NCCL_DEBUG_FILE=%s (%s) names a directory per host or process: no one directory "
					  "to watch",
					  file, file_from);
			put(plan, "nccl_log", NULL, false, why);
			return;
		}
		pattern = ll_strdup(file);
		why = ll_asprintf("NCCL_DEBUG_FILE (%s): the watcher reads the files NCCL writes there", file_from);
	} else {
		pattern = ll_asprintf("%s/%s/%s", job->dir, LL_LAUNCH_NCCL_DIR, LL_LAUNCH_NCCL_FILE);
		/* %h and %p are expanded by NCCL: one file per process, as NCCL truncates it. */
		put(plan, "NCCL_DEBUG_FILE", pattern, true,
		    "NCCL's log in the job directory, one file per process (%h host, %p pid), for the watcher");
		why = ll_strdup("the job directory: the watcher reads it, passes NCCL's warnings on and says which "
				"transport each node uses");
	}
	if (!level_shows_transport(level)) {
		if (level && !level_profile) {
			free(why);
			why = ll_asprintf("NCCL_DEBUG_FILE (%s), but NCCL_DEBUG=%s (%s) logs no transport line: the "
					  "watcher sees warnings only",
					  file_from, level, level_from);
		} else {
			_cleanup_free_ char *reason =
				level ? ll_asprintf("INFO says which transport NCCL uses; %s's NCCL_DEBUG=%s would hide it "
						    "(the log goes to a file, not to the job's output)",
						    level_from, level)
				      : ll_strdup("INFO says which transport NCCL uses (the log goes to a file, not to "
						  "the job's output)");
			put(plan, "NCCL_DEBUG", "INFO", true, reason);
		}
	}
	if (subsys && !subsys_shows_transport(subsys)) {
		if (subsys_profile || !file) {
			_cleanup_free_ char *value = subsys[0] == '^' ? NULL : ll_asprintf("INIT,NET,%s", subsys);
			_cleanup_free_ char *reason = ll_asprintf("the watcher needs INIT and NET; %s's '%s' leaves them out",
								  subsys_from, subsys);

			put(plan, "NCCL_DEBUG_SUBSYS", value, true, reason);
		} else {
			free(why);
			why = ll_asprintf("NCCL_DEBUG_FILE (%s), but NCCL_DEBUG_SUBSYS=%s (%s) leaves INIT or NET out: the "
					  "watcher may not see the transport",
					  file_from, subsys, subsys_from);
		}
	}
	put(plan, "nccl_log", pattern, false, why);
}

/* --hang-timeout: the workers relay their stdout (the watch sees every line), and the
 * bootstrap's "stacks" feature lets llmlaunch ask each rank for its stack. */
static void plan_hang_watch(struct ll_plan *plan, const struct ll_launch_job *job, bool supervised)
{
	const char *timeout = ll_plan_value(plan, "hang_timeout");
	const char *boot = ll_plan_value(plan, LL_BOOTSTRAP_ENV);
	_cleanup_free_ char *stacks = NULL, *sig = NULL, *tracer = NULL, *features = NULL, *why = NULL;

	/* --exec, --run_path: nobody is there to watch (docs/failures.md says so). */
	if (!timeout || !supervised)
		return;
	stacks = ll_asprintf("%s/%s", job->dir, LL_STACKS_DIR);
	sig = ll_asprintf("%d", LL_STACKS_SIGNAL);
	put(plan, LL_WATCH_OUTPUT_ENV, "1", true,
	    "each worker relays its rank's stdout too, so the hang watch sees every line the job prints");
	put(plan, LL_STACKS_DIR_ENV, stacks, true, "where each rank's Python stack goes when the job hangs");
	put(plan, LL_STACKS_SIGNAL_ENV, sig, true,
	    "the real-time signal on which the bootstrap's stacks feature dumps every thread's stack (faulthandler)");
	tracer = ll_asprintf("%d", (int)getpid());
	put(plan, LL_STACKS_TRACER_ENV, tracer, true,
	    "this llmlaunch, which supervises the job: each rank lets it and its children (gdb, py-spy, for "
	    "native frames) attach where Yama's ptrace_scope is 1, which allows only a process's ancestors");
	if (boot && *boot) {
		features = ll_asprintf("%s,%s", boot, LL_BOOTSTRAP_STACKS);
		why = ll_asprintf("%s, and stacks for the hang watch (--hang-timeout)", boot);
	} else {
		features = ll_strdup(LL_BOOTSTRAP_STACKS);
		why = ll_strdup("stacks: the hang watch (--hang-timeout) asks each rank for its Python stack");
	}
	/* Over the environment's own value too: its features are kept, stacks added. */
	ll_plan_set(plan, LL_BOOTSTRAP_ENV, features, LL_SOURCE_LAUNCH, NULL, why, true);
}

/* torch's flight recorder (ProcessGroupNCCL): a ring of the last collectives per rank,
 * written to TORCH_NCCL_DEBUG_INFO_TEMP_FILE + rank when the watchdog times out
 * (TORCH_NCCL_DUMP_ON_TIMEOUT). Off by default: TORCH_NCCL_TRACE_BUFFER_SIZE is 0. */
#define TORCH_FLIGHT_RECORDER 203
#define FLIGHT_BUFFER "2000"

static bool plan_uses_gpus(const struct ll_plan *plan)
{
	for (size_t i = 0; i < plan->n_ranks; i++)
		if (plan->ranks[i].gpu >= 0)
			return true;
	return false;
}

/* One flight-recorder variable: the user's own value (environment, command line,
 * profile) wins; otherwise the launch's, or NULL with why not. */
static void flight_put(struct ll_plan *plan, char *const *env, const char *name, const char *value, const char *why)
{
	const char *from;
	bool profile;
	const char *own = users(plan, env, name, &from, &profile);
	_cleanup_free_ char *reason = NULL;

	if (own) {
		reason = ll_asprintf("%s's own value: llmlaunch does not change it", from);
		if (!ll_plan_get(plan, name) || ll_plan_get(plan, name)->source == LL_SOURCE_LAUNCH)
			ll_plan_set(plan, name, own, LL_SOURCE_ENVIRONMENT, NULL, reason, true);
		return;
	}
	ll_plan_set(plan, name, value, LL_SOURCE_LAUNCH, NULL, why, true);
}

static void plan_torch_nccl(struct ll_plan *plan, const struct ll_launch_job *job)
{
	const char *version = ll_plan_value(plan, "torch_version");
	const char *nccl = ll_plan_value(plan, "nccl_version");
	int code = ll_torch_version_code(version);
	int nmaj = -1, nmin = -1;
	_cleanup_free_ char *prefix = NULL, *why = NULL;

	if (!plan_uses_gpus(plan) || code < 0)
		return;
	if (code >= TORCH_FLIGHT_RECORDER && job->dir) {
		prefix = ll_asprintf("%s/" LL_FLIGHT_DIR "/rank_", job->dir);
		/* torchrun's LocalElasticAgent exports TORCH_NCCL_ASYNC_ERROR_HANDLING=1 to
		 * every worker unless set (local_elastic_agent.py). Under 1 the watchdog
		 * aborts the communicator as it starts the dump, and the dump is lost
		 * (pytorch/pytorch#121055, and the test fix of #137375); 3 (SkipCleanUp,
		 * ProcessGroupNCCL's own default since 2.2) still ends the process on a
		 * timeout or an NCCL error, after the dump. */
		flight_put(plan, job->environ, "TORCH_NCCL_ASYNC_ERROR_HANDLING", "3",
			   "3 (SkipCleanUp): a rank whose collective times out or fails still ends, but only after its "
			   "flight recorder is written; torchrun's own 1 aborts NCCL first and loses the dump");
		flight_put(plan, job->environ, "TORCH_NCCL_TRACE_BUFFER_SIZE", FLIGHT_BUFFER,
			   "torch's flight recorder keeps each rank's last 2000 collectives (0, off, by default)");
		flight_put(plan, job->environ, "TORCH_NCCL_DUMP_ON_TIMEOUT", "1",
			   "a rank whose collective times out writes its flight recorder to the job directory");
		flight_put(plan, job->environ, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", prefix,
			   "where the flight recorder's dumps go: one file per rank, named by this prefix and the rank");
	} else {
		why = ll_asprintf("torch %s: the flight recorder's switches (TORCH_NCCL_TRACE_BUFFER_SIZE, "
				  "TORCH_NCCL_DUMP_ON_TIMEOUT) are set from torch 2.3",
				  version);
		put(plan, "torch_flight_recorder", NULL, false, why);
		put(plan, "torch_async_error_handling", NULL, false,
		    code >= TORCH_NCCL_RENAMED
			    ? "not set: torchrun exports TORCH_NCCL_ASYNC_ERROR_HANDLING=1 to its workers unless set "
			      "(torch/distributed/elastic/agent/server/local_elastic_agent.py)"
			    : "not set: torchrun exports NCCL_ASYNC_ERROR_HANDLING=1 to its workers unless set "
			      "(torch/distributed/elastic/agent/server/local_elastic_agent.py)");
	}
	/* NCCL's RAS thread (NCCL_RAS_ENABLE) runs by default from NCCL 2.24 (release
	 * notes 2.24.3): `ncclras` asks it about a hung job. Nothing to set. */
	if (nccl && sscanf(nccl, "%d.%d", &nmaj, &nmin) == 2 && (nmaj > 2 || (nmaj == 2 && nmin >= 24)))
		put(plan, "nccl_ras", "on", false,
		    "NCCL's RAS is on by default since NCCL 2.24 (NCCL_RAS_ENABLE): run 'ncclras' on a node of a hung "
		    "job to see which ranks are missing; llmlaunch sets nothing for it");
}

void ll_launch_plan_job(struct ll_plan *plan, const struct ll_launch_job *job)
{
	const struct ll_setting *log_dir = ll_plan_get(plan, "torchrun.log_dir");
	bool run_path = ll_torchrun_flag_on(ll_plan_value(plan, "torchrun.run_path"));
	_cleanup_free_ char *placement = ll_placement_format(plan->ranks, plan->n_ranks);
	_cleanup_free_ char *status = job->records ? ll_asprintf("%s/status", job->dir) : NULL;

	/* A profile's or the command line's log directory is theirs to choose. */
	if (!log_dir || !log_dir->value)
		put(plan, "torchrun.log_dir", job->dir, false,
		    "the job directory: torchrun's logs stay with the job, and no /tmp/torchelastic_* is left behind");
	if (run_path)
		ll_plan_set(plan, LL_PLACEMENT_ENV, NULL, LL_SOURCE_LAUNCH, NULL,
			    "--run_path runs the script inside torchrun's own interpreter: no binding", true);
	else
		ll_plan_set(plan, LL_PLACEMENT_ENV, placement, LL_SOURCE_LAUNCH, NULL,
			    placement ? "each local rank's CPUs and memory node, which its __worker binds"
				      : "no rank is bound (--bind none, or nothing to bind to)",
			    true);
	ll_plan_set(plan, LL_STATUS_DIR_ENV, run_path ? NULL : status, LL_SOURCE_LAUNCH, NULL,
		    status && !run_path ? "each worker records how its script ended, so llmlaunch exits with the "
					  "failing script's status (torchrun's is 1)"
					: "nobody reads the workers' exit records (--exec, --run_path)",
		    true);
	if (job->watch)
		plan_nccl_log(plan, job);
	else
		put(plan, "nccl_log", NULL, false, "--exec: nobody is left to watch NCCL's log");
	plan_hang_watch(plan, job, status && !run_path);
	plan_torch_nccl(plan, job);
}

int ll_launch_plan_bootstrap(struct ll_plan *plan, const struct ll_torch_facts *torch, const char *not_asked,
			     char *const *environ, struct ll_error *err)
{
	const struct ll_setting *old;
	const char *env = environ ? ll_env_get(environ, LL_BOOTSTRAP_ENV) : NULL;
	const char *version = torch && torch->version ? torch->version : "(unknown version)";
	_cleanup_free_ char *why = NULL;

	if (torch && torch->version)
		put(plan, "torch_version", torch->version, false,
		    "the job's torch: the version rules of the workers' NCCL settings (docs/failures.md)");
	/* Looked up after the put: adding a setting may move the plan's array. */
	old = ll_plan_get(plan, LL_BOOTSTRAP_ENV);
	if (old && old->source > LL_SOURCE_LAUNCH)
		return 0;
	if (env) {
		ll_plan_set(plan, LL_BOOTSTRAP_ENV, env, LL_SOURCE_ENVIRONMENT, NULL,
			    "the environment's: llmlaunch does not choose the bootstrap's features", true);
		return 0;
	}
	if (!torch) {
		why = ll_asprintf("torch was not asked (%s): no bootstrap", not_asked ? not_asked : "no interpreter");
		ll_plan_set(plan, LL_BOOTSTRAP_ENV, NULL, LL_SOURCE_LAUNCH, NULL, why, true);
		return 0;
	}
	switch (torch->libuv) {
	case LL_TORCH_LIBUV_MISSING:
		why = ll_asprintf("torch %s is built without libuv, and TCPStore asks for it by default since torch 2.4: "
				  "torchrun and each worker start through llmlaunch's bootstrap, which makes "
				  "use_libuv=False the default (torch's error otherwise: 'use_libuv was requested but "
				  "PyTorch was build without libuv support')",
				  version);
		ll_plan_set(plan, LL_BOOTSTRAP_ENV, LL_BOOTSTRAP_LIBUV_OFF, LL_SOURCE_LAUNCH, NULL, why, true);
		return 0;
	case LL_TORCH_LIBUV_NO_KNOB:
		why = ll_asprintf("torch %s is built without libuv, asks for it, and its TCPStore takes no use_libuv: "
				  "the bootstrap cannot turn it off",
				  version);
		ll_plan_set(plan, LL_BOOTSTRAP_ENV, NULL, LL_SOURCE_LAUNCH, NULL, why, true);
		ll_error_set(err, -ENOTSUP,
			     "torch %s%s%s cannot start its TCPStore: built without libuv, and no use_libuv parameter to "
			     "turn libuv off",
			     version, torch->dir ? " in " : "", torch->dir ? torch->dir : "");
		return ll_error_hint(err, "install a torch built with libuv (PyTorch's own wheels are), or one whose "
					  "TCPStore takes use_libuv (2.4 and later)"),
		       -ENOTSUP;
	case LL_TORCH_LIBUV_WORKS:
		why = ll_asprintf("torch %s starts its TCPStore as it is: no bootstrap", version);
		break;
	case LL_TORCH_LIBUV_NOT_ASKED:
		why = ll_asprintf("torch %s predates TCPStore's libuv default (2.4): no bootstrap", version);
		break;
	case LL_TORCH_LIBUV_UNKNOWN:
	default:
		why = ll_asprintf("torch's TCPStore was not asked about libuv (%s): no bootstrap",
				  torch->error ? torch->error : "no answer");
		break;
	}
	ll_plan_set(plan, LL_BOOTSTRAP_ENV, NULL, LL_SOURCE_LAUNCH, NULL, why, true);
	return 0;
}

/* torch's NCCL switches renamed in torch 2.2 (pytorch commit 8f8722e3, "NCCL_* env
 * vars -> TORCH_NCCL_*"): 2.2 and later read the new name and still the old one,
 * with a deprecation warning (getCvarString in c10d's Utils.hpp); 1.13 reads the
 * old one only. */
static const struct {
	const char *now, *before;
} torch_renamed[] = {
	{ "TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING" },
	{ "TORCH_NCCL_BLOCKING_WAIT", "NCCL_BLOCKING_WAIT" },
};

/* The value the job gets: the plan's (a profile, --set), else the environment's. */
static const char *job_value(const struct ll_plan *plan, char *const *environ, const char *name)
{
	const struct ll_setting *s = ll_plan_get(plan, name);

	if (s && s->exported)
		return s->value;
	return environ ? ll_env_get(environ, name) : NULL;
}

void ll_launch_lint_torch(struct ll_plan *plan, const struct ll_torch_facts *torch, char *const *environ)
{
	int code = torch ? ll_torch_version_code(torch->version) : -1;
	const struct ll_setting *opts[64];
	size_t n;

	if (code < 0)
		return;
	n = ll_launch_options(plan, opts, LL_ARRAY_SIZE(opts));
	for (size_t i = 0; i < n && i < LL_ARRAY_SIZE(opts); i++) {
		const struct ll_torchrun_option *o = ll_torchrun_setting_option(opts[i]->name);

		if (o && o->since > code)
			ll_plan_lint_add(plan, LL_LINT_ERROR, opts[i]->name, true,
					 "--%s (%s) is a torchrun option since torch %d.%d; torch %s would stop at "
					 "'unrecognized arguments': remove it, or install torch %d.%d or later",
					 o->name, opts[i]->origin ? opts[i]->origin : ll_source_name(opts[i]->source),
					 o->since / 100, o->since % 100, torch->version, o->since / 100, o->since % 100);
	}
	for (size_t i = 0; i < LL_ARRAY_SIZE(torch_renamed); i++) {
		const char *now = job_value(plan, environ, torch_renamed[i].now);
		const char *before = job_value(plan, environ, torch_renamed[i].before);

		if (code < TORCH_NCCL_RENAMED && now && !before)
			ll_plan_lint_add(plan, LL_LINT_WARNING, torch_renamed[i].now, false,
					 "torch %s reads %s, not %s (its name since torch 2.2): this setting does nothing "
					 "here; set %s=%s too",
					 torch->version, torch_renamed[i].before, torch_renamed[i].now,
					 torch_renamed[i].before, now);
		else if (code >= TORCH_NCCL_RENAMED && before && !now)
			ll_plan_lint_add(plan, LL_LINT_INFO, torch_renamed[i].before, false,
					 "torch %s still reads %s but warns that it is deprecated: its name since torch 2.2 "
					 "is %s",
					 torch->version, torch_renamed[i].before, torch_renamed[i].now);
	}
}
