/* llmlaunch env: this node's planned environment, written for a shell, a dotenv
 * file, JSON or Slurm's TaskProlog. */
#include <errno.h>
#include <string.h>

#include "llmlaunch/envfmt.h"
#include "llmlaunch/agree.h"
#include "llmlaunch/plan-cmd.h"

extern char **environ;

struct env_options {
	enum ll_env_format format;
	struct ll_plan_cmd_options plan;
	struct ll_agree_options agree; /* under srun/mpirun: --agree-timeout, --strict */
};

static const char usage_text[] =
	"usage: llmlaunch env [--format sh|fish|dotenv|json|slurm] [--set NAME=VALUE]...\n"
	"                     [--bind MODE] [--nproc-per-node N] [--topology FILE | --fsroot DIR]\n"
	"\n"
	"Print the variables llmlaunch would give this node's workers (NCCL network\n"
	"selection, GPU order, OMP_NUM_THREADS, LLMLAUNCH_* facts), quoted for the\n"
	"consumer, so a hand-written launch can use them. Values already in your\n"
	"environment win over the probe, and --set wins over both; 'llmlaunch explain'\n"
	"shows where each value came from and why.\n"
	"\n"
	"Formats:\n"
	"  sh      export NAME='value'        (bash, zsh, dash; the default)\n"
	"  fish    set -gx NAME 'value'\n"
	"  dotenv  NAME='value'               (python-dotenv, docker compose env_file)\n"
	"  json    one object {\"NAME\": \"value\"}\n"
	"  slurm   export NAME=value          (TaskProlog: literal to end of line)\n"
	"\n"
	"Options:\n"
	"  --format F        output format (above)\n"
	LL_PLAN_HELP
	LL_COMMON_HELP
	LL_AGREE_HELP
	"  -h, --help        show this help\n"
	"\n"
	"Examples:\n"
	"  eval \"$(llmlaunch env)\" && torchrun --nproc_per_node 4 train.py\n"
	"  llmlaunch env --format fish | source\n"
	"  llmlaunch env --format json --topology node.xml\n";

enum { OPT_FORMAT = 1 };

static int env_option(void *data, int opt, char *arg)
{
	struct env_options *o = data;

	if (opt == OPT_FORMAT && ll_env_format_parse(arg, &o->format) < 0) {
		ll_errorf("env: unknown format '%s' (sh, fish, dotenv, json or slurm)", arg);
		return -EINVAL;
	}
	return 0;
}

/* Returns <0 usage error, 0 exit now (help), 1 continue. */
static int parse_argv(int argc, char **argv, struct ll_ctx *ctx, struct env_options *o)
{
	static const struct option own[] = { { "format", required_argument, NULL, OPT_FORMAT }, { 0 } };
	const struct ll_plan_cmd_parser parser = {
		"env", usage_text, own, env_option, o, &o->plan, &o->agree,
	};

	return ll_plan_cmd_parse(argc, argv, ctx, &parser);
}

int cmd_env(int argc, char **argv, struct ll_ctx *ctx)
{
	struct env_options o = { .format = LL_ENV_SH };
	_cleanup_(ll_plan_freep) struct ll_plan *plan = NULL;
	struct ll_error err = { 0 };
	struct ll_buf out;
	int r, status = LL_EXIT_OK;

	r = parse_argv(argc, argv, ctx, &o);
	if (r <= 0) {
		ll_plan_cmd_options_release(&o.plan);
		return r < 0 ? LL_EXIT_USAGE : LL_EXIT_OK;
	}
	ll_buf_init(&out);
	r = ll_ctx_plan_agreed(ctx, &o.plan, &o.agree, environ, &plan, NULL, &err);
	if (r < 0 && err.usage)
		status = LL_EXIT_USAGE;
	if (r >= 0)
		r = ll_env_write_plan(o.format, plan, &out, &err);
	if (r < 0) {
		ll_report(&err);
		if (status == LL_EXIT_OK)
			status = LL_EXIT_FAILURE;
	} else {
		for (size_t i = 0; i < plan->n_lints; i++)
			if (plan->lints[i].level >= LL_LINT_WARNING)
				ll_warnf("%s%s%s", plan->lints[i].variable ? plan->lints[i].variable : "",
					 plan->lints[i].variable ? ": " : "", plan->lints[i].message);
		fputs(out.s, stdout);
	}
	ll_buf_release(&out);
	ll_error_clear(&err);
	ll_plan_cmd_options_release(&o.plan);
	return status;
}
