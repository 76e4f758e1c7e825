/* Internal to `llmlaunch run`, which is split by stage: what the command line asks
 * for (cmd-run-options.c), the checks made before anything is planned or started
 * (cmd-run-checks.c), and planning, agreeing, launching and supervising (cmd-run.c). */
#ifndef LLMLAUNCH_CMD_RUN_INTERNAL_H
#define LLMLAUNCH_CMD_RUN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "check-cmd.h"
#include "llmlaunch/cli.h"
#include "llmlaunch/launch.h"
#include "llmlaunch/nccl-watch.h"
#include "llmlaunch/plan-cmd.h"

#define DEFAULT_GRACE_S 15.0

struct run_options {
	const char *python;
	const char *module;
	bool dry_run, exec, json;
	double grace_s;
	enum ll_fallback_policy on_fallback;
	/* --set, --bind, --nproc-per-node and torchrun's own flags ("torchrun.NAME", as
	 * --set torchrun.NAME=VALUE would give them: the plan is their one way in) */
	struct ll_plan_cmd_options plan;
	char **owned;                   /* the flags' names and origins, which plan.sets borrows */
	size_t n_owned;
	const char *script;
	char **script_args;
	size_t n_script_args;
	struct ll_agree_options agree;  /* --agree-timeout, --strict */
	bool no_python;                 /* --no-python: SCRIPT is a program (for the script check) */
	bool preflight;                 /* --preflight: the check first (check-run.c) */
	struct ll_check_cli check;      /* --on-slow, --exclude-file, --drain, --check-timeout */
};

/* ---- cmd-run-options.c ---------------------------------------------------------- */

/* Parse the command line into *o, whose grace_s holds the default. Returns 1 to
 * continue, 0 to exit successfully (--help), -EINVAL for usage errors (already
 * reported). */
int run_parse_argv(int argc, char **argv, struct ll_ctx *ctx, struct run_options *o);
void run_options_release(struct run_options *o);

/* ---- cmd-run-checks.c ----------------------------------------------------------- */

/* The script exists (a module, or a --no-python program found on PATH, is taken on
 * trust); a missing one that looks like a mistyped command gets a hint. */
int run_check_script(const struct run_options *o, struct ll_error *err);
/* The plan has no lint that says the job cannot work (a locked-memory limit RDMA
 * registration cannot live with): else -EPERM, with that lint as the message. */
int run_check_plan(const struct ll_plan *plan, struct ll_error *err);
/* --python, else $LLMLAUNCH_PYTHON, else a profile's "python" (plan NULL: none yet),
 * else python3. */
const char *run_choose_python(const char *given, const struct ll_plan *plan);
/* llmlaunch's own path (malloc'ed), NULL with err set. */
char *run_self_exe(struct ll_error *err);
/* Find an interpreter as execvp would; *ret malloc'ed. */
int run_find_program(const char *name, char **ret, struct ll_error *err);
/* Start checking that `python` can import torch; the interpreter's start-up (~20 ms)
 * then overlaps the probe. *ret_pid is 0 when the check could not start (the
 * synchronous check reports why). */
void run_torch_check_start(const char *python, pid_t *ret_pid);
/* Kill and reap a check started above, if any; *pid becomes 0. */
void run_torch_check_cancel(pid_t *pid);
/* torch is importable by `python`. `started` is the pid of a check of this same
 * interpreter started earlier, or 0. */
int run_check_torch(const char *python, pid_t started, struct ll_error *err);
/* Ask `python`'s torch (once per boot: llmlaunch/torch.h), lint the plan against it
 * (ll_launch_lint_torch) and write the plan's LLMLAUNCH_BOOTSTRAP
 * (ll_launch_plan_bootstrap); torch is not asked for a
 * --topology or --fsroot plan, which describes another node, unless the job
 * `starts_here` all the same (a launch, not explain or a dry run). -ENOTSUP with err set
 * where this torch cannot start (the plan says why either way). */
int run_plan_bootstrap(struct ll_plan *plan, const char *python, const struct ll_ctx *ctx, bool starts_here,
		       struct ll_error *err);
/* The bootstrap's installed path (malloc'ed) when the plan sets LLMLAUNCH_BOOTSTRAP;
 * NULL when it does not, or when the file is missing (the build then says so). */
char *run_bootstrap_file(const struct ll_plan *plan);

#endif
