/* The planner as commands call it: parsing the shared options and assembling the
 * planner's input from the context (facts, profiles) and the environment. */
#include <errno.h>
#include <string.h>

#include "llmlaunch/agree.h"
#include "llmlaunch/plan-cmd.h"

int ll_plan_cmd_option(struct ll_plan_cmd_options *o, int opt, char *arg, struct ll_error *err)
{
	char *eq;
	long n;

	switch (opt) {
	case LL_OPT_SET:
		eq = strchr(arg, '=');
		if (!eq || eq == arg) {
			ll_error_set(err, -EINVAL, "--set '%s': expected NAME=VALUE", arg);
			ll_error_hint(err, "for example --set NCCL_IB_HCA==mlx5_0:1 or --set bind=core");
			return -EINVAL;
		}
		*eq = '\0';
		*(struct ll_assignment *)ll_array_push(&o->sets, &o->n_sets, sizeof(*o->sets)) =
			(struct ll_assignment){ .name = arg, .value = eq + 1, .origin = "--set" };
		return 1;
	case LL_OPT_BIND:
		if (ll_bind_mode_parse(arg, &o->bind) < 0)
			return ll_error_set(err, -EINVAL, "--bind '%s': expected numa, core or none", arg);
		o->bind_given = true;
		return 1;
	case LL_OPT_NPROC_PER_NODE:
		if (ll_parse_long(arg, 1, 4096, &n) < 0)
			return ll_error_set(err, -EINVAL, "--nproc-per-node '%s': expected a count from 1 to 4096", arg);
		o->nproc_per_node = (int)n;
		return 1;
	default:
		return 0;
	}
}

int ll_plan_cmd_fallback(const char *cmd, int c, char *arg, char **argv, struct ll_ctx *ctx,
			 struct ll_plan_cmd_options *plan, struct ll_agree_options *agree)
{
	struct ll_error err = { 0 };
	int r;

	r = ll_plan_cmd_option(plan, c, arg, &err);
	if (r == 0 && agree)
		r = ll_agree_cmd_option(agree, c, arg, &err);
	if (r < 0) {
		ll_errorf("%s: %s", cmd, err.message);
		if (err.hint)
			fprintf(stderr, "hint: %s\n", err.hint);
		ll_error_clear(&err);
		return r;
	}
	return r > 0 ? 1 : ll_cmd_option_fallback(cmd, c, arg, argv, ctx);
}

void ll_plan_cmd_options_release(struct ll_plan_cmd_options *o)
{
	free(o->sets);
	o->sets = NULL;
	o->n_sets = 0;
}

int ll_ctx_plan(struct ll_ctx *ctx, const struct ll_plan_cmd_options *o, char *const *environ_,
		struct ll_plan **ret, struct ll_profile_set **ret_profiles, struct ll_error *err)
{
	_cleanup_(ll_profile_set_freep) struct ll_profile_set *set = NULL;
	const struct ll_facts *facts;
	struct ll_plan_input in = {
		.environ = environ_,
		.cli = o->sets,
		.n_cli = o->n_sets,
		.bind = o->bind,
		.bind_from_cli = o->bind_given,
		.nproc_per_node = o->nproc_per_node,
		.nnodes = 1,
	};
	int r;

	r = ll_ctx_facts(ctx, &facts, err);
	if (r < 0)
		return r;
	in.facts = facts;
	/* Profile options from ctx (--cacert, --allow-http, --allow-loader-vars, --fsroot),
	 * and the profile warnings (offline cache use) printed once. */
	r = ll_ctx_profiles(ctx, &set, err);
	if (r < 0)
		return r;
	ll_profile_set_assignments(set, &in.profile, &in.n_profile);
	r = ll_plan_build(&in, ret, err);
	if (r < 0)
		return r;
	if (ret_profiles)
		*ret_profiles = LL_TAKE(set);
	return 0;
}

int ll_ctx_plan_agreed(struct ll_ctx *ctx, const struct ll_plan_cmd_options *o, struct ll_agree_options *agree,
		       char *const *environ_, struct ll_plan **ret, struct ll_error *err)
{
	_cleanup_(ll_plan_freep) struct ll_plan *plan = NULL;
	struct ll_cluster cluster = { 0 };
	int r;

	r = ll_ctx_plan(ctx, o, environ_, &plan, NULL, err);
	if (r < 0)
		return r;
	agree->launcher_only = true;
	agree->progress = ll_cli_agree_progress;
	if (!agree->environ)
		agree->environ = environ_;
	r = ll_agree(plan, ctx->facts, agree, &cluster, err);
	if (r >= 0)
		for (size_t i = 0; i < cluster.n_notes; i++)
			ll_warnf("%s", cluster.notes[i]);
	ll_cluster_release(&cluster);
	if (r < 0)
		return r;
	*ret = LL_TAKE(plan);
	return 0;
}

int ll_plan_cmd_parse(int argc, char **argv, struct ll_ctx *ctx, const struct ll_plan_cmd_parser *p)
{
	static const struct option shared[] = {
		{ "help", no_argument, NULL, 'h' },
		LL_PLAN_LONG_OPTIONS,
		LL_COMMON_LONG_OPTIONS,
	};
	static const struct option agree[] = { LL_AGREE_LONG_OPTIONS };
	_cleanup_free_ struct option *longopts = NULL;
	size_t n = 0;
	int c, r;

	for (const struct option *o = p->own; o && o->name; o++)
		*(struct option *)ll_array_push(&longopts, &n, sizeof(*longopts)) = *o;
	for (size_t i = 0; i < LL_ARRAY_SIZE(shared); i++)
		*(struct option *)ll_array_push(&longopts, &n, sizeof(*longopts)) = shared[i];
	for (size_t i = 0; p->agree && i < LL_ARRAY_SIZE(agree); i++)
		*(struct option *)ll_array_push(&longopts, &n, sizeof(*longopts)) = agree[i];
	ll_array_push(&longopts, &n, sizeof(*longopts)); /* the { 0 } end */

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(p->usage, stdout);
			return 0;
		}
		if (p->own_option && c > 0 && c < LL_OPT_TOPOLOGY && c != '?' && c != ':') {
			r = p->own_option(p->data, c, optarg);
			if (r < 0)
				return r;
			continue;
		}
		r = ll_plan_cmd_fallback(p->name, c, optarg, argv, ctx, p->plan, p->agree);
		if (r < 0)
			return r;
	}
	return ll_cmd_options_done(p->name, argc, argv, ctx);
}
