/* What `llmlaunch run` (and `check`) checks before it plans or starts anything: the
 * script, the interpreter, and that torch imports (a typo should not cost a probe). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd-run-internal.h"
#include "llmlaunch/child.h"
#include "llmlaunch/paths.h"
#include "llmlaunch/profile.h"

#define TORCH_CHECK_TIMEOUT_S 60.0

int run_check_script(const struct run_options *o, struct ll_error *err)
{
	struct stat st;

	if (o->module || (o->no_python && !strchr(o->script, '/')))
		return 0; /* a module, or a program found on PATH by the worker */
	if (stat(o->script, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return ll_error_set(err, -EISDIR, "cannot run script '%s': is a directory", o->script);
		return 0;
	}
	ll_error_set(err, -errno, "cannot find script '%s': %s", o->script, strerror(errno));
	if (!strchr(o->script, '/') && !strchr(o->script, '.')) {
		const char *names[64], *best;
		size_t n = 0;

		for (size_t i = 0; i < ll_n_commands && n < LL_ARRAY_SIZE(names); i++)
			if (ll_commands[i].summary)
				names[n++] = ll_commands[i].name;
		if ((best = ll_did_you_mean(o->script, names, n, 2)))
			ll_error_hint(err, "did you mean 'llmlaunch %s'?", best);
	}
	return -ENOENT;
}

#define DEFAULT_PYTHON "python3"

const char *run_choose_python(const char *given, const struct ll_plan *plan)
{
	const char *env = getenv("LLMLAUNCH_PYTHON");
	const char *planned = plan ? ll_plan_value(plan, "python") : NULL;

	if (given)
		return given;
	if (env && *env)
		return env;
	if (planned && *planned)
		return planned;
	return DEFAULT_PYTHON;
}

char *run_self_exe(struct ll_error *err)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	if (n < 0) {
		ll_error_set(err, -errno, "cannot find llmlaunch's own path in '/proc/self/exe': %s", strerror(errno));
		return NULL;
	}
	buf[n] = 0;
	return ll_strdup(buf);
}

int run_find_program(const char *name, char **ret, struct ll_error *err)
{
	if (strchr(name, '/') && access(name, X_OK) < 0)
		return ll_error_set(err, -errno, "cannot run interpreter '%s': %s", name, strerror(errno));
	*ret = ll_find_program(name);
	if (!*ret)
		return ll_error_set(err, -ENOENT, strchr(name, '/') ? "cannot run interpreter '%s': not a file"
								   : "cannot find interpreter '%s' in PATH",
				    name);
	return 0;
}

#define TORCH_CHECK_CODE "import importlib.util,sys; sys.exit(importlib.util.find_spec('torch') is None)"

void run_torch_check_start(const char *python, pid_t *ret_pid)
{
	char *argv[] = { (char *)python, "-c", TORCH_CHECK_CODE, NULL };

	pid_t pid = ll_spawn(argv, &(struct ll_spawn_options){ .stdio = LL_STDIO_QUIET }, NULL);

	*ret_pid = pid > 0 ? pid : 0;
}

void run_torch_check_cancel(pid_t *pid)
{
	ll_child_kill(*pid);
	*pid = 0;
}

static int torch_importable(const char *python, int *ret_status, struct ll_error *err)
{
	char *argv[] = { (char *)python, "-c", TORCH_CHECK_CODE, NULL };

	return ll_run_quiet(argv, TORCH_CHECK_TIMEOUT_S, ret_status, err);
}

int run_check_torch(const char *python, pid_t started, struct ll_error *err)
{
	int st = 0, r;

	if (started > 0)
		r = ll_child_wait(started, python, TORCH_CHECK_TIMEOUT_S, &st, err);
	else
		r = torch_importable(python, &st, err);
	if (r < 0)
		return r;
	if (st == 0)
		return 0;
	if (st != 1)
		return ll_error_set(err, -ENOEXEC, "interpreter '%s' failed to start (exit status %d)", python, st);
	ll_error_set(err, -ENOENT, "torch is not importable by '%s'", python);
	/* Debian's python3-torch lives under /usr/bin/python3 while PATH may lead to a
	 * pyenv or venv interpreter without it. */
	if (strcmp(python, "/usr/bin/python3") != 0 && access("/usr/bin/python3", X_OK) == 0 &&
	    torch_importable("/usr/bin/python3", &st, NULL) == 0 && st == 0)
		ll_error_hint(err, "/usr/bin/python3 has torch: use --python /usr/bin/python3 or LLMLAUNCH_PYTHON");
	else
		ll_error_hint(err, "install PyTorch for that interpreter, or choose another with --python");
	return -ENOENT;
}

int run_check_plan(const struct ll_plan *plan, struct ll_error *err)
{
	for (size_t i = 0; i < plan->n_lints; i++) {
		const struct ll_lint *l = &plan->lints[i];

		if (!l->blocking)
			continue;
		ll_error_set(err, -EPERM, "%s%s%s", l->variable ? l->variable : "", l->variable ? ": " : "", l->message);
		ll_error_hint(err, "nothing was started; 'llmlaunch explain' shows the whole plan");
		return -EPERM;
	}
	return 0;
}

int run_plan_bootstrap(struct ll_plan *plan, const char *python, const struct ll_ctx *ctx, bool starts_here,
		       struct ll_error *err)
{
	struct ll_torch_facts torch = { 0 };
	int r;

	/* A snapshot or a fake /sys describes another node: its torch is not this one's,
	 * unless the job starts here all the same (a launch with replayed facts: this
	 * machine's interpreter runs it). */
	if (!starts_here && (ctx->probe.topology_file || ctx->probe.fsroot))
		return ll_launch_plan_bootstrap(plan, NULL,
						ctx->probe.topology_file ? "--topology describes another node"
									 : "--fsroot describes another node",
						environ, err);
	if (!python)
		return ll_launch_plan_bootstrap(plan, NULL, "no interpreter found", environ, err);
	ll_torch_probe(python, environ, ctx->probe.no_cache, &torch);
	ll_launch_lint_torch(plan, &torch, environ);
	r = ll_launch_plan_bootstrap(plan, &torch, NULL, environ, err);
	ll_torch_facts_release(&torch);
	return r;
}

char *run_bootstrap_file(const struct ll_plan *plan)
{
	const char *features = ll_plan_value(plan, LL_BOOTSTRAP_ENV);
	char *path;

	if (!features || !*features)
		return NULL;
	path = ll_installed_python_file(LL_BOOTSTRAP_FILE);
	if (path && access(path, R_OK) < 0) {
		free(path);
		return NULL; /* ll_launch_build names what is missing */
	}
	return path;
}
