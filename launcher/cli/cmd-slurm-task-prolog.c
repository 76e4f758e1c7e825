/* `llmlaunch slurm task-prolog`: slurm.conf TaskProlog=, run as the user before each
 * task with the task's environment. Prints this node's planned variables in the
 * TaskProlog protocol (NCCL.md): `export NAME=value` literal to the end of the line,
 * `print TEXT` for warnings. It exits 0 whatever happens after option parsing: a
 * non-zero TaskProlog kills the user's task, and a planning problem is no reason to. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "llmlaunch/agree.h"
#include "llmlaunch/envfmt.h"
#include "llmlaunch/plan-cmd.h"
#include "llmlaunch/slurm.h"
#include "slurm-cmd.h"

extern char **environ;

static const char task_prolog_usage[] =
	"usage: llmlaunch slurm task-prolog [--state-dir DIR] [--set NAME=VALUE]... [--bind MODE]\n"
	"                                   [--profile P]... [--topology FILE | --fsroot DIR]\n"
	"\n"
	"Slurm's TaskProlog (slurm.conf: TaskProlog=). Plans this node for this job from\n"
	"the snapshot the Prolog saved (DIR/" LL_SLURM_SNAPSHOT_NAME "; a fresh probe when\n"
	"there is none) and the job's variables (SLURM_STEP_GPUS, SLURM_STEP_NUM_NODES ...), and\n"
	"prints 'export NAME=value' lines, which Slurm applies to the task, and 'print TEXT'\n"
	"lines for warnings (first task of each node only). A value with a newline cannot be\n"
	"carried by the protocol: it is left out with a warning. Values already in the\n"
	"task's environment win. Exits 0 even when planning fails (it prints why), because\n"
	"a failing TaskProlog would kill the task; 1 only when its output cannot be written\n"
	"(Slurm would not see the exports).\n"
	"\n"
	"Options:\n"
	"  --state-dir DIR   where the Prolog saved the snapshot (default " LL_SLURM_STATE_DIR ")\n"
	LL_PLAN_HELP
	LL_COMMON_HELP
	"  -h, --help        show this help\n"
	"\n"
	"Example:\n"
	"  SLURM_STEP_GPUS=0,1 llmlaunch slurm task-prolog --state-dir /tmp/ll\n";

enum { OPT_STATE_DIR = 1 };

struct task_prolog_options {
	const char *state_dir;
	struct ll_plan_cmd_options plan;
};

static int task_prolog_option(void *data, int opt, char *arg)
{
	struct task_prolog_options *o = data;

	if (opt == OPT_STATE_DIR)
		o->state_dir = arg;
	return 0;
}

static int task_prolog_parse(int argc, char **argv, struct ll_ctx *ctx, struct task_prolog_options *o)
{
	static const struct option own[] = { { "state-dir", required_argument, NULL, OPT_STATE_DIR }, { 0 } };
	const struct ll_plan_cmd_parser parser = {
		"slurm task-prolog", task_prolog_usage, own, task_prolog_option, o, &o->plan, NULL,
	};

	return ll_plan_cmd_parse(argc, argv, ctx, &parser);
}

/* `print TEXT` shows TEXT in the task's output; it must stay on its line. */
static void add_print(struct ll_buf *out, const char *fmt, ...) LL_PRINTF(2, 3);
static void add_print(struct ll_buf *out, const char *fmt, ...)
{
	struct ll_buf b;
	va_list ap;

	ll_buf_init(&b);
	va_start(ap, fmt);
	ll_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	ll_buf_add(out, "print ");
	for (const char *c = b.s; *c; c++)
		ll_buf_addc(out, *c == '\n' || *c == '\r' ? ' ' : *c);
	ll_buf_addc(out, '\n');
	ll_buf_release(&b);
}

/* The node plan says 1 node; the job knows better, and a user's own torchrun line
 * wants --nnodes $LLMLAUNCH_NNODES --node_rank $LLMLAUNCH_NODE_RANK. The job's
 * variables are read as `run` reads them and written with the same precedence
 * (llmlaunch/agree.h, ll_cluster_apply). No network and no PMIx here: a TaskProlog
 * runs before the task's PMIx client exists, so no master is chosen. */
static void apply_job(struct ll_plan *plan, struct ll_buf *out, bool warnings)
{
	struct ll_cluster cluster = { .backend = LL_AGREE_SLURM };
	struct ll_slurm_job job;
	struct ll_error err = { 0 };
	int r;

	r = ll_slurm_job_read(environ, &job, &err);
	if (r < 0) {
		/* Outside a job (an admin trying it by hand) there is nothing to say. */
		if (warnings && r != -ENOENT)
			add_print(out, "llmlaunch: warning: LLMLAUNCH_NNODES not exported: %s", err.message);
		ll_error_clear(&err);
		return;
	}
	cluster.nnodes = (int)job.nnodes;
	cluster.node_rank = (int)job.node_id;
	ll_cluster_apply(plan, &cluster);
}

static int task_prolog_output(const struct ll_plan *plan, bool warnings, struct ll_buf *out)
{
	struct ll_error err = { 0 };

	for (size_t i = 0; i < plan->n_settings; i++) {
		const struct ll_setting *s = &plan->settings[i];
		struct ll_buf line;

		const char *have;

		if (!s->exported || !s->value)
			continue;
		/* The TaskProlog runs with the task's environment: what the task already
		 * has (the user's own NCCL_IB_HCA) needs no line, and must not draw a
		 * warning when the protocol cannot carry it. */
		have = getenv(s->name);
		if (have && strcmp(have, s->value) == 0)
			continue;
		ll_buf_init(&line);
		ll_buf_addf(&line, "export %s=", s->name);
		if (ll_env_quote(LL_ENV_SLURM, s->name, s->value, &line, &err) < 0) {
			if (warnings)
				add_print(out, "llmlaunch: warning: %s not exported: its value has a newline, which a TaskProlog "
					       "cannot express",
					  s->name);
			ll_error_clear(&err);
		} else {
			ll_buf_addc(&line, '\n');
			ll_buf_add(out, line.s);
		}
		ll_buf_release(&line);
	}
	for (size_t i = 0; warnings && i < plan->n_lints; i++)
		if (plan->lints[i].level >= LL_LINT_WARNING)
			add_print(out, "llmlaunch: %s: %s%s%s", ll_lint_level_name(plan->lints[i].level),
				  plan->lints[i].variable ? plan->lints[i].variable : "",
				  plan->lints[i].variable ? ": " : "", plan->lints[i].message);
	return 0;
}

int ll_cmd_slurm_task_prolog(int argc, char **argv, struct ll_ctx *ctx)
{
	struct task_prolog_options o = { .state_dir = LL_SLURM_STATE_DIR };
	_cleanup_(ll_plan_freep) struct ll_plan *plan = NULL;
	_cleanup_free_ char *snapshot = NULL;
	int snapshot_dirfd = -1;
	const char *localid = getenv("SLURM_LOCALID");
	/* Warnings once per node, not once per task: 8 tasks would print 8 copies. */
	bool warnings = !localid || strcmp(localid, "0") == 0;
	struct ll_error err = { 0 };
	struct ll_buf out;
	int r;

	r = task_prolog_parse(argc, argv, ctx, &o);
	if (r <= 0) {
		ll_plan_cmd_options_release(&o.plan);
		return r < 0 ? LL_EXIT_USAGE : LL_EXIT_OK;
	}
	ll_buf_init(&out);
	if (!ctx->probe.topology_file && !ctx->probe.fsroot) {
		/* Only root's snapshot in root's directory: one the job's user (or anyone
		 * but root) could edit would let them choose another job's NCCL variables. */
		r = ll_slurm_snapshot_trusted(o.state_dir, &snapshot, &snapshot_dirfd, &err);
		if (r == 0)
			ctx->probe.topology_file = snapshot;
		else if (r != -ENOENT && warnings)
			add_print(&out, "llmlaunch: warning: not using the Prolog's snapshot: %s; probing this node instead",
				  err.message);
		ll_error_clear(&err);
	}
	r = ll_ctx_plan(ctx, &o.plan, environ, &plan, NULL, &err);
	if (r < 0 && ctx->probe.topology_file == snapshot && snapshot) {
		/* A damaged snapshot: the live node is still there to probe. */
		ll_warnf("slurm task-prolog: %s: probing this node instead", err.message);
		ll_error_clear(&err);
		ctx->probe.topology_file = NULL;
		r = ll_ctx_plan(ctx, &o.plan, environ, &plan, NULL, &err);
	}
	if (r < 0) {
		ll_report(&err);
		add_print(&out, "llmlaunch: task-prolog: no NCCL variables set: %s", err.message);
	} else {
		apply_job(plan, &out, warnings);
		task_prolog_output(plan, warnings, &out);
	}
	/* Output that cannot be written (main() reports it, and exits 1) is the one
	 * failure that is not the job's business: Slurm would not see the exports. */
	fputs(out.s, stdout);
	ll_buf_release(&out);
	if (snapshot_dirfd >= 0)
		close(snapshot_dirfd);
	ll_error_clear(&err);
	ll_plan_cmd_options_release(&o.plan);
	return LL_EXIT_OK;
}

