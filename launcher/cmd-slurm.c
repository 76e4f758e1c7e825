/* `llmlaunch slurm prolog` (slurm.conf Prolog=, root, at allocation) and
 * `llmlaunch slurm task-prolog` (TaskProlog=, as the user, before each task).
 * docs/slurm.md is the admin's guide.
 *
 * Exit status is the contract with Slurm, so it is stricter than elsewhere:
 *   prolog       1 only for a node fault (Slurm drains the node and requeues the job);
 *                anything wrong inside llmlaunch, even a usage error, logs and exits 0.
 *   task-prolog  0 always after option parsing: a non-zero TaskProlog kills the user's
 *                task, and a planning problem is no reason to; the problem is shown to
 *                the task with `print`. */
#include <errno.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "llmlaunch/envfmt.h"
#include "llmlaunch/plancmd.h"
#include "llmlaunch/slurm.h"

extern char **environ;

static const char slurm_usage[] =
	"usage: llmlaunch slurm prolog [OPTIONS]         (slurm.conf: Prolog=, as root)\n"
	"       llmlaunch slurm task-prolog [OPTIONS]    (slurm.conf: TaskProlog=, as the user)\n"
	"\n"
	"'prolog' probes the node when a job is allocated, saves the snapshot for the\n"
	"tasks, and checks the 'expect' rules of the profiles that match the node: it exits\n"
	"non-zero, which makes Slurm drain the node, only when the node itself is at fault.\n"
	"'task-prolog' prints this node's planned NCCL variables in the TaskProlog\n"
	"protocol, so tasks get them even without 'llmlaunch run'.\n"
	"\n"
	"Run 'llmlaunch slurm prolog --help' or 'llmlaunch slurm task-prolog --help' for\n"
	"their options; docs/slurm.md has the slurm.conf lines.\n";

static const char prolog_usage[] =
	"usage: llmlaunch slurm prolog [--state-dir DIR] [--timeout S] [--no-drain-reason]\n"
	"                              [--scontrol PATH] [--profile P]... [--topology FILE | --fsroot DIR]\n"
	"\n"
	"Slurm's Prolog (slurm.conf: Prolog= a script that runs this, PrologFlags=Alloc;\n"
	"docs/slurm.md). Probes this node within --timeout seconds, saves the snapshot\n"
	"as DIR/" LL_SLURM_SNAPSHOT_NAME " (readable by users, replaced atomically) for\n"
	"'llmlaunch slurm task-prolog', and checks the 'expect' rules of the profiles that\n"
	"match the node (GPU count, active RDMA ports, link layer, GPUDirect RDMA).\n"
	"\n"
	"Exit status 1 only for a node fault: one line on stderr names it, and unless\n"
	"--no-drain-reason it is also set as the node's drain reason with scontrol, because\n"
	"Slurm itself shows only \"Prolog error\" in 'sinfo -R'. Anything else (a bug, a\n"
	"missing profile, an unreadable file, a probe slower than --timeout) is logged on\n"
	"stderr and syslog and exits 0: it never drains a node.\n"
	"\n"
	"Options:\n"
	"  --state-dir DIR   where the snapshot goes (default " LL_SLURM_STATE_DIR ")\n"
	"  --timeout S       give the probe at most S seconds (default 20; keep it well\n"
	"                    under slurm.conf's PrologEpilogTimeout)\n"
	"  --no-drain-reason do not run 'scontrol update' on a fault (Slurm's advice is that\n"
	"                    prologs call no Slurm commands; the reason is then \"Prolog error\")\n"
	"  --scontrol PATH   scontrol to run (default: $PATH, /usr/bin, /usr/local/bin)\n"
	LL_COMMON_HELP
	"  -h, --help        show this help\n"
	"\n"
	"Examples:\n"
	"  llmlaunch slurm prolog --state-dir /tmp/ll --no-drain-reason   # try it by hand\n"
	"  llmlaunch slurm prolog --profile /etc/llmlaunch/site.yaml\n";

static const char task_prolog_usage[] =
	"usage: llmlaunch slurm task-prolog [--state-dir DIR] [--set NAME=VALUE]... [--bind MODE]\n"
	"                                   [--profile P]... [--topology FILE | --fsroot DIR]\n"
	"\n"
	"Slurm's TaskProlog (slurm.conf: TaskProlog=). Plans this node for this job from\n"
	"the snapshot the Prolog saved (DIR/" LL_SLURM_SNAPSHOT_NAME "; a fresh probe when\n"
	"there is none) and the job's variables (SLURM_STEP_GPUS, SLURM_NNODES ...), and\n"
	"prints 'export NAME=value' lines, which Slurm applies to the task, and 'print TEXT'\n"
	"lines for warnings (first task of each node only). A value with a newline cannot be\n"
	"carried by the protocol: it is left out with a warning. Values already in the\n"
	"task's environment win. Exits 0 even when planning fails (it prints why), because\n"
	"a failing TaskProlog would kill the task.\n"
	"\n"
	"Options:\n"
	"  --state-dir DIR   where the Prolog saved the snapshot (default " LL_SLURM_STATE_DIR ")\n"
	LL_PLAN_HELP
	LL_COMMON_HELP
	"  -h, --help        show this help\n"
	"\n"
	"Example:\n"
	"  SLURM_STEP_GPUS=0,1 llmlaunch slurm task-prolog --state-dir /tmp/ll\n";

enum {
	OPT_STATE_DIR = 1,
	OPT_TIMEOUT,
	OPT_NO_DRAIN_REASON,
	OPT_SCONTROL,
};

struct prolog_options {
	const char *state_dir;
	double timeout_s;
	bool drain_reason;
	const char *scontrol;
};

/* Returns <0 usage error, 0 exit now (help), 1 continue. */
static int prolog_parse(int argc, char **argv, struct ll_ctx *ctx, struct prolog_options *o)
{
	static const struct option longopts[] = {
		{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "no-drain-reason", no_argument, NULL, OPT_NO_DRAIN_REASON },
		{ "scontrol", required_argument, NULL, OPT_SCONTROL },
		{ "help", no_argument, NULL, 'h' },
		LL_COMMON_LONG_OPTIONS,
		{ 0 },
	};
	char *end;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_STATE_DIR:
			o->state_dir = optarg;
			break;
		case OPT_TIMEOUT:
			errno = 0;
			o->timeout_s = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->timeout_s > 0 && o->timeout_s <= 3600)) {
				ll_errorf("slurm prolog: --timeout '%s': expected seconds from 0 to 3600", optarg);
				return -EINVAL;
			}
			break;
		case OPT_NO_DRAIN_REASON:
			o->drain_reason = false;
			break;
		case OPT_SCONTROL:
			o->scontrol = optarg;
			break;
		case 'h':
			fputs(prolog_usage, stdout);
			return 0;
		case '?':
			ll_errorf("slurm prolog: unknown option '%s'", argv[optind - 1]);
			return -EINVAL;
		case ':':
			ll_errorf("slurm prolog: option '%s' needs a value", argv[optind - 1]);
			return -EINVAL;
		default:
			if (!ll_ctx_common_option(ctx, c, optarg)) {
				ll_errorf("slurm prolog: option '%s' is not supported here", argv[optind - 1]);
				return -EINVAL;
			}
		}
	}
	if (optind < argc) {
		ll_errorf("slurm prolog: unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (ctx->probe.topology_file && ctx->probe.fsroot) {
		ll_errorf("slurm prolog: --topology and --fsroot exclude each other");
		return -EINVAL;
	}
	return 1;
}

/* ---- prolog: the child does the work, the parent keeps the deadline ---- */

struct prolog_job {
	struct ll_ctx *ctx;
	const struct prolog_options *o;
};

/* One result line "KIND\tTEXT"; TEXT may not break the line protocol. */
static void emit(int fd, const char *kind, const char *text)
{
	struct ll_buf b;
	size_t off = 0;
	ssize_t n;

	ll_buf_init(&b);
	ll_buf_addf(&b, "%s\t", kind);
	for (const char *c = text; *c; c++)
		ll_buf_addc(&b, *c == '\n' || *c == '\r' || *c == '\t' ? ' ' : *c);
	ll_buf_addc(&b, '\n');
	while (off < b.len) {
		n = write(fd, b.s + off, b.len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	ll_buf_release(&b);
}

/* Names of the profiles that state expectations: the admin learns where a rule lives. */
static char *expect_sources(const struct ll_profile_set *set)
{
	struct ll_buf b;

	ll_buf_init(&b);
	for (size_t i = 0; i < set->n_profiles; i++) {
		const struct ll_profile_expect *e = &set->profiles[i]->expect;

		if (e->gpus >= 0 || e->active_rdma_ports >= 0 || e->link_layer != LL_LINK_LAYER_UNKNOWN ||
		    e->gdr_required != LL_UNKNOWN)
			ll_buf_addf(&b, "%s%s", b.len ? ", " : "",
				    set->profiles[i]->name ? set->profiles[i]->name : set->profiles[i]->origin);
	}
	return ll_buf_detach(&b);
}

static int prolog_child(void *data, int fd)
{
	struct prolog_job *job = data;
	struct ll_ctx *ctx = job->ctx;
	_cleanup_(ll_profile_set_freep) struct ll_profile_set *set = NULL;
	_cleanup_free_ char *path = NULL, *sources = NULL;
	const struct ll_facts *facts = NULL;
	struct ll_profile_opts opts;
	struct ll_error err = { 0 };
	struct ll_health h;

	if (ll_ctx_facts(ctx, &facts, &err) < 0) {
		emit(fd, "error", err.message);
		ll_error_clear(&err);
		return 0;
	}
	if (facts->hostname)
		emit(fd, "node", facts->hostname);
	/* A snapshot that cannot be saved costs the tasks a fresh probe, not the node. */
	if (ll_slurm_save_snapshot(ctx->topo, job->o->state_dir, &path, &err) < 0) {
		emit(fd, "error", err.message);
		ll_error_clear(&err);
	}
	ll_ctx_profile_opts(ctx, &opts);
	/* Root, in slurmd's working directory, for someone else's job: a user's config
	 * or a ./.llmlaunch.yaml must not decide whether the node drains. The empty path
	 * is one that does not exist, which the resolver skips. */
	opts.user_config = "";
	opts.local_config = "";
	if (ll_profiles_resolve(facts, ctx->profiles, ctx->n_profiles, &opts, &set, &err) < 0) {
		emit(fd, "error", err.message);
		ll_error_clear(&err);
		return 0;
	}
	for (size_t i = 0; i < set->n_warnings; i++)
		emit(fd, "warning", set->warnings[i]);
	ll_health_check(facts, &set->expect, &h);
	for (size_t i = 0; i < h.n_notes; i++)
		emit(fd, "note", h.notes[i]);
	for (size_t i = 0; i < h.n_faults; i++)
		emit(fd, "fault", h.faults[i]);
	sources = expect_sources(set);
	emit(fd, "sources", sources);
	{
		_cleanup_free_ char *summary =
			ll_asprintf("%u of %u expectation(s) checked, %zu fault(s); %zu GPU(s), snapshot %s", h.n_checked,
				    h.n_stated, h.n_faults, facts->n_gpus, path ? path : "not saved");
		emit(fd, "done", summary);
	}
	ll_health_release(&h);
	return 0;
}

struct prolog_result {
	char **faults, **problems, **notes;
	size_t n_faults, n_problems, n_notes;
	char *sources, *summary;
	char *node;             /* the snapshot's hostname */
};

static void prolog_result_release(struct prolog_result *r)
{
	ll_strv_free_n(r->faults, r->n_faults);
	ll_strv_free_n(r->problems, r->n_problems);
	ll_strv_free_n(r->notes, r->n_notes);
	free(r->sources);
	free(r->summary);
	free(r->node);
}

static void prolog_result_parse(char *text, struct prolog_result *r)
{
	char *save = NULL;

	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');
		char **slot;

		if (!tab)
			continue;
		*tab++ = '\0';
		if (strcmp(line, "fault") == 0)
			slot = ll_array_push(&r->faults, &r->n_faults, sizeof(char *));
		else if (strcmp(line, "error") == 0)
			slot = ll_array_push(&r->problems, &r->n_problems, sizeof(char *));
		else if (strcmp(line, "warning") == 0 || strcmp(line, "note") == 0)
			slot = ll_array_push(&r->notes, &r->n_notes, sizeof(char *));
		else if (strcmp(line, "sources") == 0)
			slot = &r->sources;
		else if (strcmp(line, "done") == 0)
			slot = &r->summary;
		else if (strcmp(line, "node") == 0)
			slot = &r->node;
		else
			continue;
		free(*slot);
		*slot = ll_strdup(tab);
	}
}

/* stderr reaches slurmd's log (22.05 logs a failed Prolog's output) or nowhere;
 * syslog is where an admin looks for a node's history. */
static void prolog_log(int priority, const char *fmt, ...) LL_PRINTF(2, 3);
static void prolog_log(int priority, const char *fmt, ...)
{
	va_list ap;
	struct ll_buf b;

	ll_buf_init(&b);
	va_start(ap, fmt);
	ll_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (priority <= LOG_ERR)
		ll_errorf("%s", b.s);
	else
		ll_warnf("%s", b.s);
	syslog(priority, "%s", b.s);
	ll_buf_release(&b);
}

/* Slurm's name for the node, else the probed hostname. */
static const char *node_name(const struct prolog_result *r)
{
	const char *n = getenv("SLURMD_NODENAME");

	if (n && *n)
		return n;
	return r->node ? r->node : "this node";
}

static int cmd_prolog(int argc, char **argv, struct ll_ctx *ctx)
{
	struct prolog_options o = { .state_dir = LL_SLURM_STATE_DIR, .timeout_s = LL_SLURM_PROLOG_TIMEOUT,
				    .drain_reason = true };
	struct prolog_job job = { .ctx = ctx, .o = &o };
	struct prolog_result res = { 0 };
	_cleanup_free_ char *output = NULL, *line = NULL;
	const char *node;
	struct ll_error err = { 0 };
	int r, status = 0;

	openlog("llmlaunch-prolog", LOG_PID, LOG_DAEMON);
	r = prolog_parse(argc, argv, ctx, &o);
	if (r == 0)
		return LL_EXIT_OK;
	if (r < 0) {
		/* A typo in slurm.conf must not drain every node of the cluster. */
		syslog(LOG_ERR, "usage error in the Prolog's arguments: not checking this node");
		ll_errorf("slurm prolog: usage error: not checking this node (exit 0 so that Slurm does not drain it)");
		return LL_EXIT_OK;
	}
	node = getenv("SLURMD_NODENAME");
	r = ll_run_bounded(prolog_child, &job, o.timeout_s, &output, &status, &err);
	if (r < 0) {
		prolog_log(LOG_ERR, "slurm prolog: probe %s: not draining node '%s'", err.message,
			   node ? node : "this node");
		ll_error_clear(&err);
		return LL_EXIT_OK;
	}
	prolog_result_parse(output, &res);
	/* The child probed; the parent still has no facts: name the node from Slurm. */
	node = node_name(&res);
	for (size_t i = 0; i < res.n_notes; i++)
		prolog_log(LOG_WARNING, "slurm prolog: %s", res.notes[i]);
	for (size_t i = 0; i < res.n_problems; i++)
		prolog_log(LOG_ERR, "slurm prolog: %s (an llmlaunch problem: not draining node '%s')", res.problems[i],
			   node);
	if (status != 0 || !res.summary) {
		if (res.n_problems == 0 || status != 0)
			prolog_log(LOG_ERR, "slurm prolog: the probe ended with status %d before its verdict: not draining node '%s'",
				   status, node);
		prolog_result_release(&res);
		return LL_EXIT_OK;
	}
	if (res.n_faults == 0) {
		printf("llmlaunch: node '%s' passes: %s%s%s\n", node, res.summary,
		       res.sources && *res.sources ? "; expectations from " : "", res.sources ? res.sources : "");
		prolog_result_release(&res);
		fflush(stdout);
		return LL_EXIT_OK;
	}

	{
		struct ll_buf b;

		ll_buf_init(&b);
		for (size_t i = 0; i < res.n_faults; i++)
			ll_buf_addf(&b, "%s%s", i ? "; " : "", res.faults[i]);
		line = ll_buf_detach(&b);
		ll_buf_release(&b);
	}
	if (o.drain_reason && getenv("SLURMD_NODENAME")) {
		_cleanup_free_ char *scontrol = ll_slurm_find_scontrol(o.scontrol);
		_cleanup_free_ char *reason = ll_asprintf("llmlaunch: %s", line);

		if (!scontrol)
			prolog_log(LOG_WARNING, "slurm prolog: no scontrol found%s%s: the drain reason stays \"Prolog error\"",
				   o.scontrol ? " at " : "", o.scontrol ? o.scontrol : "");
		else if (ll_slurm_drain(scontrol, node, reason, 10.0, &err) < 0) {
			prolog_log(LOG_WARNING, "slurm prolog: cannot set the drain reason: %s", err.message);
			ll_error_clear(&err);
		}
	}
	/* The last line, and the one that matters: Slurm drains the node on exit 1. */
	ll_errorf("node '%s' fails its expectations%s%s%s: %s", node, res.sources && *res.sources ? " (" : "",
		  res.sources && *res.sources ? res.sources : "", res.sources && *res.sources ? ")" : "", line);
	syslog(LOG_CRIT, "node '%s' fails its expectations: %s", node, line);
	prolog_result_release(&res);
	return LL_EXIT_FAILURE;
}

/* ---- task-prolog ---- */

struct task_prolog_options {
	const char *state_dir;
	struct ll_plan_cmd_options plan;
};

static int task_prolog_parse(int argc, char **argv, struct ll_ctx *ctx, struct task_prolog_options *o)
{
	static const struct option longopts[] = {
		{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
		{ "help", no_argument, NULL, 'h' },
		LL_PLAN_LONG_OPTIONS,
		LL_COMMON_LONG_OPTIONS,
		{ 0 },
	};
	struct ll_error err = { 0 };
	int c, r;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_STATE_DIR:
			o->state_dir = optarg;
			break;
		case 'h':
			fputs(task_prolog_usage, stdout);
			return 0;
		case '?':
			ll_errorf("slurm task-prolog: unknown option '%s'", argv[optind - 1]);
			return -EINVAL;
		case ':':
			ll_errorf("slurm task-prolog: option '%s' needs a value", argv[optind - 1]);
			return -EINVAL;
		default:
			r = ll_plan_cmd_option(&o->plan, c, optarg, &err);
			if (r < 0) {
				ll_errorf("slurm task-prolog: %s", err.message);
				ll_error_clear(&err);
				return r;
			}
			if (r == 0 && !ll_ctx_common_option(ctx, c, optarg)) {
				ll_errorf("slurm task-prolog: option '%s' is not supported here", argv[optind - 1]);
				return -EINVAL;
			}
		}
	}
	if (optind < argc) {
		ll_errorf("slurm task-prolog: unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (ctx->probe.topology_file && ctx->probe.fsroot) {
		ll_errorf("slurm task-prolog: --topology and --fsroot exclude each other");
		return -EINVAL;
	}
	return 1;
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
 * wants --nnodes $LLMLAUNCH_NNODES --node_rank $LLMLAUNCH_NODE_RANK. No network
 * and no PMIx here: a TaskProlog runs before the task's PMIx client exists. */
static void apply_job(struct ll_plan *plan)
{
	const char *nnodes = getenv("SLURM_STEP_NUM_NODES");
	const char *nodeid = getenv("SLURM_NODEID");
	const struct ll_setting *s = ll_plan_get(plan, "LLMLAUNCH_NNODES");

	if (!nnodes || !*nnodes)
		nnodes = getenv("SLURM_JOB_NUM_NODES");
	if (!nnodes || !*nnodes || strspn(nnodes, "0123456789") != strlen(nnodes))
		return;
	if (!s || s->source <= LL_SOURCE_PROBE)
		ll_plan_set(plan, "LLMLAUNCH_NNODES", nnodes, LL_SOURCE_CLUSTER, NULL, "nodes in the Slurm step", true);
	if (nodeid && *nodeid && strspn(nodeid, "0123456789") == strlen(nodeid) &&
	    !ll_plan_value(plan, "LLMLAUNCH_NODE_RANK"))
		ll_plan_set(plan, "LLMLAUNCH_NODE_RANK", nodeid, LL_SOURCE_CLUSTER, NULL, "SLURM_NODEID", true);
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

static int cmd_task_prolog(int argc, char **argv, struct ll_ctx *ctx)
{
	struct task_prolog_options o = { .state_dir = LL_SLURM_STATE_DIR };
	_cleanup_(ll_plan_freep) struct ll_plan *plan = NULL;
	_cleanup_free_ char *snapshot = NULL;
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
	if (!ctx->probe.topology_file && !ctx->probe.fsroot) {
		snapshot = ll_slurm_snapshot_path(o.state_dir);
		if (access(snapshot, R_OK) == 0)
			ctx->probe.topology_file = snapshot;
	}
	ll_buf_init(&out);
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
		apply_job(plan);
		task_prolog_output(plan, warnings, &out);
	}
	fputs(out.s, stdout);
	if (fflush(stdout) != 0 || ferror(stdout))
		ll_errorf("slurm task-prolog: cannot write to standard output");
	ll_buf_release(&out);
	ll_error_clear(&err);
	ll_plan_cmd_options_release(&o.plan);
	return LL_EXIT_OK;
}

int cmd_slurm(int argc, char **argv, struct ll_ctx *ctx)
{
	if (argc < 2) {
		fputs(slurm_usage, stderr);
		return LL_EXIT_USAGE;
	}
	if (strcmp(argv[1], "prolog") == 0)
		return cmd_prolog(argc - 1, argv + 1, ctx);
	if (strcmp(argv[1], "task-prolog") == 0)
		return cmd_task_prolog(argc - 1, argv + 1, ctx);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		fputs(slurm_usage, stdout);
		return fflush(stdout) == 0 ? LL_EXIT_OK : LL_EXIT_FAILURE;
	}
	ll_errorf("slurm: unknown subcommand '%s' (prolog or task-prolog)", argv[1]);
	return LL_EXIT_USAGE;
}
