/* `llmlaunch check`: the preflight check alone. Plan and agree as `run` does, then
 * launch the measuring script over that world through torchrun, and say which nodes
 * are slow or broken (check-run.c, docs/check.md). */
#include <errno.h>
#include <string.h>

#include "check-cmd.h"
#include "cmd-run-internal.h"
#include "llmlaunch/agree.h"
#include "llmlaunch/cli.h"
#include "llmlaunch/plan-cmd.h"
#include "llmlaunch/profile.h"

extern char **environ;

struct check_options {
	const char *python;
	bool json;
	struct ll_check_cli check;
	struct ll_plan_cmd_options plan;
	struct ll_agree_options agree;
};

static const char usage_text[] =
	"usage: llmlaunch check [--json] [--on-slow warn|stop|exclude] [--exclude-file FILE]\n"
	"                       [--python PATH] [--nproc-per-node N] [OPTIONS]\n"
	"\n"
	"Find the slow or broken node before a job does. Run once per node, as a job would be\n"
	"(srun --ntasks-per-node=1 llmlaunch check): llmlaunch plans and agrees as for 'run',\n"
	"then launches a short collective job through torchrun over the same world,\n"
	"interfaces and NCCL variables (NCCL on GPUs, gloo without). It measures the whole\n"
	"job's all-reduce bus bandwidth and latency at a few sizes, and every node's own\n"
	"figure: nodes pair along a ring in node-rank order, two rounds, so each node is\n"
	"tested with two partners and its figure is its better pair. A node is slow below\n"
	"a profile's 'expect: pair_busbw_gbps' (or above 'pair_latency_us'); without one,\n"
	"below half the job's median (latency: above three times the median and 50 us\n"
	"more).\n"
	"A fallback to sockets where the plan expected InfiniBand or RoCE fails the check\n"
	"whatever the figures. Node 0 prints the report; every node exits 1 when the check\n"
	"named a node or failed, 0 when all is well. A node that never arrives is named by\n"
	"the agreement, as for 'run'.\n"
	"\n"
	"Options:\n"
	"  --json            the report as one JSON object (docs/check.md lists the fields)\n"
	"  --python PATH     interpreter for torchrun and the check (default as for 'run')\n"
	LL_CHECK_HELP
	LL_PLAN_HELP
	LL_COMMON_HELP
	LL_AGREE_HELP
	"  -h, --help        show this help\n"
	"\n"
	"Examples:\n"
	"  srun -N64 --ntasks-per-node=1 --mpi=pmix llmlaunch check\n"
	"  srun -N64 --ntasks-per-node=1 llmlaunch check --on-slow exclude --exclude-file bad.txt\n"
	"  sbatch --exclude=$(cat bad.txt) job.sh\n";

enum { OPT_PYTHON = 1, OPT_JSON };

static int check_option(void *data, int opt, char *arg)
{
	struct check_options *o = data;
	int r;

	switch (opt) {
	case OPT_PYTHON:
		o->python = arg;
		return 0;
	case OPT_JSON:
		o->json = true;
		return 0;
	}
	r = ll_check_cli_option(&o->check, opt, arg);
	return r < 0 ? r : 0;
}

static int parse_argv(int argc, char **argv, struct ll_ctx *ctx, struct check_options *o)
{
	static const struct option own[] = {
		{ "python", required_argument, NULL, OPT_PYTHON },
		{ "json", no_argument, NULL, OPT_JSON },
		LL_CHECK_LONG_OPTIONS,
		{ 0 },
	};
	const struct ll_plan_cmd_parser parser = {
		"check", usage_text, own, check_option, o, &o->plan, &o->agree,
	};
	int r = ll_plan_cmd_parse(argc, argv, ctx, &parser);

	if (r > 0 && o->check.drain && o->check.on_slow != LL_ON_SLOW_EXCLUDE) {
		ll_errorf("--drain goes with --on-slow exclude");
		r = -EINVAL;
	}
	return r;
}

int cmd_check(int argc, char **argv, struct ll_ctx *ctx)
{
	struct check_options o = { 0 };
	_cleanup_(ll_plan_freep) struct ll_plan *plan = NULL;
	_cleanup_(ll_profile_set_freep) struct ll_profile_set *set = NULL;
	_cleanup_free_ char *python = NULL, *self = NULL, *missing = NULL;
	struct ll_cluster cluster = { 0 };
	struct ll_error err = { 0 };
	int r, status = LL_EXIT_FAILURE;

	r = parse_argv(argc, argv, ctx, &o);
	if (r <= 0) {
		ll_plan_cmd_options_release(&o.plan);
		return r < 0 ? LL_EXIT_USAGE : LL_EXIT_OK;
	}
	r = ll_ctx_plan(ctx, &o.plan, environ, &plan, &set, &err);
	if (r < 0 && err.usage)
		status = LL_EXIT_USAGE;
	if (r >= 0) {
		r = run_find_program(run_choose_python(o.python, plan), &python, &err);
		if (r < 0)
			ll_error_hint(&err, "choose the interpreter with --python PATH or LLMLAUNCH_PYTHON");
	}
	if (r >= 0)
		r = run_check_plan(plan, &err);
	if (r >= 0)
		r = run_check_torch(python, 0, &err);
	if (r >= 0)
		r = run_plan_bootstrap(plan, python, ctx, true, &err);
	if (r >= 0) {
		/* As a launch: every node proves it reaches the master before anything starts. */
		o.agree.prove = true;
		o.agree.missing_out = &missing;
		r = ll_ctx_agree(ctx, plan, &o.agree, environ, &cluster, &err);
		if (r == -ETIMEDOUT)
			ll_cli_check_exclude_missing(&o.check, missing, &err);
	}
	if (r >= 0 && !(self = run_self_exe(&err)))
		r = -ENOENT;
	if (r >= 0) {
		struct ll_check_request req = {
			.plan = plan,
			.facts = ctx->facts,
			.expect = set ? &set->expect : NULL,
			.self_exe = self,
			.python = python,
			.json = o.json,
			.report = stdout,
			.cli = &o.check,
		};

		r = ll_cli_check(&req, &err);
		status = r == 0 ? LL_EXIT_OK : LL_EXIT_FAILURE;
	}
	if (r < 0)
		ll_report(&err);
	ll_error_clear(&err);
	ll_cluster_release(&cluster);
	ll_plan_cmd_options_release(&o.plan);
	return status;
}
