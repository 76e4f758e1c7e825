/* llmlaunch logs: read NCCL_DEBUG=INFO output and say which transport NCCL really
 * used, per host and overall, with the warnings that matter. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "llmlaunch/cli.h"
#include "llmlaunch/clock.h"
#include "llmlaunch/file.h"
#include "llmlaunch/launch.h"
#include "llmlaunch/nccl-scan.h"
#include "llmlaunch/nccl-watch.h"
#include "llmlaunch/output.h"

/* Warnings shown per class in text mode; JSON lists every stored one. */
#define TEXT_WARNINGS_PER_CLASS 10

struct logs_options {
	bool json;
	enum ll_net_expect expect;
	const char *follow;          /* directory, --follow */
	enum ll_fallback_policy on_fallback;
	double timeout_s;            /* --follow: stop after this long; 0 never */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: llmlaunch logs [--json] [--expect-net NET] PATH...\n"
		"       llmlaunch logs --follow DIR [--expect-net NET] [--on-fallback warn|stop] [--timeout S]\n"
		"\n"
		"Reads NCCL_DEBUG=INFO output (NCCL_DEBUG_FILE files, torchrun log directories,\n"
		"whole job logs; directories are read recursively) and says, per host and overall,\n"
		"which transport NCCL really used, whether GPUDirect RDMA was on, whether that was\n"
		"a fallback to sockets, and the warnings that matter with their file and line.\n"
		"\n"
		"  --json               print one JSON object (transport, gdr, fallback, warnings, hosts)\n"
		"  --expect-net NET     ib, roce, socket or any (default): with ib or roce, sockets\n"
		"                       count as a fallback even when the log gives no other sign\n"
		"  --follow DIR         watch DIR while a job writes into it and report each node\n"
		"                       once NCCL has initialised, and each warning as it appears\n"
		"  --on-fallback P      with --follow: warn (default) or stop (exit 1 at the first fallback)\n"
		"  --timeout S          with --follow: stop watching after S seconds\n"
		"  -h, --help           show this help\n"
		"\n"
		"A host where a communicator's init failed reads \"NCCL init failed on HOST: CAUSE\".\n"
		"\n"
		"Exit status: 0 nothing wrong, 1 a fallback, a failed init or an error warning (IB\n"
		"completion or verbs call, socket, no interface) was found, 2 usage error or a PATH\n"
		"that cannot be read (the others are still reported). Inside directories, links to\n"
		"directories are not followed and what cannot be read is skipped with a warning.\n"
		"\n"
		"Example:\n"
		"  llmlaunch logs --expect-net ib /scratch/job-1234/logs\n"
		"  NCCL on gpu07: InfiniBand over mlx5_0..mlx5_7, GPUDirect RDMA on\n");
}

static int parse_args(int argc, char **argv, struct logs_options *o)
/* (the common options of the fact-reading commands do not apply: logs are read as they are) */
{
	enum { OPT_JSON = 0x100, OPT_EXPECT, OPT_FOLLOW, OPT_ON_FALLBACK, OPT_TIMEOUT };
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "expect-net", required_argument, NULL, OPT_EXPECT },
		{ "follow", required_argument, NULL, OPT_FOLLOW },
		{ "on-fallback", required_argument, NULL, OPT_ON_FALLBACK },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_EXPECT:
			if (ll_net_expect_parse(optarg, &o->expect) < 0) {
				ll_errorf("invalid --expect-net '%s': use ib, roce, socket or any", optarg);
				return -EINVAL;
			}
			break;
		case OPT_FOLLOW:
			o->follow = optarg;
			break;
		case OPT_ON_FALLBACK:
			if (ll_fallback_policy_parse(optarg, &o->on_fallback) < 0) {
				ll_errorf("invalid --on-fallback '%s': use warn or stop", optarg);
				return -EINVAL;
			}
			break;
		case OPT_TIMEOUT: {
			struct ll_error err = { 0 };

			if (ll_parse_seconds("logs: --timeout", optarg, 0, 31536000, &o->timeout_s, &err) < 0) {
				ll_report(&err);
				ll_error_clear(&err);
				return -EINVAL;
			}
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			return ll_cmd_option_fallback("logs", c, optarg, argv, NULL, longopts);
		}
	}
	if (o->follow && optind < argc) {
		ll_errorf("--follow watches one directory: drop the PATH arguments");
		return -EINVAL;
	}
	if (!o->follow && optind >= argc) {
		ll_errorf("no log given: name NCCL log files or directories, e.g. 'llmlaunch logs job.log'");
		return -EINVAL;
	}
	if (!o->follow && (o->on_fallback != LL_FALLBACK_WARN || o->timeout_s > 0)) {
		ll_errorf("--on-fallback and --timeout apply to --follow only");
		return -EINVAL;
	}
	return 1;
}

static void out_gdr(struct ll_out *o, int gdr)
{
	ll_out_bool(o, "gdr", NULL, gdr);
}

/* A proof line as JSON {file, line, text} (null when none); text mode shows it as
 * "  LABEL FILE:LINE: TEXT" under the host. */
static void out_proof(struct ll_out *o, const char *key, const char *label, const struct ll_nccl_proof *p,
		      bool text)
{
	if (!p || !p->line) {
		ll_out_string(o, key, NULL, NULL);
		return;
	}
	if (text) {
		struct ll_buf b;
		ll_buf_init(&b);
		ll_nccl_proof_describe(p, &b);
		ll_out_text(o, "  %s %s\n", label, b.s);
		ll_buf_release(&b);
	}
	ll_out_open_object(o, key);
	ll_out_string(o, "file", NULL, p->file);
	ll_out_int(o, "line", NULL, (long long)p->line, true);
	ll_out_string(o, "text", NULL, p->text);
	ll_out_close_object(o);
}

static void out_paths(struct ll_out *o, unsigned paths)
{
	ll_out_open_array(o, "paths");
	for (int p = 0; p < LL_NCCL_PATH_COUNT; p++)
		if (paths & (1u << p))
			ll_out_string(o, NULL, NULL, ll_nccl_path_name((enum ll_nccl_path)p));
	ll_out_close_array(o);
}

static void print_comm(struct ll_out *o, const struct ll_nccl_comm *c)
{
	ll_out_open_object(o, NULL);
	ll_out_string(o, "comm_id", NULL, c->id);
	ll_out_string(o, "comm", NULL, c->ptr);
	ll_out_int(o, "rank", NULL, c->rank, c->rank >= 0);
	ll_out_int(o, "nranks", NULL, c->nranks, c->nranks >= 0);
	ll_out_int(o, "nnodes", NULL, c->nnodes, c->nnodes >= 0);
	ll_out_string(o, "network", NULL, c->network);
	ll_out_string(o, "transport", NULL, ll_nccl_transport_name(c->transport));
	ll_out_string(o, "plugin", NULL, c->plugin);
	out_gdr(o, c->gdr);
	out_paths(o, c->paths);
	ll_out_int(o, "net_channels", NULL, (long long)c->net_channels, true);
	ll_out_int(o, "gdr_channels", NULL, (long long)c->gdr_channels, true);
	ll_out_int(o, "socket_channels", NULL, (long long)c->socket_channels, true);
	ll_out_int(o, "p2p_channels", NULL, (long long)c->p2p_channels, true);
	ll_out_int(o, "shm_channels", NULL, (long long)c->shm_channels, true);
	ll_out_int(o, "nvls_channels", NULL, (long long)c->nvls_channels, true);
	ll_out_int(o, "collnet_channels", NULL, (long long)c->collnet_channels, true);
	ll_out_bool(o, "init_complete", NULL, c->init_complete);
	ll_out_close_object(o);
}

static void print_rank(struct ll_out *o, const struct ll_nccl_rank *r)
{
	ll_out_open_object(o, NULL);
	ll_out_int(o, "pid", NULL, r->pid, r->pid >= 0);
	ll_out_int(o, "cuda_dev", NULL, r->cuda_dev, r->cuda_dev >= 0);
	ll_out_int(o, "rank", NULL, r->rank, r->rank >= 0);
	ll_out_int(o, "nranks", NULL, r->nranks, r->nranks >= 0);
	ll_out_string(o, "file", NULL, r->file);
	ll_out_string(o, "version", NULL, r->version);
	ll_out_string(o, "network", NULL, r->network);
	ll_out_string(o, "bootstrap", NULL, r->bootstrap);
	if (r->ofi) {
		ll_out_open_object(o, "ofi");
		ll_out_string(o, "version", NULL, r->ofi_version);
		ll_out_string(o, "provider", NULL, r->ofi_provider);
		ll_out_int(o, "nics", NULL, r->ofi_nics, r->ofi_nics >= 0);
		ll_out_close_object(o);
	} else {
		ll_out_string(o, "ofi", NULL, NULL);
	}
	ll_out_string(o, "transport", NULL, ll_nccl_transport_name(r->transport));
	ll_out_string(o, "plugin", NULL, r->plugin);
	out_gdr(o, r->gdr);
	ll_out_bool(o, "fallback", NULL, r->fallback);
	ll_out_string(o, "fallback_reason", NULL, r->fallback_reason);
	out_proof(o, "fallback_cause", NULL, r->fallback_cause, false);
	out_proof(o, "fallback_via", NULL, r->fallback_via, false);
	ll_out_bool(o, "init_failed", NULL, r->init_failed);
	ll_out_string(o, "init_failure", NULL, r->init_failure);
	out_proof(o, "init_failure_cause", NULL, r->init_cause, false);
	out_proof(o, "init_failure_trace", NULL, r->init_trace, false);
	ll_out_open_array(o, "devices");
	for (size_t i = 0; i < r->n_devices; i++) {
		const struct ll_nccl_device *d = &r->devices[i];
		static const char *const kinds[] = { "IB", "RoCE", NULL };
		ll_out_open_object(o, NULL);
		ll_out_string(o, "name", NULL, d->name);
		ll_out_int(o, "port", NULL, d->port, d->port >= 0);
		ll_out_string(o, "kind", NULL, kinds[d->kind]);
		ll_out_bool(o, "sharp", NULL, d->sharp);
		ll_out_close_object(o);
	}
	ll_out_close_array(o);
	ll_out_bool(o, "relaxed_ordering", NULL, r->relaxed_ordering);
	ll_out_open_array(o, "socket_interfaces");
	for (size_t i = 0; i < r->n_socket_ifs; i++)
		ll_out_string(o, NULL, NULL, r->socket_ifs[i]);
	ll_out_close_array(o);
	ll_out_int(o, "net_channels", NULL, (long long)r->net_channels, true);
	ll_out_int(o, "gdr_channels", NULL, (long long)r->gdr_channels, true);
	ll_out_int(o, "socket_channels", NULL, (long long)r->socket_channels, true);
	ll_out_int(o, "warnings", NULL, (long long)r->n_warnings, true);
	ll_out_open_array(o, "communicators");
	for (size_t i = 0; i < r->n_comms; i++)
		print_comm(o, &r->comms[i]);
	ll_out_close_array(o);
	ll_out_close_object(o);
}

/* Is name k of rank i the first appearance of that name on the host? */
static bool first_use(const struct ll_nccl_host *h, size_t i, size_t k, bool ifs)
{
	const char *name = ifs ? h->ranks[i]->socket_ifs[k] : h->ranks[i]->devices[k].name;

	for (size_t a = 0; a <= i; a++) {
		size_t n = ifs ? h->ranks[a]->n_socket_ifs : h->ranks[a]->n_devices;
		for (size_t b = 0; b < (a == i ? k : n); b++)
			if (strcmp(name, ifs ? h->ranks[a]->socket_ifs[b] : h->ranks[a]->devices[b].name) == 0)
				return false;
	}
	return true;
}

static void print_host(struct ll_out *o, const struct ll_nccl_host *h)
{
	struct ll_buf b;

	ll_buf_init(&b);
	ll_nccl_host_summary(h, &b);
	ll_out_open_object(o, NULL);
	ll_out_string(o, "host", NULL, h->name);
	ll_out_string(o, "summary", "%s", b.s);
	ll_out_text(o, " (%zu process%s)\n", h->n_ranks, h->n_ranks == 1 ? "" : "es");
	ll_out_string(o, "transport", NULL, ll_nccl_transport_name(h->transport));
	ll_out_string(o, "plugin", NULL, h->plugin);
	out_gdr(o, h->gdr);
	ll_out_bool(o, "fallback", NULL, h->fallback);
	ll_out_string(o, "fallback_reason", NULL, h->fallback_reason);
	out_proof(o, "fallback_cause", "shown by", h->fallback_cause, true);
	out_proof(o, "fallback_via", "sockets:", h->fallback_via, true);
	ll_out_bool(o, "init_failed", NULL, h->init_failed);
	ll_out_string(o, "init_failure", NULL, h->init_failure);
	out_proof(o, "init_failure_cause", "shown by", h->init_cause, true);
	out_proof(o, "init_failure_trace", "aborted:", h->init_trace, true);
	ll_out_bool(o, "unknown", NULL, h->unknown);
	/* Names in first-seen order, each once: the RDMA ports and the socket interfaces. */
	ll_out_open_array(o, "devices");
	for (size_t i = 0; i < h->n_ranks; i++)
		for (size_t k = 0; k < h->ranks[i]->n_devices; k++)
			if (first_use(h, i, k, false))
				ll_out_string(o, NULL, NULL, h->ranks[i]->devices[k].name);
	ll_out_close_array(o);
	ll_out_open_array(o, "socket_interfaces");
	for (size_t i = 0; i < h->n_ranks; i++)
		for (size_t k = 0; k < h->ranks[i]->n_socket_ifs; k++)
			if (first_use(h, i, k, true))
				ll_out_string(o, NULL, NULL, h->ranks[i]->socket_ifs[k]);
	ll_out_close_array(o);
	ll_out_open_array(o, "ranks");
	for (size_t i = 0; i < h->n_ranks; i++)
		print_rank(o, h->ranks[i]);
	ll_out_close_array(o);
	ll_out_close_object(o);
	ll_buf_release(&b);
}

static void print_warnings(struct ll_out *o, const struct ll_nccl_verdict *v)
{
	unsigned long shown[LL_NCCL_WARN_CLASS_COUNT] = { 0 };

	if (v->warnings_total)
		ll_out_text(o, "warnings (%lu):\n", v->warnings_total);
	ll_out_open_array(o, "warnings");
	for (size_t i = 0; i < v->n_warnings; i++) {
		const struct ll_nccl_warning *w = &v->warnings[i];
		bool text = shown[w->cls]++ < TEXT_WARNINGS_PER_CLASS;

		ll_out_open_object(o, NULL);
		ll_out_string(o, "file", text ? "  %s" : NULL, w->file);
		ll_out_int(o, "line", text ? ":%s" : NULL, (long long)w->line, true);
		ll_out_string(o, "class", text ? ": [%s]" : NULL, ll_nccl_warn_class_name(w->cls));
		ll_out_string(o, "host", text ? " %s:" : NULL, w->host ? w->host : NULL);
		ll_out_int(o, "pid", NULL, w->pid, w->pid >= 0);
		ll_out_string(o, "text", text ? " %s\n" : NULL, w->text);
		ll_out_close_object(o);
	}
	ll_out_close_array(o);
	for (int c = 0; c < LL_NCCL_WARN_CLASS_COUNT; c++) {
		unsigned long in_text = shown[c] < TEXT_WARNINGS_PER_CLASS ? shown[c] : TEXT_WARNINGS_PER_CLASS;
		if (v->warnings_by_class[c] > in_text)
			ll_out_text(o, "  ... and %lu more %s warnings\n", v->warnings_by_class[c] - in_text,
				    ll_nccl_warn_class_name((enum ll_nccl_warn_class)c));
	}
	ll_out_int(o, "warnings_total", NULL, (long long)v->warnings_total, true);
	ll_out_open_object(o, "warnings_by_class");
	for (int c = 0; c < LL_NCCL_WARN_CLASS_COUNT; c++)
		ll_out_int(o, ll_nccl_warn_class_name((enum ll_nccl_warn_class)c), NULL,
			   (long long)v->warnings_by_class[c], true);
	ll_out_close_object(o);
}

/* A job directory llmlaunch kept (docs/failures.md): its verdict and how each rank
 * ended, from the workers' exit records. */
struct job_record {
	char *dir;
	char *verdict;              /* the verdict line llmlaunch printed; NULL: none */
	struct ll_worker_exit *exits;
	size_t n_exits;
};

static void job_record_release(struct job_record *j)
{
	free(j->dir);
	free(j->verdict);
	ll_worker_exits_free(j->exits, j->n_exits);
	*j = (struct job_record){ 0 };
}

/* 1 when `path` is a job directory with records, 0 when it is anything else. */
static int job_record_read(const char *path, struct job_record *ret)
{
	_cleanup_free_ char *status = ll_asprintf("%s/status", path), *vpath = ll_asprintf("%s/verdict", path);
	struct job_record j = { 0 };

	if (ll_worker_exits_read(status, &j.exits, &j.n_exits) < 0 || !j.n_exits)
		return 0;
	if (ll_read_file(vpath, 4096, &j.verdict) == 0)
		ll_strstrip_end(j.verdict);
	j.dir = ll_strdup(path);
	*ret = j;
	return 1;
}

static void print_job(struct ll_out *o, const struct job_record *j)
{
	ll_out_open_object(o, "job");
	ll_out_string(o, "dir", "job in %s", j->dir);
	ll_out_string(o, "verdict", j->verdict ? ": %s" : NULL, j->verdict);
	ll_out_text(o, "\n");
	ll_out_open_array(o, "ranks");
	for (size_t i = 0; i < j->n_exits; i++) {
		const struct ll_worker_exit *x = &j->exits[i];
		time_t t = (time_t)(x->time_ns / 1000000000LL);
		struct tm tm;
		char when[16] = "?";

		if (localtime_r(&t, &tm))
			strftime(when, sizeof(when), "%H:%M:%S", &tm);
		ll_out_open_object(o, NULL);
		ll_out_int(o, "rank", x->rank >= 0 ? "  rank %s" : NULL, x->rank, x->rank >= 0);
		ll_out_int(o, "local_rank", x->rank >= 0 ? NULL : "  local rank %s", x->local_rank, true);
		ll_out_int(o, "attempt", NULL, x->attempt, true);
		ll_out_string(o, "host", x->host ? " on %s" : NULL, x->host);
		ll_out_int(o, "exit", x->signaled ? NULL : ": exit %s", x->code, !x->signaled);
		ll_out_string(o, "signal", x->signaled ? ": signal %s" : NULL, x->signaled ? sigabbrev_np(x->code) : NULL);
		ll_out_string(o, "shutdown_signal", x->shutdown_signal ? ", then signal %s while shutting down" : NULL,
			      x->shutdown_signal ? sigabbrev_np(x->shutdown_signal) : NULL);
		ll_out_string(o, "time", " at %s", when);
		ll_out_string(o, "cause", x->cause ? ": %s" : NULL, x->cause);
		ll_out_text(o, "\n");
		ll_out_close_object(o);
	}
	ll_out_close_array(o);
	ll_out_close_object(o);
}

static int print_verdict(const struct ll_nccl_verdict *v, const struct job_record *jobs, size_t n_jobs, bool json)
{
	struct ll_out *o = ll_out_new(stdout, json);
	const char *gdr = v->gdr == 1 ? "on" : v->gdr == 0 ? "off" : "unknown";

	ll_out_open_object(o, NULL);
	if (n_jobs) {
		ll_out_open_array(o, "jobs");
		for (size_t i = 0; i < n_jobs; i++)
			print_job(o, &jobs[i]);
		ll_out_close_array(o);
	}
	ll_out_string(o, "transport", NULL, ll_nccl_transport_name(v->transport));
	ll_out_string(o, "plugin", NULL, v->plugin);
	out_gdr(o, v->gdr);
	ll_out_bool(o, "fallback", NULL, v->fallback);
	ll_out_string(o, "fallback_reason", NULL, v->fallback_reason);
	ll_out_bool(o, "error", NULL, v->error);
	ll_out_string(o, "expected", NULL, ll_net_expect_name(v->expect));
	ll_out_string(o, "nccl_version", NULL, v->version);
	ll_out_int(o, "files", NULL, (long long)v->files, true);
	ll_out_int(o, "lines", NULL, (long long)v->lines, true);
	/* Text mode says these on stderr, as warnings. */
	ll_out_open_array(o, "skipped");
	for (size_t i = 0; i < v->n_skipped; i++)
		ll_out_string(o, NULL, NULL, v->skipped[i]);
	ll_out_close_array(o);
	ll_out_int(o, "skipped_total", NULL, (long long)v->skipped_total, true);

	ll_out_int(o, "hosts_unknown", NULL, (long long)v->hosts_unknown, true);
	ll_out_int(o, "hosts_init_failed", NULL, (long long)v->hosts_init_failed, true);
	ll_out_open_array(o, "hosts");
	for (size_t i = 0; i < v->n_hosts; i++)
		print_host(o, &v->hosts[i]);
	ll_out_close_array(o);
	if (v->n_hosts == 0)
		ll_out_text(o, "no NCCL lines found\n");
	ll_out_open_array(o, "communicators");
	for (size_t i = 0; i < v->n_comms; i++) {
		const struct ll_nccl_job_comm *c = &v->comms[i];
		struct ll_buf b;

		ll_buf_init(&b);
		ll_nccl_comm_summary(c, &b);
		ll_out_open_object(o, NULL);
		ll_out_string(o, "summary", "%s\n", b.s);
		ll_out_string(o, "comm_id", NULL, c->id);
		ll_out_string(o, "comm", NULL, c->ptr);
		ll_out_int(o, "nranks", NULL, c->nranks, c->nranks >= 0);
		ll_out_int(o, "members", NULL, (long long)c->n_members, true);
		ll_out_int(o, "hosts", NULL, (long long)c->n_hosts, true);
		ll_out_string(o, "transport", NULL, ll_nccl_transport_name(c->transport));
		ll_out_string(o, "plugin", NULL, c->plugin);
		out_gdr(o, c->gdr);
		out_paths(o, c->paths);
		ll_out_close_object(o);
		ll_buf_release(&b);
	}
	ll_out_close_array(o);

	ll_out_text(o, "overall: ");
	/* A failed init is the verdict of its hosts, not a transport; where every host's
	 * init failed, no transport is named at all. */
	if (v->hosts_init_failed)
		ll_out_text(o, "NCCL init failed on %zu host%s", v->hosts_init_failed, v->hosts_init_failed == 1 ? "" : "s");
	if (v->hosts_init_failed < v->n_hosts || v->n_hosts == 0) {
		if (v->hosts_init_failed)
			ll_out_text(o, "; ");
		ll_out_text(o, "%s", ll_nccl_transport_describe(v->transport, v->plugin));
		if (v->plugin && v->transport != LL_NCCL_TRANSPORT_PLUGIN)
			ll_out_text(o, " (plugin %s)", v->plugin);
		ll_out_text(o, ", GPUDirect RDMA %s, %s", gdr, v->fallback ? "FALLBACK: " : "no fallback");
		if (v->fallback)
			ll_out_text(o, "%s", v->fallback_reason);
	}
	if (v->version)
		ll_out_text(o, "; NCCL %s", v->version);
	ll_out_text(o, "; %zu host%s", v->n_hosts, v->n_hosts == 1 ? "" : "s");
	if (v->hosts_unknown)
		ll_out_text(o, " (%zu unknown)", v->hosts_unknown);
	ll_out_text(o, ", %lu line%s in %lu file%s\n", v->lines, v->lines == 1 ? "" : "s", v->files,
		    v->files == 1 ? "" : "s");

	print_warnings(o, v);
	ll_out_close_object(o);
	return ll_out_finish(o);
}

static volatile sig_atomic_t follow_interrupted;

static void on_signal(int sig)
{
	(void)sig;
	follow_interrupted = 1;
}

static int follow(const struct logs_options *o)
{
	_cleanup_(ll_ncclwatch_freep) struct ll_ncclwatch *w = NULL;
	struct ll_error err = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	double deadline = o->timeout_s > 0 ? ll_now_s() + o->timeout_s : 0;
	int r;

	r = ll_ncclwatch_new(o->follow, NULL, o->expect, o->on_fallback, &w, &err);
	if (r < 0) {
		ll_report(&err);
		ll_error_clear(&err);
		return LL_EXIT_USAGE;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while (!follow_interrupted && (!deadline || ll_now_s() < deadline)) {
		struct pollfd pfd = { .fd = ll_ncclwatch_fd(w), .events = POLLIN };

		if (ll_ncclwatch_poll(w, stdout) == 1) {
			ll_errorf("stopping: %s", ll_ncclwatch_stop_reason(w));
			return LL_EXIT_FAILURE;
		}
		(void)poll(&pfd, pfd.fd >= 0 ? 1 : 0, LL_NCCLWATCH_INTERVAL_MS);
	}
	ll_ncclwatch_finish(w, stdout);
	return ll_ncclwatch_verdict(w)->error ? LL_EXIT_FAILURE : LL_EXIT_OK;
}

int cmd_logs(int argc, char **argv, struct ll_ctx *ctx)
{
	struct logs_options o = { .expect = LL_NET_EXPECT_ANY };
	_cleanup_(ll_ncclscan_freep) struct ll_ncclscan *s = NULL;
	const struct ll_nccl_verdict *v;
	struct job_record *jobs = NULL;
	size_t n_jobs = 0;
	bool job_failed = false;
	int r, failed = 0, status;

	(void)ctx;
	r = parse_args(argc, argv, &o);
	if (r <= 0)
		return r == 0 ? LL_EXIT_OK : LL_EXIT_USAGE;
	if (o.follow)
		return follow(&o);

	s = ll_ncclscan_new(o.expect);
	for (int i = optind; i < argc; i++) {
		struct ll_error err = { 0 };
		struct job_record j;

		if (job_record_read(argv[i], &j) == 1) {
			*(struct job_record *)ll_array_push(&jobs, &n_jobs, sizeof(j)) = j;
			job_failed = job_failed || j.verdict;
		}

		/* One input that cannot be read does not hide the others. */
		if (ll_ncclscan_path(s, argv[i], &err) < 0) {
			ll_report(&err);
			ll_error_clear(&err);
			failed++;
		}
	}
	if (failed == argc - optind) {
		status = LL_EXIT_USAGE;
		goto out;
	}
	v = ll_ncclscan_result(s);
	for (size_t i = 0; i < v->n_skipped; i++)
		ll_warnf("skipped %s", v->skipped[i]);
	if (v->skipped_total > v->n_skipped)
		ll_warnf("skipped %lu more entries", v->skipped_total - (unsigned long)v->n_skipped);
	if (print_verdict(v, jobs, n_jobs, o.json) < 0)
		status = LL_EXIT_FAILURE; /* reported once, by main() */
	else if (failed)
		status = LL_EXIT_USAGE;
	else
		status = v->error || job_failed ? LL_EXIT_FAILURE : LL_EXIT_OK;
out:
	for (size_t i = 0; i < n_jobs; i++)
		job_record_release(&jobs[i]);
	free(jobs);
	return status;
}
