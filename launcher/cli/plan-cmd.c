/* The planner as commands call it: parsing the shared options and assembling the
 * planner's input from the context (facts, profiles) and the environment. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>

#include "llmlaunch/agree.h"
#include "llmlaunch/env.h"
#include "llmlaunch/file.h"
#include "llmlaunch/nccl-conf.h"
#include "llmlaunch/plan-cmd.h"
#include "llmlaunch/torchrun-options.h"

/* The closest of `names` to `word`, when it is near enough to be a misspelling. */
static const char *closest(const char *word, const char *const *names, size_t n)
{
	return ll_did_you_mean(word, names, n, strlen(word) / 4 + 1);
}

/* A name nothing reads would be ignored without a word, a bad value found late or
 * never: both are usage errors, said now. */
static int set_check(const char *name, const char *value, struct ll_error *err)
{
	_cleanup_free_ char *expected = NULL;
	int r = ll_plan_setting_check(name, value, &expected);
	const char *pick;
	size_t n;

	if (r == -EINVAL)
		return ll_error_set(err, -EINVAL, "--set '%s=%s': expected %s", name, value, expected);
	if (r == 0)
		return 0;
	if (ll_startswith(name, "torchrun.")) {
		ll_error_set(err, -EINVAL, "--set '%s=%s': torchrun has no option '--%s'", name, value,
			     name + strlen("torchrun."));
		{
			_cleanup_free_ const char **names = ll_calloc(ll_torchrun_n_options(), sizeof(char *));

			for (n = 0; n < ll_torchrun_n_options(); n++)
				names[n] = ll_torchrun_options[n].name;
			pick = closest(name + strlen("torchrun."), names, n);
		}
		if (pick)
			ll_error_hint(err, "did you mean 'torchrun.%s'?", pick);
		return -EINVAL;
	}
	ll_error_set(err, -EINVAL,
		     "--set '%s=%s': '%s' is neither a variable (a name in capitals) nor a setting (bind, "
		     "cores-per-rank, nproc-per-node, python, torchrun.OPTION)",
		     name, value, name);
	{
		const char *const *names = ll_plan_setting_names(&n);

		pick = closest(name, names, n);
	}
	if (pick)
		ll_error_hint(err, "did you mean '%s'?", pick);
	else
		ll_error_hint(err, "variables for the workers are written in capitals: --set NCCL_DEBUG=INFO");
	return -EINVAL;
}

int ll_plan_cmd_option(struct ll_plan_cmd_options *o, int opt, char *arg, struct ll_error *err)
{
	char *eq;
	long n;
	int r;

	switch (opt) {
	case LL_OPT_SET:
		eq = strchr(arg, '=');
		if (!eq || eq == arg) {
			ll_error_set(err, -EINVAL, "--set '%s': expected NAME=VALUE", arg);
			ll_error_hint(err, "for example --set NCCL_IB_HCA==mlx5_0:1 or --set bind=core");
			return -EINVAL;
		}
		*eq = '\0';
		r = set_check(arg, eq + 1, err);
		if (r < 0) {
			*eq = '=';
			return r;
		}
		*(struct ll_assignment *)ll_array_push(&o->sets, &o->n_sets, sizeof(*o->sets)) = (struct ll_assignment){
			/* the setting's older name: torchrun's option is the one value */
			.name = strcmp(arg, "nproc-per-node") == 0 ? "torchrun.nproc_per_node" : arg,
			.value = eq + 1,
			.origin = "--set",
		};
		return 1;
	case LL_OPT_BIND:
		if (ll_bind_mode_parse(arg, &o->bind) < 0)
			return ll_error_set(err, -EINVAL, "--bind '%s': expected numa, core or none", arg);
		o->bind_given = true;
		return 1;
	case LL_OPT_NPROC_PER_NODE:
		if (ll_parse_long(arg, 1, LL_TORCHRUN_MAX_NPROC, &n) < 0)
			return ll_error_set(err, -EINVAL, "--nproc-per-node '%s': expected a count from 1 to %d", arg,
					    LL_TORCHRUN_MAX_NPROC);
		*(struct ll_assignment *)ll_array_push(&o->sets, &o->n_sets, sizeof(*o->sets)) =
			(struct ll_assignment){ .name = "torchrun.nproc_per_node", .value = arg, .origin = "--nproc-per-node" };
		return 1;
	default:
		return 0;
	}
}

int ll_plan_cmd_fallback(const char *cmd, int c, char *arg, char **argv, struct ll_ctx *ctx,
			 struct ll_plan_cmd_options *plan, struct ll_agree_options *agree, const struct option *longopts)
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
	return r > 0 ? 1 : ll_cmd_option_fallback(cmd, c, arg, argv, ctx, longopts);
}

void ll_plan_cmd_options_release(struct ll_plan_cmd_options *o)
{
	free(o->sets);
	o->sets = NULL;
	o->n_sets = 0;
}

/* The limits the workers inherit from this process: RLIMIT_MEMLOCK, and whether
 * CAP_IPC_LOCK (bit 14 of the effective set) lifts it for RDMA pinning. */
static void process_limits(struct ll_process_limits *ret)
{
	_cleanup_free_ char *status = NULL;
	struct rlimit rl;
	const char *cap;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0)
		return;
	ret->known = true;
	ret->memlock_unlimited = rl.rlim_cur == RLIM_INFINITY;
	ret->memlock_bytes = ret->memlock_unlimited ? 0 : (unsigned long long)rl.rlim_cur;
	ret->ipc_lock = LL_UNKNOWN;
	if (ll_read_file("/proc/self/status", 1 << 16, &status) == 0 && (cap = strstr(status, "\nCapEff:"))) {
		unsigned long long eff = strtoull(cap + 8, NULL, 16);

		ret->ipc_lock = eff & (1ULL << 14) ? LL_YES : LL_NO;
	}
}

/* NCCL_CONF_FILE from the highest layer that sets it. */
static const char *conf_file_value(const struct ll_plan_cmd_options *o, char *const *environ_,
				   const struct ll_assignment *profile, size_t n_profile)
{
	const char *v = NULL;

	for (size_t i = 0; i < n_profile; i++)
		if (strcmp(profile[i].name, "NCCL_CONF_FILE") == 0 && !ll_streq(profile[i].value, "auto"))
			v = profile[i].value;
	if (ll_env_get(ll_env_or_process(environ_), "NCCL_CONF_FILE"))
		v = ll_env_get(ll_env_or_process(environ_), "NCCL_CONF_FILE");
	for (size_t i = 0; i < o->n_sets; i++)
		if (strcmp(o->sets[i].name, "NCCL_CONF_FILE") == 0)
			v = o->sets[i].value;
	return v;
}

/* The interpreter the workers will run, as run_choose_python() picks it: --set
 * python=..., LLMLAUNCH_PYTHON, a profile's python, python3. */
static const char *workers_python(const struct ll_plan_cmd_options *o, char *const *environ_,
				  const struct ll_assignment *profile, size_t n_profile)
{
	const char *v = ll_env_get(ll_env_or_process(environ_), "LLMLAUNCH_PYTHON");

	for (size_t i = 0; i < o->n_sets; i++)
		if (strcmp(o->sets[i].name, "python") == 0)
			return o->sets[i].value;
	if (v && *v)
		return v;
	for (size_t i = n_profile; i-- > 0;)
		if (strcmp(profile[i].name, "python") == 0 && !ll_streq(profile[i].value, "auto"))
			return profile[i].value;
	return "python3";
}

int ll_ctx_plan(struct ll_ctx *ctx, const struct ll_plan_cmd_options *o, char *const *environ_,
		struct ll_plan **ret, struct ll_profile_set **ret_profiles, struct ll_error *err)
{
	struct ll_nccl_lib nccl = { 0 };
	_cleanup_(ll_profile_set_freep) struct ll_profile_set *set = NULL;
	struct ll_nccl_conf conf = { 0 };
	const struct ll_facts *facts;
	struct ll_plan_input in = {
		.environ = environ_,
		.cli = o->sets,
		.n_cli = o->n_sets,
		.bind = o->bind,
		.bind_from_cli = o->bind_given,
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
	/* NCCL's own files, read as NCCL will read them on this node: NCCL_CONF_FILE as
	 * the workers will have it (--set, the environment, a profile), HOME's
	 * .nccl.conf, and /etc/nccl.conf unless the facts are another machine's. */
	{
		const char *conf_file = conf_file_value(o, environ_, in.profile, in.n_profile);

		ll_nccl_conf_load(&conf, conf_file, ll_env_get(ll_env_or_process(environ_), "HOME"),
				  ctx->probe.fsroot, !ctx->probe.topology_file);
		in.nccl_conf = conf.entries;
		in.n_nccl_conf = conf.n_entries;
		in.nccl_conf_unreadable = conf.unreadable;
		in.nccl_conf_unreadable_why = conf.unreadable_why;
		in.nccl_conf_blocks = conf.unreadable_blocks;
	}
	process_limits(&in.limits);
	/* The NCCL the workers load: this node's (or the --fsroot tree's); a snapshot
	 * holds no libraries. */
	if (!ctx->probe.topology_file) {
		char *const *env = ll_env_or_process(environ_);
		struct ll_nccl_search search = {
			.fsroot = ctx->probe.fsroot,
			.python = workers_python(o, environ_, in.profile, in.n_profile),
			.path = ll_env_get(env, "PATH"),
			.ld_library_path = ll_env_get(env, "LD_LIBRARY_PATH"),
			.home = ll_env_get(env, "HOME"),
			.env_plugin = ll_env_get(env, "NCCL_ENV_PLUGIN"),
		};

		ll_nccl_lib_find(&search, &nccl);
		in.nccl = &nccl;
	}
	r = ll_agree_launcher_read(ll_env_or_process(environ_), &in.launcher, &in.launcher_why, err);
	if (r == 0)
		r = ll_plan_build(&in, ret, err);
	ll_nccl_lib_release(&nccl);
	ll_nccl_conf_release(&conf);
	if (r < 0)
		return r;
	if (ret_profiles)
		*ret_profiles = LL_TAKE(set);
	return 0;
}

int ll_ctx_agree(struct ll_ctx *ctx, struct ll_plan *plan, struct ll_agree_options *agree, char *const *environ_,
		 struct ll_cluster *ret, struct ll_error *err)
{
	const struct ll_facts *facts;
	int r;

	r = ll_ctx_facts(ctx, &facts, err);
	if (r < 0)
		return r;
	if (!agree->progress)
		agree->progress = ll_cli_agree_progress;
	if (!agree->environ)
		agree->environ = environ_;
	r = ll_agree(plan, facts, agree, ret, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ret->n_notes; i++)
		ll_warnf("%s", ret->notes[i]);
	return 0;
}

int ll_ctx_plan_agreed(struct ll_ctx *ctx, const struct ll_plan_cmd_options *o, struct ll_agree_options *agree,
		       char *const *environ_, struct ll_plan **ret, struct ll_profile_set **ret_profiles,
		       struct ll_error *err)
{
	_cleanup_(ll_profile_set_freep) struct ll_profile_set *set = NULL;
	_cleanup_(ll_plan_freep) struct ll_plan *plan = NULL;
	struct ll_cluster cluster = { 0 };
	int r;

	r = ll_ctx_plan(ctx, o, environ_, &plan, ret_profiles ? &set : NULL, err);
	if (r < 0)
		return r;
	agree->launcher_only = true;
	r = ll_ctx_agree(ctx, plan, agree, environ_, &cluster, err);
	ll_cluster_release(&cluster);
	if (r < 0)
		return r;
	*ret = LL_TAKE(plan);
	if (ret_profiles)
		*ret_profiles = LL_TAKE(set);
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
		r = ll_plan_cmd_fallback(p->name, c, optarg, argv, ctx, p->plan, p->agree, longopts);
		if (r < 0)
			return r;
	}
	return ll_cmd_options_done(p->name, argc, argv, ctx);
}
