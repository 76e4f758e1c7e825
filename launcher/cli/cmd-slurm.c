/* `llmlaunch slurm prolog` (slurm.conf Prolog=, root, at allocation) and
 * `llmlaunch slurm task-prolog` (TaskProlog=, as the user, before each task; in
 * cmd-slurm-task-prolog.c). docs/slurm.md is the admin's guide.
 *
 * Exit status is the contract with Slurm, so it is stricter than elsewhere:
 *   prolog       1 only for a node fault (Slurm drains the node and requeues the job);
 *                anything wrong inside llmlaunch, even a usage error, logs and exits 0.
 *   task-prolog  0 after option parsing: a non-zero TaskProlog kills the user's task,
 *                and a planning problem is no reason to; the problem is shown to the
 *                task with `print`. Only output that cannot be written (main()'s check)
 *                exits 1: Slurm would not see the exports. */
#include <errno.h>
#include <stdio_ext.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "llmlaunch/cli.h"
#include "llmlaunch/quote.h"
#include "llmlaunch/slurm.h"
#include "slurm-cmd.h"

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
	"  --timeout S       give the probe at most S seconds (default 8; keep it under\n"
	"                    slurm.conf's MessageTimeout)\n"
	"  --no-drain-reason do not run 'scontrol update' on a fault (Slurm's advice is that\n"
	"                    prologs call no Slurm commands; the reason is then \"Prolog error\")\n"
	"  --scontrol PATH   scontrol to run (default: $PATH, /usr/bin, /usr/local/bin)\n"
	LL_COMMON_HELP
	"  -h, --help        show this help\n"
	"\n"
	"Examples:\n"
	"  llmlaunch slurm prolog --state-dir /tmp/ll --no-drain-reason   # try it by hand\n"
	"  llmlaunch slurm prolog --profile /etc/llmlaunch/site.yaml\n";

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
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_STATE_DIR:
			o->state_dir = optarg;
			break;
		case OPT_TIMEOUT: {
			struct ll_error err = { 0 };

			if (ll_parse_seconds("slurm prolog: --timeout", optarg, 0.001, 3600, &o->timeout_s, &err) < 0) {
				ll_report(&err);
				ll_error_clear(&err);
				return -EINVAL;
			}
			break;
		}
		case OPT_NO_DRAIN_REASON:
			o->drain_reason = false;
			break;
		case OPT_SCONTROL:
			o->scontrol = optarg;
			break;
		case 'h':
			fputs(prolog_usage, stdout);
			return 0;
		default:
			if (ll_cmd_option_fallback("slurm prolog", c, optarg, argv, ctx, longopts) < 0)
				return -EINVAL;
		}
	}
	return ll_cmd_options_done("slurm prolog", argc, argv, ctx);
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
	bool slurm_imex;

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
	/* slurmd sets SLURM_CONF for its Prolog. */
	slurm_imex = ll_slurm_conf_imex_switch(getenv("SLURM_CONF"));
	ll_health_check_fabric(facts, ll_slurm_imex_before(job->o->state_dir), slurm_imex, &h);
	/* The mark of a node that had IMEX channels; a write that fails costs only
	 * that later check. */
	if (!slurm_imex)
		(void)ll_slurm_imex_remember(job->o->state_dir, facts);
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
	ll_strv_free(r->faults, r->n_faults);
	ll_strv_free(r->problems, r->n_problems);
	ll_strv_free(r->notes, r->n_notes);
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
	/* The prolog is the node's health check: it must see the hardware as it
	 * is now, never a topology cached earlier in this boot. */
	ctx->probe.no_cache = true;
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
			prolog_log(LOG_ERR,
				   "slurm prolog: the probe ended with status %d before its verdict: not draining node '%s'",
				   status, node);
		prolog_result_release(&res);
		return LL_EXIT_OK;
	}
	if (res.n_faults == 0) {
		_cleanup_free_ char *passes = ll_asprintf("llmlaunch: node '%s' passes: %s%s%s", node, res.summary,
							 res.sources && *res.sources ? "; expectations from " : "",
							 res.sources ? res.sources : "");
		_cleanup_free_ char *safe = ll_text_escaped(passes, 0);

		printf("%s\n", safe);
		/* The exit status is the node's health: a line that cannot reach standard
		 * output (Slurm discards it anyway) is logged, and must not drain the node
		 * through main()'s check of standard output. */
		if (fflush(stdout) != 0 || ferror(stdout)) {
			syslog(LOG_WARNING, "cannot write the verdict to standard output; node '%s' passes", node);
			__fpurge(stdout);
			clearerr(stdout);
		}
		prolog_result_release(&res);
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
			prolog_log(LOG_WARNING,
				   "slurm prolog: no scontrol found%s%s: the drain reason stays \"Prolog error\"",
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

static const struct ll_command slurm_commands[] = {
	{ "prolog", cmd_prolog, "node health check and snapshot (slurm.conf Prolog=)" },
	{ "task-prolog", ll_cmd_slurm_task_prolog, "export this node's NCCL variables (TaskProlog=)" },
};

int cmd_slurm(int argc, char **argv, struct ll_ctx *ctx)
{
	return ll_command_dispatch("slurm", slurm_commands, LL_ARRAY_SIZE(slurm_commands), slurm_usage, argc, argv,
				   ctx);
}
