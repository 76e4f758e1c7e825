/* llmlaunch explain: every planned value with its source and reason, the rank
 * placement, the parallelism summary, then the lint of what the user brought.
 * Text and JSON come from the same calls (output.h). */
#include <errno.h>
#include <string.h>

#include "cmd-run-internal.h"
#include "llmlaunch/output.h"
#include "llmlaunch/agree.h"
#include "llmlaunch/launch.h"
#include "llmlaunch/plan-cmd.h"

extern char **environ;

struct explain_options {
	bool json;
	struct ll_plan_cmd_options plan;
	struct ll_agree_options agree; /* under srun/mpirun: --agree-timeout, --strict */
};

static const char usage_text[] =
	"usage: llmlaunch explain [--json] [--set NAME=VALUE]... [--bind MODE] [--nproc-per-node N]\n"
	"                         [--topology FILE | --fsroot DIR] [--profile P]...\n"
	"\n"
	"Show every variable and setting llmlaunch plans for this node: its value, where\n"
	"it came from (default, probe, profile FILE:LINE, environment, cli) and why, the\n"
	"CPUs and memory of each local rank, advice on the parallel layout, and warnings\n"
	"about the environment you brought (NCCL_IB_HCA=mlx5_1 also selecting mlx5_10,\n"
	"NCCL_IB_DISABLE=1 with InfiniBand up, debug switches left on, ...).\n"
	"\n"
	"Options:\n"
	"  --json            one JSON object on stdout instead of text\n"
	LL_PLAN_HELP
	LL_COMMON_HELP
	LL_AGREE_HELP
	"  -h, --help        show this help\n"
	"\n"
	"Examples:\n"
	"  llmlaunch explain\n"
	"  NCCL_IB_HCA=mlx5_1 llmlaunch explain --topology node.xml\n"
	"  llmlaunch explain --json | jq '.settings[] | select(.source == \"probe\")'\n";

enum { OPT_JSON = 1 };

static int explain_option(void *data, int opt, char *arg)
{
	struct explain_options *o = data;

	(void)arg;
	if (opt == OPT_JSON)
		o->json = true;
	return 0;
}

/* Returns <0 usage error, 0 exit now (help), 1 continue. */
static int parse_argv(int argc, char **argv, struct ll_ctx *ctx, struct explain_options *o)
{
	static const struct option own[] = { { "json", no_argument, NULL, OPT_JSON }, { 0 } };
	const struct ll_plan_cmd_parser parser = {
		"explain", usage_text, own, explain_option, o, &o->plan, &o->agree,
	};

	return ll_plan_cmd_parse(argc, argv, ctx, &parser);
}

static void print_setting(struct ll_out *o, const struct ll_setting *s)
{
	ll_out_open_object(o, NULL);
	ll_out_string(o, "name", "  %s", s->name);
	if (s->value)
		ll_out_string(o, "value", s->exported ? "=%s" : " = %s", s->value);
	else {
		ll_out_string(o, "value", NULL, NULL);
		ll_out_text(o, " (unset)");
	}
	ll_out_string(o, "source", "  [%s", ll_source_name(s->source));
	ll_out_string(o, "origin", s->origin ? " %s" : NULL, s->origin);
	ll_out_text(o, "]\n");
	ll_out_string(o, "reason", "      %s\n", s->reason);
	ll_out_bool(o, "exported", NULL, s->exported);
	ll_out_close_object(o);
}

/* Three groups: the workers' variables, torchrun's options in the order torchrun gets
 * them (what the launch passes, each once, and those deliberately left to torchrun),
 * and llmlaunch's own settings. JSON lists every setting in plan order. */
static void print_settings(struct ll_out *o, const struct ll_plan *p)
{
	ll_out_open_array(o, "settings");
	if (ll_out_is_json(o)) {
		for (size_t i = 0; i < p->n_settings; i++)
			print_setting(o, &p->settings[i]);
		ll_out_close_array(o);
		return;
	}
	ll_out_text(o, "Variables for the workers:\n");
	for (size_t i = 0; i < p->n_settings; i++)
		/* What NCCL takes from its own files is shown with the files, below. */
		if (p->settings[i].exported && p->settings[i].source != LL_SOURCE_NCCL_CONF)
			print_setting(o, &p->settings[i]);
	ll_out_text(o, "torchrun's options, in the order torchrun gets them:\n");
	for (const struct ll_torchrun_option *t = ll_torchrun_options; t->name; t++) {
		_cleanup_free_ char *name = ll_asprintf("torchrun.%s", t->name);
		const struct ll_setting *s = ll_plan_get(p, name);

		if (s)
			print_setting(o, s);
	}
	ll_out_text(o, "Settings:\n");
	for (size_t i = 0; i < p->n_settings; i++)
		if (!p->settings[i].exported && !ll_torchrun_setting_option(p->settings[i].name))
			print_setting(o, &p->settings[i]);
	ll_out_close_array(o);
}

/* NCCL's configuration files, line by line, and what NCCL does with each. */
static void print_conf(struct ll_out *o, const struct ll_plan *p)
{
	if (p->n_conf)
		ll_out_text(o, "\nNCCL's configuration files (NCCL reads them itself; the environment wins):\n");
	ll_out_open_array(o, "nccl_conf");
	for (size_t i = 0; i < p->n_conf; i++) {
		const struct ll_conf_line *l = &p->conf[i];

		ll_out_open_object(o, NULL);
		ll_out_string(o, "origin", "  %s", l->origin);
		ll_out_string(o, "name", "  %s", l->name);
		ll_out_string(o, "value", "=%s\n", l->value);
		ll_out_bool(o, "used", NULL, l->used);
		ll_out_string(o, "note", "      %s\n", l->note);
		ll_out_close_object(o);
	}
	ll_out_close_array(o);
}

static void print_ranks(struct ll_out *o, const struct ll_plan *p)
{
	ll_out_string(o, "bind", "\nRank placement (bind %s):\n", ll_bind_mode_name(p->bind));
	ll_out_text(o, "  %-5s %-4s %-13s %-5s %-6s %s\n", "rank", "gpu", "bus id", "numa", "cores", "cpus");
	ll_out_open_array(o, "ranks");
	for (size_t i = 0; i < p->n_ranks; i++) {
		const struct ll_rank_placement *r = &p->ranks[i];

		ll_out_open_object(o, NULL);
		ll_out_int(o, "local_rank", "  %-5s", r->local_rank, true);
		/* Text shows '-' where JSON has null: "unknown" would misread as a fact. */
		ll_out_int(o, "gpu", r->gpu >= 0 ? " %-4s" : NULL, r->gpu, r->gpu >= 0);
		if (r->gpu < 0)
			ll_out_text(o, " %-4s", "-");
		ll_out_string(o, "gpu_busid", " %-13s", r->gpu_busid ? r->gpu_busid : (ll_out_is_json(o) ? NULL : "-"));
		ll_out_int(o, "numa_node", r->numa_node >= 0 ? " %-5s" : NULL, r->numa_node, r->numa_node >= 0);
		if (r->numa_node < 0)
			ll_out_text(o, " %-5s", "-");
		ll_out_int(o, "cores", " %-6s", r->n_cores, r->n_cores > 0);
		ll_out_string(o, "cpuset", " %s\n", r->cpuset ? r->cpuset : (ll_out_is_json(o) ? NULL : "not bound"));
		ll_out_close_object(o);
	}
	ll_out_close_array(o);
}

static void print_lint(struct ll_out *o, const struct ll_plan *p)
{
	ll_out_text(o, "\nLint:\n");
	ll_out_open_array(o, "lint");
	for (size_t i = 0; i < p->n_lints; i++) {
		const struct ll_lint *l = &p->lints[i];

		ll_out_open_object(o, NULL);
		ll_out_string(o, "level", "  %s: ", ll_lint_level_name(l->level));
		ll_out_string(o, "variable", l->variable ? "%s: " : NULL, l->variable);
		ll_out_string(o, "message", "%s\n", l->message);
		ll_out_close_object(o);
	}
	if (p->n_lints == 0)
		ll_out_text(o, "  nothing to report\n");
	ll_out_close_array(o);
}

/* What the profiles set only because --allow-loader-vars was given: loader
 * variables, and everything a profile fetched over the network may not set by
 * itself (docs/security.md), each with the file or URL and line it came from. */
static void print_trusted(struct ll_out *o, const struct ll_profile_set *s)
{
	size_t n = 0;

	ll_out_open_array(o, "trusted");
	for (size_t i = 0; s && i < s->n_applied; i++) {
		const struct ll_profile_applied *a = &s->applied[i];

		if (!a->value->trusted || a->skipped)
			continue;
		if (n++ == 0)
			ll_out_text(o, "\nSet only because of --allow-loader-vars:\n");
		ll_out_open_object(o, NULL);
		ll_out_string(o, "name", "  %s", a->value->name);
		ll_out_string(o, "value", "=%s", a->value->value);
		ll_out_string(o, "origin", "  [profile %s]", a->origin);
		ll_out_bool(o, "remote", a->profile->remote ? "  (fetched over the network)" : "", a->profile->remote);
		ll_out_text(o, "\n");
		ll_out_close_object(o);
	}
	ll_out_close_array(o);
}

int cmd_explain(int argc, char **argv, struct ll_ctx *ctx)
{
	struct explain_options o = { 0 };
	_cleanup_(ll_plan_freep) struct ll_plan *plan = NULL;
	_cleanup_(ll_profile_set_freep) struct ll_profile_set *profiles = NULL;
	struct ll_error err = { 0 };
	struct ll_buf summary;
	struct ll_out *out;
	int r;

	r = parse_argv(argc, argv, ctx, &o);
	if (r <= 0) {
		ll_plan_cmd_options_release(&o.plan);
		return r < 0 ? LL_EXIT_USAGE : LL_EXIT_OK;
	}
	r = ll_ctx_plan_agreed(ctx, &o.plan, &o.agree, environ, &plan, &profiles, &err);
	ll_plan_cmd_options_release(&o.plan);
	if (r < 0) {
		ll_report(&err);
		r = err.usage ? LL_EXIT_USAGE : LL_EXIT_FAILURE;
		ll_error_clear(&err);
		return r;
	}
	{
		/* What a supervised launch adds (its job directory, the placement, NCCL's
		 * log for the watcher), so that explain shows what reaches torchrun. */
		_cleanup_free_ char *dir = ll_jobdir_pattern(NULL);
		_cleanup_free_ char *python = NULL;
		struct ll_error berr = { 0 };

		/* The bootstrap's decision is shown with its reason; one that stops `run`
		 * is shown as such, not as explain's failure. First, as `run` makes it:
		 * the job's values add to it (the hang watch's stacks). */
		if (run_find_program(run_choose_python(NULL, plan), &python, NULL) < 0)
			python = NULL;
		if (run_plan_bootstrap(plan, python, ctx, false, &berr) < 0)
			ll_warnf("%s", berr.message);
		ll_error_clear(&berr);
		ll_launch_plan_job(plan, &(struct ll_launch_job){
						 .dir = dir, .records = true, .watch = true, .environ = environ });
	}

	out = ll_out_new(stdout, o.json);
	ll_out_open_object(out, NULL);
	ll_out_string(out, "facts", "Facts: %s\n\n", ctx->facts && ctx->facts->source ? ctx->facts->source : NULL);
	print_settings(out, plan);
	print_conf(out, plan);
	print_ranks(out, plan);
	ll_buf_init(&summary);
	ll_plan_summary(plan, &summary);
	ll_out_string(out, "summary", "\nParallelism:\n  %s\n", summary.s);
	ll_buf_release(&summary);
	print_lint(out, plan);
	print_trusted(out, profiles);
	ll_out_close_object(out);
	/* A failed write is reported once, by main(). */
	return ll_out_finish(out) < 0 ? LL_EXIT_FAILURE : LL_EXIT_OK;
}
