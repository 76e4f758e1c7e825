/* Glue between the command context and the profile layers: the one call that
 * env, explain and run make before planning. */
#include "llmlaunch/cli.h"
#include "llmlaunch/profile.h"

void ll_ctx_profile_opts(const struct ll_ctx *ctx, struct ll_profile_opts *ret)
{
	*ret = (struct ll_profile_opts){
		.load = { .allow_loader_vars = ctx->allow_loader_vars },
		.fetch = { .cacert = ctx->cacert, .allow_http = ctx->allow_http },
		/* A fake /sys tree stands for the whole node, so when_exists looks there too. */
		.root = ctx->probe.fsroot,
	};
}

int ll_ctx_profiles(struct ll_ctx *ctx, struct ll_profile_set **ret, struct ll_error *err)
{
	struct ll_profile_opts opts;
	const struct ll_facts *facts = NULL;
	int r;

	r = ll_ctx_facts(ctx, &facts, err);
	if (r < 0)
		return r;
	ll_ctx_profile_opts(ctx, &opts);
	r = ll_profiles_resolve(facts, ctx->profiles, ctx->n_profiles, &opts, ret, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < (*ret)->n_warnings; i++)
		ll_warnf("%s", (*ret)->warnings[i]);
	return 0;
}
