/* The preflight check, run: the measuring script through torchrun like any job, a
 * progress line and a deadline while it runs, then the verdict (launcher/check/),
 * the report, and what --on-slow says to do (check-cmd.h, docs/check.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check-cmd.h"
#include "cmd-run-internal.h"
#include "job.h"
#include "llmlaunch/cli.h"
#include "llmlaunch/clock.h"
#include "llmlaunch/file.h"
#include "llmlaunch/nccl-watch.h"
#include "llmlaunch/output.h"
#include "llmlaunch/paths.h"
#include "llmlaunch/slurm.h"

extern char **environ;

#define CHECK_SCRIPT "llmlaunch_check.py"
#define CHECK_OUT_MAX (64u << 20)
/* The default deadline: torchrun's rendezvous deadline, a minute for NCCL's
 * initialisation, and ten times the simulated measurement (at least a minute) under
 * the model of bench/check-cost.c for the node's kind (docs/check.md). */
#define DEADLINE_INIT_S 60.0
#define DEADLINE_FACTOR 10.0
#define DEADLINE_MIN_MEASURE_S 60.0

int ll_check_cli_option(struct ll_check_cli *o, int opt, const char *arg)
{

	switch (opt) {
	case LL_OPT_ON_SLOW:
		if (ll_check_on_slow_parse(arg, &o->on_slow) < 0) {
			ll_errorf("--on-slow '%s': expected warn, stop or exclude", arg);
			return -EINVAL;
		}
		return 1;
	case LL_OPT_EXCLUDE_FILE:
		o->exclude_file = arg;
		return 1;
	case LL_OPT_DRAIN:
		o->drain = true;
		return 1;
	case LL_OPT_CHECK_TIMEOUT: {
		struct ll_error err = { 0 };

		if (ll_parse_seconds("--check-timeout", arg, 0.001, 86400, &o->timeout_s, &err) < 0) {
			ll_report(&err);
			ll_error_clear(&err);
			return -EINVAL;
		}
		return 1;
	}
	}
	return 0;
}

/* ---- while it runs ---- */

struct check_watch {
	const char *flag_path;      /* created once NCCL's logs here show a fallback */
	bool flagged;
	const char *out_path;
	double start, deadline;
	bool progress;              /* this node shows the progress line (node 0) */
	char *phase;                /* last shown */
	bool timed_out;
};

static void show_progress(struct check_watch *w)
{
	_cleanup_free_ char *text = NULL;
	struct ll_check_result res;
	struct ll_error err = { 0 };

	if (ll_read_file(w->out_path, CHECK_OUT_MAX, &text) < 0)
		return;
	if (ll_check_parse(text, w->out_path, &res, &err) < 0) {
		ll_error_clear(&err);
		return;
	}
	if (res.last_phase && (!w->phase || strcmp(res.last_phase, w->phase) != 0)) {
		ll_errorf("check: %s (%.0f s)", res.last_phase, ll_now_s() - w->start);
		free(w->phase);
		w->phase = LL_TAKE(res.last_phase);
	}
	ll_check_result_release(&res);
}

/* Polled by the job runner after the NCCL watcher (job.h): the fallback is judged at
 * the end, but told to the script as soon as it shows, which carries it to every node
 * with the figures; node 0's progress line; the deadline. */
static int check_watch(void *data, struct ll_ncclwatch *nccl)
{
	struct check_watch *w = data;

	if (nccl && !w->flagged && ll_ncclwatch_verdict(nccl)->fallback)
		w->flagged = ll_file_replace(w->flag_path, "1\n", 2, 0644) == 0;
	if (w->progress)
		show_progress(w);
	if (ll_now_s() > w->deadline) {
		w->timed_out = true;
		return 1;
	}
	return 0;
}

/* ---- the report ---- */

/* A number: in text with `prec` significant digits through fmt's %s ("unknown"
 * when not known), in JSON as itself (null when not known). */
static void put_num(struct ll_out *o, const char *key, const char *fmt, double value, bool known, int prec)
{
	char num[64];

	if (ll_out_is_json(o)) {
		ll_out_double(o, key, NULL, value, known);
		return;
	}
	snprintf(num, sizeof(num), "%.*g", prec, value);
	ll_out_text(o, fmt, known ? num : "unknown");
}

static void print_threshold(struct ll_out *o, const char *key, const char *text, const char *unit,
			    const struct ll_check_threshold *t)
{
	bool known = t->value > 0;
	_cleanup_free_ char *fmt = ll_asprintf("  %s %%s %s", text, unit);

	ll_out_open_object(o, key);
	if (known || ll_out_is_json(o)) {
		put_num(o, "value", fmt, t->value, known, 3);
		ll_out_string(o, "source", known ? " (%s)\n" : "", known ? t->source : NULL);
	}
	ll_out_close_object(o);
}

static void print_report(FILE *f, bool json, const struct ll_check_result *res, const struct ll_check_verdict *v,
			 const char *exclude, double seconds, double deadline_s)
{
	struct ll_out *o = ll_out_new(f, json);
	bool all = res->nnodes <= 16;

	ll_out_open_object(o, NULL);
	ll_out_text(o, "Preflight check: ");
	ll_out_int(o, "nodes", "%s nodes", res->nnodes, true);
	ll_out_int(o, "nproc_per_node", " x %s processes", res->nproc, true);
	ll_out_string(o, "backend", ", %s", res->backend);
	put_num(o, "seconds", " in %s s", seconds, true, 3);
	put_num(o, "deadline_s", " (deadline %s s)\n", deadline_s, true, 3);
	ll_out_open_array(o, "allreduce");
	for (size_t i = 0; i < res->n_sizes; i++) {
		const struct ll_check_size *s = &res->sizes[i];

		ll_out_open_object(o, NULL);
		ll_out_int(o, "bytes", "  all-reduce %10s B", (long long)s->bytes, true);
		put_num(o, "time_us", "  %10s us", s->time_us, true, 4);
		put_num(o, "algbw_gbps", "  algbw %8s GB/s", s->algbw_gbps, true, 3);
		put_num(o, "busbw_gbps", "  busbw %8s GB/s\n", s->busbw_gbps, true, 3);
		ll_out_close_object(o);
	}
	ll_out_close_array(o);
	ll_out_open_object(o, "pairs");
	if (res->rounds || json) {
		ll_out_int(o, "rounds", "  pair tests: %s rounds, a node's figure is its better pair", res->rounds, true);
		put_num(o, "median_gbps", "; median %s GB/s", v->median_gbps, v->median_gbps > 0, 3);
		put_num(o, "median_lat_us", ", %s us\n", v->median_lat_us, v->median_lat_us > 0, 3);
	} else {
		ll_out_text(o, "  pair tests: none (one node)\n");
	}
	ll_out_close_object(o);
	ll_out_open_object(o, "thresholds");
	print_threshold(o, "node_gbps", "slow below", "GB/s", &v->slow_gbps);
	print_threshold(o, "node_lat_us", "slow above", "us", &v->slow_lat_us);
	print_threshold(o, "allreduce_busbw_gbps", "job below", "GB/s", &v->job_busbw_gbps);
	ll_out_close_object(o);
	ll_out_open_array(o, "per_node");
	for (int i = 0; i < res->nnodes; i++) {
		const struct ll_check_node *n = &res->nodes[i];

		ll_out_open_object(o, NULL);
		if (json || (res->rounds && all) || n->slow || n->broken) {
			ll_out_string(o, "name", "  %-12s", n->name);
			put_num(o, "gbps", " %8s GB/s", n->gbps, n->gbps > 0, 3);
			put_num(o, "lat_us", " %8s us", n->lat_us, n->lat_us > 0, 3);
			ll_out_bool(o, "slow", n->slow ? "  SLOW" : "", n->slow);
			ll_out_bool(o, "broken", n->broken ? "  BROKEN" : "", n->broken);
			ll_out_string(o, "why", n->why ? ": %s\n" : "\n", n->why);
		}
		if (json) {
			ll_out_open_array(o, "pairs_gbps");
			for (int k = 0; k < res->rounds; k++)
				ll_out_double(o, NULL, NULL, n->pair_gbps[k], n->pair_gbps[k] > 0);
			ll_out_close_array(o);
		}
		ll_out_close_object(o);
	}
	ll_out_close_array(o);
	if (!all)
		ll_out_text(o, "  (%d more nodes, none named; --json lists every node)\n", res->nnodes - (int)v->n_named);
	ll_out_open_array(o, "named");
	for (size_t i = 0; i < v->n_named; i++)
		ll_out_string(o, NULL, NULL, res->nodes[v->named[i]].name);
	ll_out_close_array(o);
	ll_out_string(o, "exclude", NULL, exclude);
	ll_out_open_object(o, "job");
	ll_out_bool(o, "slow", NULL, v->job_slow);
	ll_out_string(o, "why", v->job_why ? "  job: %s\n" : "", v->job_why);
	ll_out_close_object(o);
	ll_out_open_object(o, "transport");
	ll_out_bool(o, "fallback", NULL, v->transport_fallback);
	ll_out_string(o, "why", v->transport_why ? "  transport: %s\n" : "", v->transport_why);
	ll_out_close_object(o);
	ll_out_string(o, "advice", v->advice ? "  warning: %s\n" : "", v->advice);
	ll_out_bool(o, "ok", NULL, v->ok);
	if (v->ok)
		ll_out_text(o, "verdict: ok, no node named\n");
	else if (v->n_named)
		ll_out_text(o, "verdict: %zu node%s named: %s\n", v->n_named, v->n_named == 1 ? "" : "s",
			    exclude ? exclude : "one has no host name");
	else
		ll_out_text(o, "verdict: not ok\n");
	ll_out_close_object(o);
	ll_out_finish(o);
}

/* ---- acting on it ---- */

/* A number the plan holds, `fallback` when it holds none. */
static long plan_number(const struct ll_plan *plan, const char *name, long fallback)
{
	const char *v = ll_plan_value(plan, name);
	long x;

	return v && ll_parse_long(v, 0, 1L << 30, &x) == 0 ? x : fallback;
}


static void drain_nodes(const struct ll_check_result *res, const struct ll_check_verdict *v)
{
	_cleanup_free_ char *scontrol = ll_slurm_find_scontrol(NULL);

	if (!scontrol) {
		ll_warnf("--drain: no scontrol found; nothing drained");
		return;
	}
	for (size_t i = 0; i < v->n_named; i++) {
		const struct ll_check_node *n = &res->nodes[v->named[i]];
		_cleanup_free_ char *reason = ll_asprintf("llmlaunch preflight: %s", n->why ? n->why : "slow");
		struct ll_error err = { 0 };

		if (!n->name)
			continue; /* no placeholder goes to scontrol */
		if (ll_slurm_drain(scontrol, n->name, reason, LL_SLURM_PROLOG_TIMEOUT, &err) < 0) {
			ll_warnf("--drain: %s", err.message);
			ll_error_clear(&err);
		} else {
			ll_warnf("drained %s: %s", n->name, reason);
		}
	}
}

static int act(const struct ll_check_request *req, const struct ll_check_result *res,
	       const struct ll_check_verdict *v, const char *exclude, struct ll_error *err)
{
	const struct ll_check_cli *cli = req->cli;
	const char *file = cli->exclude_file ? cli->exclude_file : LL_CHECK_EXCLUDE_DEFAULT;
	bool node0 = plan_number(req->plan, "torchrun.node_rank", 0) == 0;
	struct ll_buf what;

	if (v->ok)
		return 0;
	ll_buf_init(&what);
	if (v->n_named)
		ll_buf_addf(&what, "preflight check named %zu node%s: %s", v->n_named, v->n_named == 1 ? "" : "s",
			    exclude ? exclude : "one has no host name");
	if (v->job_slow)
		ll_buf_addf(&what, "%spreflight check: the job is slow: %s", what.len ? "; " : "", v->job_why);
	if (v->transport_fallback)
		ll_buf_addf(&what, "%spreflight check: %s", what.len ? "; " : "", v->transport_why);
	if (cli->on_slow == LL_ON_SLOW_WARN) {
		ll_warnf("%s", what.s);
		ll_buf_release(&what);
		return 1;
	}
	if (cli->on_slow == LL_ON_SLOW_EXCLUDE && v->n_named && node0 && !exclude) {
		ll_error_set(err, -EHOSTDOWN, "%s; a named node has no host name, so no exclude file was written; the job "
				"was not started", what.s);
	} else if (cli->on_slow == LL_ON_SLOW_EXCLUDE && v->n_named && node0) {
		_cleanup_free_ char *line = ll_asprintf("%s\n", exclude);
		int r = ll_file_replace(file, line, strlen(line), 0644);

		if (r < 0) {
			ll_error_set(err, r, "%s; cannot write the exclude file '%s': %s", what.s, file, strerror(-r));
			ll_buf_release(&what);
			return r;
		}
		if (cli->drain)
			drain_nodes(res, v);
		ll_error_set(err, -EHOSTDOWN, "%s; wrote them to '%s'; the job was not started", what.s, file);
		ll_error_hint(err, "resubmit without them: sbatch --exclude=$(cat %s) ...", file);
	} else {
		ll_error_set(err, -EHOSTDOWN, "%s; the job was not started (--on-slow %s)", what.s,
			     ll_check_on_slow_name(cli->on_slow));
	}
	ll_buf_release(&what);
	return -EHOSTDOWN;
}

void ll_cli_check_exclude_missing(const struct ll_check_cli *cli, const char *missing, struct ll_error *err)
{
	const char *file = cli->exclude_file ? cli->exclude_file : LL_CHECK_EXCLUDE_DEFAULT;
	_cleanup_free_ char *line = NULL, *msg = NULL;
	int r;

	if (!missing || cli->on_slow != LL_ON_SLOW_EXCLUDE || !err->message)
		return;
	line = ll_asprintf("%s\n", missing);
	r = ll_file_replace(file, line, strlen(line), 0644);
	msg = r < 0 ? ll_asprintf("%s; cannot write them to the exclude file '%s': %s", err->message, file, strerror(-r))
		    : ll_asprintf("%s; wrote %s to '%s'", err->message, missing, file);
	free(err->message);
	err->message = LL_TAKE(msg);
}

/* ---- the launch ---- */

/* "" when no name fit for the exclude file and scontrol is known: the node stays
 * unnamed in the verdict, never a placeholder such as "node2". */
static const char *node_name(const struct ll_facts *facts)
{
	const char *s = getenv("SLURMD_NODENAME");

	if (!(s && *s) && facts)
		s = facts->hostname;
	return ll_check_node_name_valid(s) ? s : "";
}

static char *sizes_arg(const struct ll_check_params *p)
{
	struct ll_buf b;

	ll_buf_init(&b);
	for (size_t i = 0; i < p->n_sizes; i++)
		ll_buf_addf(&b, "%s%zu", i ? "," : "", p->sizes[i]);
	return ll_buf_detach(&b);
}

static char *partners_arg(size_t nnodes, size_t node_rank)
{
	struct ll_buf b;

	ll_buf_init(&b);
	ll_buf_add(&b, "--partners=");
	for (int r = 0; r < ll_check_rounds(nnodes); r++)
		ll_buf_addf(&b, "%s%ld", r ? "," : "", ll_check_partner(nnodes, r, node_rank));
	return ll_buf_detach(&b);
}

/* torchrun's rendezvous timeout the agreement gave it ("timeout=N" in rdzv_conf). */
static double rdzv_timeout(const struct ll_plan *plan)
{
	const char *v = ll_plan_value(plan, "torchrun.rdzv_conf"), *t = v ? strstr(v, "timeout=") : NULL;

	return t && (t == v || t[-1] == ',') ? strtod(t + strlen("timeout="), NULL) : 0;
}

/* The check's own plan: the job's, but its own rendezvous store (the job's port + the
 * request's offset) and its own rendezvous id, so that a node that starts the job
 * early never meets the check's keys. */
static struct ll_plan *check_plan(const struct ll_check_request *req)
{
	struct ll_plan *p = ll_plan_dup(req->plan);
	long port = plan_number(p, "torchrun.master_port", 0);
	_cleanup_free_ char *id = ll_asprintf("llmlaunch-check-%ld", port);

	if (port > 0 && req->port_offset) {
		_cleanup_free_ char *text = ll_asprintf("%ld", port + req->port_offset);

		ll_plan_set(p, "torchrun.master_port", text, LL_SOURCE_LAUNCH, NULL,
			    "the job's master port + 1: the check's store is gone before the job's starts", false);
	}
	ll_plan_set(p, "torchrun.rdzv_id", id, LL_SOURCE_LAUNCH, NULL, "the check's own rendezvous keys", false);
	return p;
}

int ll_cli_check(const struct ll_check_request *req, struct ll_error *err)
{
	size_t nnodes = (size_t)plan_number(req->plan, "torchrun.nnodes", 1);
	size_t node_rank = (size_t)plan_number(req->plan, "torchrun.node_rank", 0);
	bool gpus = req->facts && req->facts->n_gpus > 0;
	struct ll_check_params params;
	/* 8 NDR ports a GPU node; gloo on a socket otherwise (bench/check-cost.c) */
	struct ll_check_model model = { .alpha_us = gpus ? 10 : 250, .node_gbps = gpus ? 400 : 0.5 };
	struct ll_check_estimate est;
	_cleanup_(ll_plan_freep) struct ll_plan *plan = check_plan(req);
	_cleanup_free_ char *script = NULL, *out_path = NULL, *flag_path = NULL;
	_cleanup_free_ char *sizes = NULL, *partners = NULL, *pair_bytes = NULL, *iters = NULL, *reps = NULL;
	_cleanup_free_ char *ar_reps = NULL, *lat_iters = NULL;
	_cleanup_free_ char *text = NULL, *exclude = NULL;
	struct check_watch w = { 0 };
	struct run_job_options jo = { .on_fallback = LL_FALLBACK_WARN, .grace_s = 5, .watch = check_watch, .watch_data = &w };
	struct run_job job = { .dir = { .lock_fd = -1 } };
	struct ll_check_result res = { 0 };
	struct ll_check_verdict v = { 0 };
	const struct ll_nccl_verdict *nccl = NULL;
	double deadline_s, start = ll_now_s(), rdzv_s = rdzv_timeout(plan);
	int r, status = 0;

	ll_check_params_default(&params, gpus);
	model.nproc = plan->nproc_per_node > 0 ? plan->nproc_per_node : 1;
	ll_check_estimate(nnodes, &params, &model, &est);
	deadline_s = req->cli->timeout_s;
	if (deadline_s <= 0) {
		double measure = DEADLINE_FACTOR * est.total_s;

		deadline_s = (rdzv_s > 0 ? rdzv_s : LL_RDZV_BASE_S) + DEADLINE_INIT_S +
			     (measure > DEADLINE_MIN_MEASURE_S ? measure : DEADLINE_MIN_MEASURE_S);
	}

	script = ll_installed_python_file(CHECK_SCRIPT);
	if (!script || access(script, R_OK) < 0) {
		ll_error_set(err, -ENOENT, "cannot find the check's script '%s': %s", script ? script : CHECK_SCRIPT,
			     strerror(errno));
		return ll_error_hint(err, "it is installed with llmlaunch under share/llmlaunch/python/"), -ENOENT;
	}
	sizes = sizes_arg(&params);
	partners = partners_arg(nnodes, node_rank);
	pair_bytes = ll_asprintf("%zu", params.pair_bytes);
	iters = ll_asprintf("%d", params.iters);
	reps = ll_asprintf("%d", params.reps);
	lat_iters = ll_asprintf("%d", params.lat_iters);
	ar_reps = ll_asprintf("%d", params.allreduce_reps);
	{
		const char *name = node_name(req->facts);

		r = run_job_open(&job, plan, environ, &jo, err);
		if (r < 0)
			goto out;
		out_path = ll_asprintf("%s/check.jsonl", job.path);
		flag_path = ll_asprintf("%s/nccl-fallback", job.path);
		{
			char *args[] = { "--out", out_path, "--node-name", (char *)name, partners, "--sizes", sizes,
					 "--pair-bytes", pair_bytes, "--iters", iters, "--reps", reps, "--lat-iters",
					 lat_iters, "--allreduce-reps", ar_reps, "--nccl-flag", flag_path };
			_cleanup_free_ char *boot = run_bootstrap_file(plan);
			struct ll_launch_request lr = {
				.bootstrap = boot,
				.self_exe = req->self_exe,
				.python = req->python,
				.script = script,
				.script_args = args,
				.n_script_args = LL_ARRAY_SIZE(args),
				.environ = environ,
			};

			r = ll_launch_build(plan, &lr, &job.launch, err);
		}
		if (r < 0)
			goto out;
	}
	w.out_path = out_path;
	w.flag_path = flag_path;
	w.start = start;
	w.deadline = start + deadline_s;
	w.progress = node_rank == 0;
	if (w.progress)
		ll_errorf("check: %zu nodes, %d round%s of pair tests, deadline %.0f s", nnodes, est.rounds,
			  est.rounds == 1 ? "" : "s", deadline_s);
	r = run_job_supervise(&job, plan, &status, err);
	if (r < 0)
		goto out;
	if (job.nccl) {
		nccl = ll_ncclwatch_verdict(job.nccl);
		if (nccl && !nccl->files)
			nccl = NULL;
	}
	r = ll_read_file(out_path, CHECK_OUT_MAX, &text);
	if (r == 0)
		r = ll_check_parse(text, out_path, &res, err);
	else
		ll_error_set(err, r, "the check wrote no results ('%s': %s)", out_path, ll_file_strerror(r));
	if (r < 0)
		goto out;
	if (!res.complete || status != 0) {
		r = ll_error_set(err, -EIO, "the check did not finish%s%s%s: %s", res.last_phase ? " (it stopped in " : "",
				 res.last_phase ? res.last_phase : "", res.last_phase ? ")" : "",
				 w.timed_out ? "its deadline passed" : "torchrun failed");
		if (w.timed_out)
			ll_error_hint(err, "the deadline was %.0f s (--check-timeout); torchrun's output above says where it waited",
				      deadline_s);
		else
			ll_error_hint(err, "torchrun exited %d; its output above says why", status);
		goto out;
	}
	ll_check_decide(&res, req->expect, nccl, &v);
	exclude = ll_check_exclude_list(&res, &v);
	/* Every node reached the same verdict; node 0 tells it. */
	if (node_rank == 0)
		print_report(req->report, req->json, &res, &v, exclude, ll_now_s() - start, deadline_s);
	r = act(req, &res, &v, exclude, err);
	unlink(out_path);
	unlink(flag_path);
out:
	if (r < 0 && r != -EHOSTDOWN && out_path && access(out_path, F_OK) == 0)
		ll_warnf("the check's results are kept in '%s'", out_path);
	run_job_release(&job, r < 0 && r != -EHOSTDOWN); /* NCCL's logs kept when the check failed */
	free(w.phase);
	ll_check_verdict_release(&v);
	ll_check_result_release(&res);
	return r;
}
