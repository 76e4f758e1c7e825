/* `llmlaunch [OPTIONS] SCRIPT [ARGS...]` and `llmlaunch run ...`: a drop-in for
 * torchrun. Parse, check what can be checked before anything runs (script,
 * interpreter, torch), plan, agree, build the command, then print it (--dry-run),
 * become it (--exec) or supervise it (default). */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd-run-internal.h"
#include "llmlaunch/cli.h"
#include "llmlaunch/launch.h"
#include "llmlaunch/nccl-watch.h"
#include "llmlaunch/output.h"
#include "llmlaunch/plan.h"
#include "llmlaunch/plan-cmd.h"
#include "llmlaunch/profile.h"
#include "llmlaunch/quote.h"

extern char **environ;

/* ---- output ---- */

/* The dry run prints a sh script that does what the launch would do. */
static int print_dry_run(const struct ll_launch *l, bool json)
{
	struct ll_out *out = ll_out_new(stdout, json);

	if (json) {
		ll_out_open_object(out, NULL);
		ll_out_open_array(out, "argv");
		for (size_t i = 0; i < l->argc; i++)
			ll_out_string(out, NULL, NULL, l->argv[i]);
		ll_out_close_array(out);
		ll_out_open_object(out, "env");
		for (size_t i = 0; i < l->n_env_added; i++) {
			char *name = ll_strndup(l->env_added[i], strcspn(l->env_added[i], "="));
			ll_out_string(out, name, NULL, strchr(l->env_added[i], '=') + 1);
			free(name);
		}
		ll_out_close_object(out);
		ll_out_int(out, "nproc_per_node", NULL, l->nproc_per_node, l->nproc_per_node > 0);
		ll_out_string(out, "placement", NULL, l->placement);
		ll_out_close_object(out);
	} else {
		struct ll_buf b;

		ll_buf_init(&b);
		for (size_t i = 0; i < l->n_env_added; i++) {
			const char *eq = strchr(l->env_added[i], '=');
			ll_buf_addf(&b, "export %.*s=", (int)(eq - l->env_added[i]), l->env_added[i]);
			ll_sh_quote(eq + 1, true, &b);
			ll_buf_addc(&b, '\n');
		}
		for (size_t i = 0; i < l->argc; i++) {
			if (i)
				ll_buf_addc(&b, ' ');
			ll_sh_quote(l->argv[i], true, &b);
		}
		ll_buf_addc(&b, '\n');
		fputs(b.s, stdout);
		ll_buf_release(&b);
	}
	return ll_out_finish(out);
}

/* A blocking lint of a real launch is the error run_check_plan() reports instead. */
static void print_warnings(const struct ll_plan *plan, const struct ll_launch *l, bool dry_run)
{
	for (size_t i = 0; i < plan->n_lints; i++) {
		const struct ll_lint *lt = &plan->lints[i];

		if (lt->level == LL_LINT_INFO || (lt->blocking && !dry_run))
			continue;
		if (lt->variable)
			ll_warnf("%s: %s", lt->variable, lt->message);
		else
			ll_warnf("%s", lt->message);
	}
	for (size_t i = 0; i < l->n_notes; i++)
		ll_warnf("%s", l->notes[i]);
}

static void notify_stderr(void *data, const char *message)
{
	(void)data;
	ll_errorf("%s", message);
}

/* ---- the NCCL log watcher ---- */

static int watch_nccl(void *data)
{
	struct ll_ncclwatch *w = data;

	if (ll_ncclwatch_poll(w, stderr) != 1)
		return 0;
	ll_errorf("%s", ll_ncclwatch_stop_reason(w));
	return 1;
}

int cmd_run(int argc, char **argv, struct ll_ctx *ctx)
{
	struct run_options o = { .grace_s = DEFAULT_GRACE_S };
	_cleanup_(ll_plan_freep) struct ll_plan *plan = NULL;
	_cleanup_(ll_profile_set_freep) struct ll_profile_set *profiles = NULL;
	_cleanup_(ll_launch_freep) struct ll_launch *launch = NULL;
	_cleanup_free_ char *early_python = NULL;
	pid_t early_check = 0;
	_cleanup_free_ char *python = NULL, *self = NULL, *logdir = NULL, *statusdir = NULL, *nccldir = NULL, *missing = NULL;
	struct ll_jobdir jobdir = { .lock_fd = -1 };
	_cleanup_(ll_ncclwatch_freep) struct ll_ncclwatch *watch = NULL;
	struct ll_cluster cluster = { 0 };
	struct ll_error err = { 0 };
	struct ll_launch_request req;
	int r, status = LL_EXIT_FAILURE;

	r = run_parse_argv(argc, argv, ctx, &o);
	if (r <= 0) {
		run_options_release(&o);
		return r == 0 ? LL_EXIT_OK : LL_EXIT_USAGE;
	}

	/* Cheap checks first: a typo should not cost a probe. */
	r = run_check_script(&o, &err);
	if (r < 0) {
		status = LL_EXIT_USAGE;
		goto fail;
	}
	/* Only a real launch pays for starting the interpreter (~20 ms), and it starts
	 * now so that it overlaps the probe; a profile's choice of interpreter (known
	 * after planning) makes it start again. */
	if (!o.dry_run && run_find_program(run_choose_python(o.python, NULL), &early_python, NULL) == 0)
		run_torch_check_start(early_python, &early_check);
	r = ll_ctx_plan(ctx, &o.plan, environ, &plan, o.preflight ? &profiles : NULL, &err);
	if (r < 0)
		goto fail;
	r = run_find_program(run_choose_python(o.python, plan), &python, &err);
	if (r < 0) {
		ll_error_hint(&err, "choose the interpreter with --python PATH or LLMLAUNCH_PYTHON");
		goto fail;
	}
	/* A launch proves that every node reaches the rendezvous; a dry run does not. */
	o.agree.prove = !o.dry_run;
	o.agree.progress = ll_cli_agree_progress;
	if (o.preflight)
		o.agree.missing_out = &missing;
	r = ll_agree(plan, ctx->facts, &o.agree, &cluster, &err);
	if (r == -ETIMEDOUT && o.preflight)
		ll_cli_check_exclude_missing(&o.check, missing, &err);
	if (r >= 0)
		for (size_t i = 0; i < cluster.n_notes; i++)
			ll_warnf("%s", cluster.notes[i]);
	if (r < 0)
		goto fail;

	self = run_self_exe(&err);
	if (!self)
		goto fail;
	/* torchrun writes below --log_dir; a per-job directory keeps two jobs apart and
	 * leaves no /tmp/torchelastic_* behind. The dry run names it without creating it. */
	if (o.dry_run) {
		logdir = ll_jobdir_path(NULL);
	} else {
		char **stale = NULL;
		size_t n_stale = 0;

		/* What a launcher killed with SIGKILL left behind (its job died with it). */
		if (ll_jobdir_clean_stale(NULL, &stale, &n_stale) == 0)
			for (size_t i = 0; i < n_stale; i++)
				ll_warnf("removed '%s', left by a launcher that was killed", stale[i]);
		ll_strv_free(stale, n_stale);
		r = ll_jobdir_create(NULL, &jobdir, &err);
		if (r < 0)
			goto fail;
		logdir = ll_strdup(jobdir.path);
	}
	/* With --exec nobody is left to read the workers' exit records. */
	if (!o.exec) {
		statusdir = ll_asprintf("%s/status", logdir);
		if (!o.dry_run && mkdir(statusdir, 0700) < 0) {
			ll_error_set(&err, -errno, "cannot create '%s': %s", statusdir, strerror(errno));
			goto fail_dir;
		}
	}
	req = (struct ll_launch_request){
		.self_exe = self,
		.python = python,
		.module = o.module,
		.script = o.script,
		.script_args = o.script_args,
		.n_script_args = o.n_script_args,
		.user = o.user,
		.n_user = o.n_user,
		.log_dir = logdir,
		.status_dir = statusdir,
		.environ = environ,
	};
	r = ll_launch_build(plan, &cluster, &req, &launch, &err);
	if (r < 0)
		goto fail_dir;
	if (!o.exec) {
		/* The user's own NCCL_DEBUG/NCCL_DEBUG_FILE (inherited or --set) win;
		 * then there is nothing of ours to watch. */
		nccldir = ll_asprintf("%s/nccl", logdir);
		r = run_nccl_logs_begin(launch, nccldir, o.dry_run, &err);
		if (r < 0)
			goto fail_dir;
		if (r == 0)
			free(LL_TAKE(nccldir));
	}
	print_warnings(plan, launch, o.dry_run);

	if (o.dry_run) {
		status = print_dry_run(launch, o.json) < 0 ? LL_EXIT_FAILURE : LL_EXIT_OK;
		goto out;
	}

	/* The plumbing the workers cannot live without (their inherited limits):
	 * stop here, before a job that can only crash in NCCL's init. */
	r = run_check_plan(plan, &err);
	if (r < 0)
		goto fail_dir;
	if (early_check > 0 && strcmp(early_python, python) != 0)
		run_torch_check_cancel(&early_check);
	r = run_check_torch(python, early_check, &err);
	early_check = 0; /* reaped */
	if (r < 0)
		goto fail_dir;
	if (o.preflight) {
		/* Only --preflight pays for this: a plain run starts as before. */
		struct ll_check_request creq = {
			.plan = plan,
			.cluster = &cluster,
			.facts = ctx->facts,
			.expect = profiles ? &profiles->expect : NULL,
			.self_exe = self,
			.python = python,
			.nproc_per_node = o.plan.nproc_per_node,
			/* the job's own port stays the job's: the check's store must be gone
			 * before any node's job connects, and nodes finish the check apart */
			.port_offset = 1,
			.report = stderr,
			.cli = &o.check,
		};

		r = ll_cli_check(&creq, &err);
		if (r < 0)
			goto fail_dir;
	}

	fflush(stdout);
	fflush(stderr);
	if (o.exec) {
		execve(launch->argv[0], launch->argv, launch->envp);
		ll_error_set(&err, -errno, "cannot run '%s': %s", launch->argv[0], strerror(errno));
		goto fail_dir;
	}
	if (nccldir) {
		enum ll_net_expect expect = ll_ncclwatch_expect_from_plan(ll_plan_value(plan, "LLMLAUNCH_NET"),
									  ll_plan_value(plan, "NCCL_NET"),
									  ll_plan_value(plan, "NCCL_IB_DISABLE"));

		r = ll_ncclwatch_new(nccldir, expect, o.on_fallback, &watch, &err);
		if (r < 0)
			goto fail_dir;
	}
	{
		struct ll_supervise_options so = {
			.grace_s = o.grace_s,
			.notify = notify_stderr,
			.watch = watch ? watch_nccl : NULL,
			.watch_data = watch,
			.watch_fd = watch ? ll_ncclwatch_fd(watch) : -1,
			.watch_interval_ms = LL_NCCLWATCH_INTERVAL_MS,
		};
		int worker_status, rank;

		r = ll_supervise(launch->argv, launch->envp, &so, &status, &err);
		if (r < 0)
			goto fail_dir;
		/* torchrun exits 1 whatever a worker's status was: report the first
		 * failing worker's own. Statuses above 128 are signals and stay. */
		if (ll_worker_status_collect(statusdir, &worker_status, &rank) == 1 && status == 1)
			status = worker_status;
	}
	if (watch) {
		ll_ncclwatch_finish(watch, stderr);
		run_nccl_logs_done(nccldir, status != 0 && ll_ncclwatch_verdict(watch)->files > 0);
	}
	ll_jobdir_release(&jobdir);
	goto out;

fail_dir:
	if (jobdir.path) {
		if (statusdir)
			ll_worker_status_collect(statusdir, &(int){ 0 }, &(int){ 0 });
		ll_jobdir_release(&jobdir);
	}
fail:
	ll_report(&err);
	ll_error_clear(&err);
out:
	run_torch_check_cancel(&early_check);
	ll_cluster_release(&cluster);
	run_options_release(&o);
	return status;
}
