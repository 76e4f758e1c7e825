/* The planner as the commands use it (env, explain, and whoever else wants the
 * node's plan): the options they share, and facts + profiles + environment + those
 * options turned into a plan. */
#ifndef LLMLAUNCH_PLAN_CMD_H
#define LLMLAUNCH_PLAN_CMD_H

#include "llmlaunch/cli.h"
#include "llmlaunch/plan.h"
#include "llmlaunch/profile.h"

/* Option values, above the common ones of cli.h. */
enum {
	LL_OPT_SET = 0x1100,
	LL_OPT_BIND,
	LL_OPT_NPROC_PER_NODE,
};
#define LL_PLAN_LONG_OPTIONS                                                   \
	{ "set", required_argument, NULL, LL_OPT_SET },                        \
	{ "bind", required_argument, NULL, LL_OPT_BIND },                      \
	{ "nproc-per-node", required_argument, NULL, LL_OPT_NPROC_PER_NODE },  \
	{ "nproc_per_node", required_argument, NULL, LL_OPT_NPROC_PER_NODE }
#define LL_PLAN_HELP                                                                       \
	"  --set NAME=VALUE  set a variable or setting, above everything else; repeatable\n" \
	"  --bind MODE       numa (default), core or none: where each rank's CPUs come from\n" \
	"  --nproc-per-node N  workers on this node (default: one per visible GPU)\n"

struct ll_plan_cmd_options {
	/* The command line's values, in order: --set NAME=VALUE (split in place in argv),
	 * --nproc-per-node N, and `run`'s torchrun flags, as "torchrun.NAME". */
	struct ll_assignment *sets;
	size_t n_sets;
	enum ll_bind_mode bind;
	bool bind_given;
};

/* Handle one of the options above: 1 handled, 0 not one of them, -EINVAL with err
 * set for a bad value (a usage error). `arg` may be modified (NAME=VALUE is split). */
int ll_plan_cmd_option(struct ll_plan_cmd_options *o, int opt, char *arg, struct ll_error *err);
void ll_plan_cmd_options_release(struct ll_plan_cmd_options *o);

struct ll_agree_options;
/* ll_cmd_option_fallback() for the commands that plan (env, explain, slurm task-prolog):
 * the planner's options and, when `agree` is not NULL, the agreement's options come
 * first. Returns 1 when handled, -EINVAL after reporting a usage error. */
int ll_plan_cmd_fallback(const char *cmd, int c, char *arg, char **argv, struct ll_ctx *ctx,
			 struct ll_plan_cmd_options *plan, struct ll_agree_options *agree, const struct option *longopts);

/* The option loop of the commands that plan (env, explain, slurm task-prolog): the
 * command's own options (`own`, values from 1 up to 0x1000, handled by own_option,
 * which returns 0 or -EINVAL after reporting), the planner's, the agreement's when
 * `agree` is set, the common ones, and -h/--help (prints `usage` on stdout).
 * Returns <0 after reporting a usage error, 0 when help was printed, 1 to go on. */
struct ll_plan_cmd_parser {
	const char *name;               /* "env", "slurm task-prolog": prefix of messages */
	const char *usage;
	const struct option *own;       /* ends with { 0 }; NULL: none */
	int (*own_option)(void *data, int opt, char *arg);
	void *data;
	struct ll_plan_cmd_options *plan;
	struct ll_agree_options *agree; /* NULL: the command does not agree */
};
int ll_plan_cmd_parse(int argc, char **argv, struct ll_ctx *ctx, const struct ll_plan_cmd_parser *p);

/* Probe (or replay) this node, resolve the profiles of ctx, and plan with
 * `environ_`. The plan owns copies of everything; *ret_profiles (optional) receives
 * the profile set for callers that show the layers. */
int ll_ctx_plan(struct ll_ctx *ctx, const struct ll_plan_cmd_options *o, char *const *environ_,
		struct ll_plan **ret, struct ll_profile_set **ret_profiles, struct ll_error *err);

/* The agreement as every command runs it, after ll_ctx_plan(): the plan's launcher
 * (or none), the progress line while nodes arrive, `environ_` as the agreement's
 * environment unless `agree` has one, and the agreement's notes printed as warnings.
 * Fills `ret` (ll_cluster_release() it). */
struct ll_cluster;
int ll_ctx_agree(struct ll_ctx *ctx, struct ll_plan *plan, struct ll_agree_options *agree, char *const *environ_,
		 struct ll_cluster *ret, struct ll_error *err);

/* ll_ctx_plan(), then the cluster-wide values when a launcher runs this process
 * (srun --mpi=pmix, mpirun, a Slurm job: llmlaunch/agree.h, launcher_only); alone,
 * the node plan as it is. The agreement's notes are printed as warnings. `agree`
 * holds --agree-timeout and --strict; its environ defaults to `environ_`.
 * *ret_profiles (optional) receives the profile set, as from ll_ctx_plan(). */
int ll_ctx_plan_agreed(struct ll_ctx *ctx, const struct ll_plan_cmd_options *o, struct ll_agree_options *agree,
		       char *const *environ_, struct ll_plan **ret, struct ll_profile_set **ret_profiles,
		       struct ll_error *err);

#endif
