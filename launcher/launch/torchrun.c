/* Build torch.distributed.run's command line and environment from a plan.
 *
 * The shape is always `PYTHON -m torch.distributed.run [options] ENTRY ARGS`, with
 * ENTRY `--no_python LLMLAUNCH __worker -- PYTHON -u SCRIPT` (torchrun itself would
 * run `PYTHON -u SCRIPT`, so the worker adds the same -u): the worker binds the rank
 * and records how the script ended, which torchrun does not pass on. */
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

static const struct ll_torchrun_arg *user_arg(const struct ll_launch_request *req, const char *name)
{
	const struct ll_torchrun_arg *found = NULL;

	/* argparse keeps the last occurrence; so do we. */
	for (size_t i = 0; i < req->n_user; i++)
		if (strcmp(req->user[i].name, name) == 0)
			found = &req->user[i];
	return found;
}

static bool truthy(const char *v)
{
	return v && (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0 ||
		     strcasecmp(v, "on") == 0);
}

static void launch_free_parts(struct ll_launch *l)
{
	strv_free(l->argv);
	strv_free(l->env_added);
	strv_free(l->envp);
	strv_free(l->notes);
	free(l->placement);
}

void ll_launch_free(struct ll_launch *l)
{
	if (!l)
		return;
	launch_free_parts(l);
	free(l);
}

void ll_launch_setenv(struct ll_launch *l, const char *name, const char *value)
{
	struct strv env = { l->envp, l->n_envp }, added = { l->env_added, l->n_env_added };

	env_set(&env, &added, name, value);
	l->envp = strv_seal(&env);
	l->n_envp = env.n;
	l->env_added = strv_seal(&added);
	l->n_env_added = added.n;
}

int ll_launch_build(const struct ll_plan *plan, const struct ll_cluster *cluster,
		    const struct ll_launch_request *req, struct ll_launch **ret, struct ll_error *err)
{
	struct strv argv = { 0 }, env = { 0 }, added = { 0 }, notes = { 0 };
	struct ll_launch *l = NULL;
	const struct ll_torchrun_arg *a;
	char *placement = NULL;
	bool no_python, run_path, worker;
	int nproc, r;

	if (!req->python || (!req->script && !req->module))
		return ll_error_set(err, -EINVAL, "cannot build the torchrun command: no interpreter or script");
	no_python = user_arg(req, "no_python") != NULL;
	run_path = user_arg(req, "run_path") != NULL;
	if (req->module && (no_python || run_path))
		return ll_error_set(err, -EINVAL, "-m MODULE cannot be combined with --%s",
				    no_python ? "no_python" : "run_path");

	nproc = plan->nproc_per_node;
	a = user_arg(req, "nproc_per_node");
	if (a) {
		char *end;
		long v = strtol(a->value, &end, 10);
		/* "auto", "gpu", "cpu": torchrun decides, the plan's placement may not fit */
		nproc = (*end == 0 && v > 0 && v <= 65536) ? (int)v : 0;
	}

	placement = ll_placement_format(plan->ranks, plan->n_ranks);
	if (placement && run_path) {
		strv_add(&notes, "--run_path runs the script inside torchrun's own interpreter: "
				 "CPU and memory binding is not applied");
		free(LL_TAKE(placement));
	}
	if (placement && a && nproc == 0)
		strv_addf(&notes, "--nproc_per_node %s is decided by torchrun: ranks beyond the plan's %zu run unbound",
			  a->value, plan->n_ranks);

	/* Every worker starts through __worker (binding, exit status) unless the script
	 * runs inside torchrun's own interpreter. */
	worker = !run_path;

	/* Interpreter and torchrun. */
	strv_add(&argv, req->python);
	strv_add(&argv, "-m");
	strv_add(&argv, "torch.distributed.run");

	/* Rendezvous and sizes: the user's value wins, else the cluster's. */
	if (!user_arg(req, "nnodes"))
		strv_add(&argv, "--nnodes"), strv_addf(&argv, "%d", cluster->nnodes);
	if (!user_arg(req, "node_rank"))
		strv_add(&argv, "--node_rank"), strv_addf(&argv, "%d", cluster->node_rank);
	if (!a)
		strv_add(&argv, "--nproc_per_node"), strv_addf(&argv, "%d", plan->nproc_per_node);
	if (!user_arg(req, "standalone") && !user_arg(req, "rdzv_endpoint")) {
		if (!user_arg(req, "master_addr") && cluster->master_addr)
			strv_add(&argv, "--master_addr"), strv_add(&argv, cluster->master_addr);
		if (!user_arg(req, "master_port") && cluster->master_port > 0)
			strv_add(&argv, "--master_port"), strv_addf(&argv, "%d", cluster->master_port);
	}
	/* torch 1.13 on Python 3.11 crashes on the defaults of --redirects and --tee
	 * (enum iteration skips 0 and 3, ../shared/notes/ENVIRONMENT.md). A map whose only
	 * key is a local rank that does not exist means "nothing" and avoids that path. */
	if (!user_arg(req, "redirects"))
		strv_add(&argv, "--redirects"), strv_addf(&argv, "%d:0", nproc > 0 ? nproc : 65536);
	if (!user_arg(req, "tee"))
		strv_add(&argv, "--tee"), strv_addf(&argv, "%d:0", nproc > 0 ? nproc : 65536);
	if (!user_arg(req, "log_dir") && req->log_dir)
		strv_add(&argv, "--log_dir"), strv_add(&argv, req->log_dir);

	/* Profile settings for torchrun itself ("torchrun.max_restarts"). */
	for (size_t i = 0; i < plan->n_settings; i++) {
		const struct ll_setting *s = &plan->settings[i];
		const struct ll_torchrun_option *o;

		if (s->exported || !s->value || !ll_startswith(s->name, "torchrun."))
			continue;
		o = ll_torchrun_option_find(s->name + strlen("torchrun."));
		if (!o) {
			r = ll_error_set(err, -EINVAL, "setting '%s'%s%s: torchrun has no option '--%s'", s->name,
					 s->origin ? " from " : "", s->origin ? s->origin : "",
					 s->name + strlen("torchrun."));
			goto fail;
		}
		if (user_arg(req, o->name) || strcmp(o->name, "no_python") == 0 || strcmp(o->name, "run_path") == 0)
			continue;
		if (!o->has_arg) {
			if (truthy(s->value))
				strv_addf(&argv, "--%s", o->name);
		} else {
			strv_addf(&argv, "--%s", o->name);
			strv_add(&argv, s->value);
		}
	}

	/* The user's own torchrun options, in the order given. */
	for (size_t i = 0; i < req->n_user; i++) {
		const struct ll_torchrun_arg *u = &req->user[i];

		if (worker && strcmp(u->name, "no_python") == 0)
			continue; /* added below, once */
		strv_addf(&argv, "--%s", u->name);
		if (u->value)
			strv_add(&argv, u->value);
	}

	/* The entry point. */
	if (worker) {
		strv_add(&argv, "--no_python");
		strv_add(&argv, req->self_exe);
		strv_add(&argv, "__worker");
		strv_add(&argv, "--");
		if (!no_python) {
			strv_add(&argv, req->python);
			strv_add(&argv, "-u");
		}
	}
	if (req->module) {
		strv_add(&argv, "-m");
		strv_add(&argv, req->module);
	} else {
		strv_add(&argv, req->script);
	}
	for (size_t i = 0; i < req->n_script_args; i++)
		strv_add(&argv, req->script_args[i]);

	/* Environment: inherited, then the plan's exported values, then placement. */
	for (char *const *e = req->environ; e && *e; e++)
		if (strchr(*e, '='))
			strv_add(&env, *e);
	for (size_t i = 0; i < plan->n_settings; i++) {
		const struct ll_setting *s = &plan->settings[i];

		if (s->exported && s->value)
			env_set(&env, &added, s->name, s->value);
	}
	/* Inherited values (a launch inside a launch) must not bind or report for these workers. */
	env_unset(&env, LL_PLACEMENT_ENV);
	env_unset(&env, LL_STATUS_DIR_ENV);
	if (placement)
		env_set(&env, &added, LL_PLACEMENT_ENV, placement);
	if (worker && req->status_dir)
		env_set(&env, &added, LL_STATUS_DIR_ENV, req->status_dir);

	l = ll_calloc(1, sizeof(*l));
	l->argc = argv.n;
	l->argv = strv_seal(&argv);
	l->envp = strv_seal(&env);
	l->n_envp = env.n;
	l->n_env_added = added.n;
	l->env_added = strv_seal(&added);
	l->n_notes = notes.n;
	l->notes = strv_seal(&notes);
	l->placement = placement;
	l->worker = worker;
	l->nproc_per_node = nproc;
	*ret = l;
	return 0;

fail:
	strv_free(strv_seal(&argv));
	strv_free(strv_seal(&env));
	strv_free(strv_seal(&added));
	strv_free(strv_seal(&notes));
	free(placement);
	return r;
}
