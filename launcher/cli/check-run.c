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
	char *end;

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
	case LL_OPT_CHECK_TIMEOUT:
		o->timeout_s = strtod(arg, &end);
		if (*end || !(o->timeout_s > 0 && o->timeout_s <= 86400)) {
			ll_errorf("--check-timeout '%s': expected seconds, more than 0", arg);
			return -EINVAL;
		}
		return 1;
	}
	return 0;
}

/* ---- while it runs ---- */

struct check_watch {
	struct ll_ncclwatch *nccl;
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
		fprintf(stderr, "llmlaunch: check: %s (%.0f s)\n", res.last_phase, ll_now_s() - w->start);
		free(w->phase);
		w->phase = LL_TAKE(res.last_phase);
	}
	ll_check_result_release(&res);
}

static int check_watch(void *data)
{
	struct check_watch *w = data;

	if (w->nccl) {
		ll_ncclwatch_poll(w->nccl, stderr); /* the fallback is judged at the end */
		/* and told to the script, which carries it to every node with the figures */
		if (!w->flagged && ll_ncclwatch_verdict(w->nccl)->fallback)
			w->flagged = ll_file_replace(w->flag_path, "1\n", 2, 0644) == 0;
	}
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
	bool node0 = req->cluster->node_rank == 0;
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

static char *partners_arg(const struct ll_cluster *c)
{
	struct ll_buf b;
	size_t n = c->nnodes > 0 ? (size_t)c->nnodes : 1;

	ll_buf_init(&b);
	ll_buf_add(&b, "--partners=");
	for (int r = 0; r < ll_check_rounds(n); r++)
		ll_buf_addf(&b, "%s%ld", r ? "," : "", ll_check_partner(n, r, (size_t)c->node_rank));
	return ll_buf_detach(&b);
}

int ll_cli_check(const struct ll_check_request *req, struct ll_error *err)
{
	const struct ll_cluster *cl = req->cluster;
	struct ll_cluster cluster = *cl; /* shallow: only the port differs, nothing is freed */
	size_t nnodes = cl->nnodes > 0 ? (size_t)cl->nnodes : 1;
	bool gpus = req->facts && req->facts->n_gpus > 0;
	struct ll_check_params params;
	/* 8 NDR ports a GPU node; gloo on a socket otherwise (bench/check-cost.c) */
	struct ll_check_model model = { .alpha_us = gpus ? 10 : 250, .node_gbps = gpus ? 400 : 0.5 };
	struct ll_check_estimate est;
	struct ll_jobdir jobdir = { .lock_fd = -1 };
	_cleanup_free_ char *script = NULL, *out_path = NULL, *nccldir = NULL, *flag_path = NULL;
	_cleanup_free_ char *sizes = NULL, *partners = NULL, *pair_bytes = NULL, *iters = NULL, *reps = NULL;
	_cleanup_free_ char *ar_reps = NULL, *lat_iters = NULL, *nproc_text = NULL, *rdzv_id = NULL;
	_cleanup_free_ char *text = NULL, *exclude = NULL;
	_cleanup_(ll_launch_freep) struct ll_launch *launch = NULL;
	struct { struct check_watch w; } h = { 0 };
	struct ll_torchrun_arg user[2];
	size_t n_user = 0;
	struct ll_check_result res = { 0 };
	struct ll_check_verdict v = { 0 };
	const struct ll_nccl_verdict *nccl = NULL;
	double deadline_s, start = ll_now_s();
	int r, status = 0;

	ll_check_params_default(&params, gpus);
	model.nproc = req->nproc_per_node > 0 ? req->nproc_per_node : 1;
	ll_check_estimate(nnodes, &params, &model, &est);
	deadline_s = req->cli->timeout_s;
	if (deadline_s <= 0) {
		double measure = DEADLINE_FACTOR * est.total_s;

		deadline_s = (cl->deadlines.rdzv_s > 0 ? cl->deadlines.rdzv_s : LL_RDZV_BASE_S) + DEADLINE_INIT_S +
			     (measure > DEADLINE_MIN_MEASURE_S ? measure : DEADLINE_MIN_MEASURE_S);
	}

	script = ll_installed_python_file(CHECK_SCRIPT);
	if (!script || access(script, R_OK) < 0) {
		ll_error_set(err, -ENOENT, "cannot find the check's script '%s': %s", script ? script : CHECK_SCRIPT,
			     strerror(errno));
		return ll_error_hint(err, "it is installed with llmlaunch under share/llmlaunch/python/"), -ENOENT;
	}
	r = ll_jobdir_create(NULL, &jobdir, err);
	if (r < 0)
		return r;
	out_path = ll_asprintf("%s/check.jsonl", jobdir.path);
	flag_path = ll_asprintf("%s/nccl-fallback", jobdir.path);
	sizes = sizes_arg(&params);
	partners = partners_arg(cl);
	pair_bytes = ll_asprintf("%zu", params.pair_bytes);
	iters = ll_asprintf("%d", params.iters);
	reps = ll_asprintf("%d", params.reps);
	lat_iters = ll_asprintf("%d", params.lat_iters);
	ar_reps = ll_asprintf("%d", params.allreduce_reps);
	{
		char *args[] = { "--out", out_path, "--node-name", (char *)node_name(req->facts),
				 partners, "--sizes", sizes, "--pair-bytes", pair_bytes, "--iters", iters,
				 "--reps", reps, "--lat-iters", lat_iters, "--allreduce-reps", ar_reps,
				 "--nccl-flag", flag_path };
		struct ll_launch_request lr = {
			.self_exe = req->self_exe,
			.python = req->python,
			.script = script,
			.script_args = args,
			.n_script_args = LL_ARRAY_SIZE(args),
			.log_dir = jobdir.path,
			.environ = environ,
		};

		if (req->nproc_per_node > 0) {
			nproc_text = ll_asprintf("%d", req->nproc_per_node);
			user[n_user++] = (struct ll_torchrun_arg){ ll_torchrun_option_find("nproc_per_node")->name, nproc_text };
		}
		/* Its own store prefix: a node that starts the job early never meets the check's keys. */
		rdzv_id = ll_asprintf("llmlaunch-check-%d", cl->master_port);
		user[n_user++] = (struct ll_torchrun_arg){ ll_torchrun_option_find("rdzv_id")->name, rdzv_id };
		lr.user = user;
		lr.n_user = n_user;
		if (cluster.master_port > 0)
			cluster.master_port += req->port_offset;
		r = ll_launch_build(req->plan, &cluster, &lr, &launch, err);
	}
	if (r < 0)
		goto out;
	nccldir = ll_asprintf("%s/nccl", jobdir.path);
	/* Without the logs (the user's own NCCL_DEBUG_FILE, a directory that cannot be
	 * made) the check still measures; only its transport verdict is missing. */
	if (run_nccl_logs_begin(launch, nccldir, false, NULL) > 0) {
		enum ll_net_expect expect = ll_ncclwatch_expect_from_plan(ll_plan_value(req->plan, "LLMLAUNCH_NET"),
									  ll_plan_value(req->plan, "NCCL_NET"),
									  ll_plan_value(req->plan, "NCCL_IB_DISABLE"));

		if (ll_ncclwatch_new(nccldir, expect, LL_FALLBACK_WARN, &h.w.nccl, NULL) < 0)
			h.w.nccl = NULL;
	}
	h.w.out_path = out_path;
	h.w.flag_path = flag_path;
	h.w.start = start;
	h.w.deadline = start + deadline_s;
	h.w.progress = cl->node_rank == 0;
	if (h.w.progress)
		fprintf(stderr, "llmlaunch: check: %zu nodes, %d round%s of pair tests, deadline %.0f s\n", nnodes,
			est.rounds, est.rounds == 1 ? "" : "s", deadline_s);
	fflush(stdout);
	fflush(stderr);
	{
		struct ll_supervise_options so = {
			.grace_s = 5,
			.watch = check_watch,
			.watch_data = &h.w,
			.watch_fd = h.w.nccl ? ll_ncclwatch_fd(h.w.nccl) : -1,
			.watch_interval_ms = LL_NCCLWATCH_INTERVAL_MS,
		};

		r = ll_supervise(launch->argv, launch->envp, &so, &status, err);
	}
	if (r < 0)
		goto out;
	if (h.w.nccl) {
		ll_ncclwatch_finish(h.w.nccl, stderr);
		nccl = ll_ncclwatch_verdict(h.w.nccl);
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
				 h.w.timed_out ? "its deadline passed" : "torchrun failed");
		if (h.w.timed_out)
			ll_error_hint(err, "the deadline was %.0f s (--check-timeout); torchrun's output above says where it waited",
				      deadline_s);
		else
			ll_error_hint(err, "torchrun exited %d; its output above says why", status);
		goto out;
	}
	ll_check_decide(&res, req->expect, nccl, &v);
	exclude = ll_check_exclude_list(&res, &v);
	/* Every node reached the same verdict; node 0 tells it. */
	if (cl->node_rank == 0)
		print_report(req->report, req->json, &res, &v, exclude, ll_now_s() - start, deadline_s);
	r = act(req, &res, &v, exclude, err);
	unlink(out_path);
	unlink(flag_path);
out:
	if (r < 0 && r != -EHOSTDOWN && access(out_path, F_OK) == 0)
		ll_warnf("the check's results are kept in '%s'", out_path);
	if (h.w.nccl)
		run_nccl_logs_done(nccldir, r < 0 && r != -EHOSTDOWN); /* kept when the check failed */
	if (h.w.nccl && r < 0 && nccl == NULL)
		ll_ncclwatch_finish(h.w.nccl, stderr);
	ll_ncclwatch_free(h.w.nccl);
	free(h.w.phase);
	ll_check_verdict_release(&v);
	ll_check_result_release(&res);
	ll_jobdir_release(&jobdir);
	return r;
}
