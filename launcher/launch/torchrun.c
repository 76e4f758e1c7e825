/* Build torch.distributed.run's command line and environment from a plan, and from
 * nothing else: what explain and the dry run show is what runs.
 *
 * The shape is always `PYTHON -m torch.distributed.run [options] ENTRY ARGS`, with
 * ENTRY `--no_python LLMLAUNCH __worker -- PYTHON -u SCRIPT` (torchrun itself would
 * run `PYTHON -u SCRIPT`, so the worker adds the same -u): the worker binds the rank
 * and records how the script ended, which torchrun does not pass on. Where the plan
 * sets LLMLAUNCH_BOOTSTRAP, PYTHON is followed by the bootstrap's path in both
 * places (`PYTHON BOOT -m torch.distributed.run`, `PYTHON -u BOOT SCRIPT`): it runs
 * its features, then the target as the interpreter would have. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "llmlaunch/launch.h"

char *ll_placement_format(const struct ll_rank_placement *ranks, size_t n_ranks)
{
	struct ll_buf b;
	bool any = false;

	ll_buf_init(&b);
	for (size_t i = 0; i < n_ranks; i++) {
		const struct ll_rank_placement *r = &ranks[i];

		if (!r->cpuset && r->numa_node < 0)
			continue;
		if (b.len)
			ll_buf_addc(&b, ';');
		ll_buf_addf(&b, "%d", r->local_rank);
		if (r->cpuset)
			ll_buf_addf(&b, ":cpus=%s", r->cpuset);
		if (r->numa_node >= 0)
			ll_buf_addf(&b, ":mem=%d", r->numa_node);
		any = true;
	}
	if (!any) {
		ll_buf_release(&b);
		return NULL;
	}
	return ll_buf_detach(&b);
}

/* ---- argv and environment ---- */

struct strv {
	char **v;
	size_t n;
};

static void strv_add(struct strv *s, const char *str)
{
	*(char **)ll_array_push(&s->v, &s->n, sizeof(char *)) = ll_strdup(str);
}

static void strv_addf(struct strv *s, const char *fmt, ...) LL_PRINTF(2, 3);
static void strv_addf(struct strv *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	*(char **)ll_array_push(&s->v, &s->n, sizeof(char *)) = ll_vasprintf(fmt, ap);
	va_end(ap);
}

/* Terminate with NULL without counting it. */
static char **strv_seal(struct strv *s)
{
	ll_array_push(&s->v, &s->n, sizeof(char *));
	s->n--;
	return s->v;
}

static void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static size_t env_name_len(const char *entry)
{
	const char *eq = strchr(entry, '=');
	return eq ? (size_t)(eq - entry) : strlen(entry);
}

/* Index of NAME in an environment vector, or -1. */
static ssize_t env_find(const struct strv *env, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < env->n; i++)
		if (env_name_len(env->v[i]) == n && strncmp(env->v[i], name, n) == 0)
			return (ssize_t)i;
	return -1;
}

static void env_unset(struct strv *env, const char *name)
{
	ssize_t i = env_find(env, name);

	if (i >= 0) {
		free(env->v[i]);
		env->v[i] = env->v[--env->n];
	}
}

/* Set NAME=VALUE in env; record it in added unless the same value was inherited. */
static void env_set(struct strv *env, struct strv *added, const char *name, const char *value)
{
	ssize_t i = env_find(env, name);
	char *entry = ll_asprintf("%s=%s", name, value);

	if (i >= 0) {
		if (strcmp(env->v[i], entry) == 0) {
			free(entry);
			return;
		}
		free(env->v[i]);
		env->v[i] = entry;
	} else {
		*(char **)ll_array_push(&env->v, &env->n, sizeof(char *)) = entry;
	}
	strv_add(added, entry);
}

void ll_launch_free(struct ll_launch *l)
{
	if (!l)
		return;
	strv_free(l->argv);
	strv_free(l->env_added);
	strv_free(l->envp);
	free(l);
}

size_t ll_launch_options(const struct ll_plan *plan, const struct ll_setting **ret, size_t max)
{
	size_t n = 0;

	for (const struct ll_torchrun_option *o = ll_torchrun_options; o->name; o++) {
		_cleanup_free_ char *name = ll_asprintf("torchrun.%s", o->name);
		const struct ll_setting *s = ll_plan_get(plan, name);

		if (!s || !s->value || o->owner == LL_TORCHRUN_COMMAND)
			continue;
		if (o->kind == LL_TORCHRUN_FLAG && !ll_torchrun_flag_on(s->value))
			continue;
		if (n < max)
			ret[n] = s;
		n++;
	}
	return n;
}

int ll_launch_build(const struct ll_plan *plan, const struct ll_launch_request *req, struct ll_launch **ret,
		    struct ll_error *err)
{
	struct strv argv = { 0 }, env = { 0 }, added = { 0 };
	const struct ll_setting *opts[64];
	struct ll_launch *l;
	size_t n_opts;
	bool no_python, run_path;
	const char *features = ll_plan_value(plan, LL_BOOTSTRAP_ENV);
	const char *boot = features && *features ? req->bootstrap : NULL;

	if (!req->python || (!req->script && !req->module))
		return ll_error_set(err, -EINVAL, "cannot build the torchrun command: no interpreter or script");
	no_python = ll_torchrun_flag_on(ll_plan_value(plan, "torchrun.no_python"));
	run_path = ll_torchrun_flag_on(ll_plan_value(plan, "torchrun.run_path"));
	if (no_python && run_path)
		return ll_error_set(err, -EINVAL, "--no_python and --run_path exclude each other");
	if (req->module && (no_python || run_path))
		return ll_error_set(err, -EINVAL, "-m MODULE cannot be combined with --%s",
				    no_python ? "no_python" : "run_path");
	if (features && *features && !req->bootstrap)
		return ll_error_set(err, -ENOENT, "cannot build the torchrun command: %s=%s needs llmlaunch's bootstrap "
					"(%s), which was not found",
				    LL_BOOTSTRAP_ENV, features, LL_BOOTSTRAP_FILE);
	n_opts = ll_launch_options(plan, opts, LL_ARRAY_SIZE(opts));

	strv_add(&argv, req->python);
	if (boot)
		strv_add(&argv, boot);
	strv_add(&argv, "-m");
	strv_add(&argv, "torch.distributed.run");
	for (size_t i = 0; i < n_opts && i < LL_ARRAY_SIZE(opts); i++) {
		const struct ll_torchrun_option *o = ll_torchrun_setting_option(opts[i]->name);

		strv_addf(&argv, "--%s", o->name);
		if (o->kind != LL_TORCHRUN_FLAG)
			strv_add(&argv, opts[i]->value);
	}
	/* The entry point: every worker starts through __worker (binding, exit status)
	 * unless the script runs inside torchrun's own interpreter (--run_path). */
	if (!run_path) {
		strv_add(&argv, "--no_python");
		strv_add(&argv, req->self_exe);
		strv_add(&argv, "__worker");
		strv_add(&argv, "--");
		if (!no_python) {
			strv_add(&argv, req->python);
			strv_add(&argv, "-u");
			/* --no_python runs a program of the user's, which is no Python file. */
			if (boot)
				strv_add(&argv, boot);
		}
	} else {
		strv_add(&argv, "--run_path");
	}
	if (req->module) {
		strv_add(&argv, "-m");
		strv_add(&argv, req->module);
	} else {
		strv_add(&argv, req->script);
	}
	for (size_t i = 0; i < req->n_script_args; i++)
		strv_add(&argv, req->script_args[i]);

	/* Environment: inherited, then the plan's exported values in plan order. */
	for (char *const *e = req->environ; e && *e; e++)
		if (strchr(*e, '='))
			strv_add(&env, *e);
	for (size_t i = 0; i < plan->n_settings; i++) {
		const struct ll_setting *s = &plan->settings[i];

		if (!s->exported)
			continue;
		if (s->value)
			env_set(&env, &added, s->name, s->value);
		else
			env_unset(&env, s->name);
	}

	l = ll_calloc(1, sizeof(*l));
	l->argc = argv.n;
	l->argv = strv_seal(&argv);
	l->envp = strv_seal(&env);
	l->n_envp = env.n;
	l->n_env_added = added.n;
	l->env_added = strv_seal(&added);
	l->worker = !run_path;
	l->status_dir = l->worker ? ll_plan_value(plan, LL_STATUS_DIR_ENV) : NULL;
	*ret = l;
	return 0;
}
