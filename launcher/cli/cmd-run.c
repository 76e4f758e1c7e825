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
#include "job.h"
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

/* The dry run prints a sh script that does what the launch would do, each torchrun
 * option with where it came from (`llmlaunch explain` says why). */
static int print_dry_run(const struct ll_plan *plan, const struct ll_launch *l, bool json)
{
	const struct ll_setting *opts[64];
	size_t n_opts = ll_launch_options(plan, opts, LL_ARRAY_SIZE(opts));
	struct ll_out *out = ll_out_new(stdout, json);

	if (n_opts > LL_ARRAY_SIZE(opts))
		n_opts = LL_ARRAY_SIZE(opts);
	ll_out_open_object(out, NULL);
	ll_out_text(out, "# torchrun's options, each once, and where each came from:\n");
	ll_out_open_array(out, "torchrun");
	for (size_t i = 0; i < n_opts; i++) {
		const struct ll_setting *s = opts[i];
		const struct ll_torchrun_option *o = ll_torchrun_setting_option(s->name);

		ll_out_open_object(out, NULL);
		ll_out_string(out, "option", "#   --%s", o->name);
		ll_out_string(out, "value", o->kind == LL_TORCHRUN_FLAG ? NULL : " %s", s->value);
		ll_out_string(out, "source", "  [%s", ll_source_name(s->source));
		ll_out_string(out, "origin", s->origin ? " %s" : NULL, s->origin);
		ll_out_text(out, "]\n");
		ll_out_close_object(out);
	}
	ll_out_close_array(out);
	ll_out_open_array(out, "argv");
	for (size_t i = 0; i < l->argc; i++)
		ll_out_string(out, NULL, NULL, l->argv[i]);
	ll_out_close_array(out);
	ll_out_open_object(out, "env");
	for (size_t i = 0; i < l->n_env_added; i++) {
		_cleanup_free_ char *name = ll_strndup(l->env_added[i], strcspn(l->env_added[i], "="));

		ll_out_string(out, name, NULL, strchr(l->env_added[i], '=') + 1);
	}
	ll_out_close_object(out);
	ll_out_int(out, "nproc_per_node", NULL, plan->nproc_per_node, plan->nproc_per_node > 0);
	ll_out_string(out, "placement", NULL, ll_plan_value(plan, LL_PLACEMENT_ENV));
	if (!json) {
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
	ll_out_close_object(out);
	return ll_out_finish(out);
}

/* A blocking lint of a real launch is the error run_check_plan() reports instead. */
static void print_warnings(const struct ll_plan *plan, bool dry_run)
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
}

/* The checks a real launch makes once the command is built: the plumbing the workers
 * cannot live without (their inherited limits), torch, and the preflight check when
 * asked for. */
static int run_before_start(struct run_options *o, struct ll_ctx *ctx, struct ll_plan *plan,
			    const struct ll_profile_set *profiles, const char *python, const char *self,
			    pid_t *early_check, const char *early_python, struct ll_error *err)
{
	int r = run_check_plan(plan, err);

	if (r < 0)
		return r;
	if (*early_check > 0 && strcmp(early_python, python) != 0)
		run_torch_check_cancel(early_check);
	r = run_check_torch(python, *early_check, err);
	*early_check = 0; /* reaped */
	if (r < 0 || !o->preflight)
		return r;
	{
		/* Only --preflight pays for this: a plain run starts as before. */
		struct ll_check_request creq = {
			.plan = plan,
			.facts = ctx->facts,
			.expect = profiles ? &profiles->expect : NULL,
			.self_exe = self,
			.python = python,
			/* the job's own port stays the job's: the check's store must be gone
			 * before any node's job connects, and nodes finish the check apart */
			.port_offset = 1,
			.report = stderr,
			.cli = &o->check,
		};

		r = ll_cli_check(&creq, err);
	}
	return r < 0 ? r : 0;
}

int cmd_run(int argc, char **argv, struct ll_ctx *ctx)
{
	struct run_options o = { .grace_s = DEFAULT_GRACE_S };
	_cleanup_(ll_plan_freep) struct ll_plan *plan = NULL;
	_cleanup_(ll_profile_set_freep) struct ll_profile_set *profiles = NULL;
	_cleanup_free_ char *early_python = NULL;
	pid_t early_check = 0;
	_cleanup_free_ char *python = NULL, *self = NULL, *missing = NULL, *boot = NULL;
	struct run_job job = { .dir = { .lock_fd = -1 } };
	struct run_job_options jo;
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
	if (r < 0) {
		status = err.usage ? LL_EXIT_USAGE : LL_EXIT_FAILURE;
		goto fail;
	}
	r = run_find_program(run_choose_python(o.python, plan), &python, &err);
	if (r < 0) {
		ll_error_hint(&err, "choose the interpreter with --python PATH or LLMLAUNCH_PYTHON");
		goto fail;
	}
	/* A launch proves that every node reaches the rendezvous; a dry run does not. */
	o.agree.prove = !o.dry_run;
	if (o.preflight)
		o.agree.missing_out = &missing;
	r = ll_ctx_agree(ctx, plan, &o.agree, environ, &cluster, &err);
	if (r == -ETIMEDOUT && o.preflight)
		ll_cli_check_exclude_missing(&o.check, missing, &err);
	if (r < 0)
		goto fail;

	self = run_self_exe(&err);
	if (!self)
		goto fail;
	/* torch's own start (libuv) is the plan's business too: what reaches torchrun. */
	r = run_plan_bootstrap(plan, python, ctx, !o.dry_run, &err);
	if (r < 0)
		goto fail;
	req = (struct ll_launch_request){
		.self_exe = self,
		.python = python,
		.module = o.module,
		.script = o.script,
		.script_args = o.script_args,
		.n_script_args = o.n_script_args,
		.environ = environ,
	};
	jo = (struct run_job_options){
		.dry_run = o.dry_run,
		.exec = o.exec,
		.on_fallback = o.on_fallback,
		.grace_s = o.grace_s,
	};
	r = run_job_open(&job, plan, environ, &jo, &err);
	/* After the job's values: the hang watch adds the bootstrap's stacks feature. */
	boot = run_bootstrap_file(plan);
	req.bootstrap = boot;
	if (r >= 0)
		r = ll_launch_build(plan, &req, &job.launch, &err);
	if (r < 0)
		goto fail;
	print_warnings(plan, o.dry_run);
	if (o.dry_run) {
		status = print_dry_run(plan, job.launch, o.json) < 0 ? LL_EXIT_FAILURE : LL_EXIT_OK;
		goto out;
	}
	r = run_before_start(&o, ctx, plan, profiles, python, self, &early_check, early_python, &err);
	if (r < 0)
		goto fail;
	fflush(stdout);
	fflush(stderr);
	if (o.exec) {
		execve(job.launch->argv[0], job.launch->argv, job.launch->envp);
		ll_error_set(&err, -errno, "cannot run '%s': %s", job.launch->argv[0], strerror(errno));
		goto fail;
	}
	r = run_job_supervise(&job, plan, &status, &err);
	if (r < 0) {
		status = LL_EXIT_FAILURE;
		goto fail;
	}
	if (job.stopped)
		status = LL_EXIT_FAILURE;
	run_job_release(&job, status != 0);
	goto out;

fail:
	ll_report(&err);
	ll_error_clear(&err);
out:
	run_job_release(&job, false);
	run_torch_check_cancel(&early_check);
	ll_cluster_release(&cluster);
	run_options_release(&o);
	return status;
}
