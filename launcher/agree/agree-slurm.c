/* The Slurm backend without PMIx (srun --mpi=none, a batch script): the world comes
 * from the job's environment and the network; under `run` node 0's check-in carries
 * the agreement (agree_env_prove: records, the summaries it reads, its decision), so
 * the homogeneity check, node order and interface choice are the PMIx path's. What the
 * environment gives:
 *
 *   master    the first host of the node list, as this node resolves it (DNS is the one
 *             thing the nodes share); its numeric address, so nothing resolves it again
 *   interface on every other node, the one its route to that address leaves by; on node 0,
 *             the one holding the address, or (run) the one the others came in on
 *   port      derived from the job and step id, so every node computes the same
 *
 * Under `run` node 0 listens on the master port: every node checks in there (the others
 * retry until it listens), then proves it reaches the agreed master through its agreed
 * interface; node 0 names those that do not. */
#include "agree-internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llmlaunch/addr.h"
#include "llmlaunch/clock.h"
#include "llmlaunch/hostlist.h"
#include "llmlaunch/port.h"
#include "llmlaunch/slurm.h"

int agree_slurm_port(unsigned long job_id, unsigned long step_id)
{
	/* Jobs sharing a node have different ids; steps of one job different step ids. */
	return 20000 + (int)((job_id * 8 + step_id % 8) % 12768);
}

char *agree_resolve(const char *host, bool *ret_loopback, int *ret_gai)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	char text[INET6_ADDRSTRLEN];
	const struct addrinfo *best = NULL;
	int gai;

	*ret_loopback = false;
	gai = getaddrinfo(host, NULL, &hints, &ai);
	if (ret_gai)
		*ret_gai = gai;
	if (gai != 0)
		return NULL;
	for (int pass = 0; pass < 2 && !best; pass++)
		for (const struct addrinfo *a = ai; a && !best; a = a->ai_next)
			if ((a->ai_family == AF_INET) == (pass == 0) && !ll_addr_is_loopback(a->ai_addr))
				best = a;
	if (!best) {
		best = ai;
		*ret_loopback = true;
	}
	if (getnameinfo(best->ai_addr, best->ai_addrlen, text, sizeof(text), NULL, 0, NI_NUMERICHOST) != 0)
		text[0] = '\0';
	freeaddrinfo(ai);
	return text[0] ? ll_strdup(text) : NULL;
}

#define RESOLVE_FIRST_PAUSE_S 0.1
#define RESOLVE_MAX_PAUSE_S 2.0

static void pause_s(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };

	nanosleep(&ts, NULL);
}

char *agree_resolve_until(const char *host, double until, bool *ret_loopback, char **ret_why)
{
	double pause = RESOLVE_FIRST_PAUSE_S;
	int gai = 0;

	for (;;) {
		char *numeric = agree_resolve(host, ret_loopback, &gai);

		if (numeric)
			return numeric;
		if (ll_now_s() + pause > until)
			break;
		pause_s(pause);
		pause = pause * 2 > RESOLVE_MAX_PAUSE_S ? RESOLVE_MAX_PAUSE_S : pause * 2;
	}
	*ret_why = ll_strdup(gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
	return NULL;
}

char *agree_local_ifname(const char *addr)
{
	char *ifname = NULL, *source = NULL;

	/* The route to an address of this node leaves by loopback, its source is the
	 * address itself: then it is local, and ll_route_to names the interface holding it. */
	if (ll_route_to(addr, &ifname, &source, NULL) < 0)
		return NULL;
	if (strcmp(source, addr) != 0)
		free(LL_TAKE(ifname));
	free(source);
	return ifname;
}

/* Node 0 cannot listen on the master port, which every node computed alike. */
static int port_in_use(struct ll_error *err, int port, const char *port_why, const char *hint)
{
	ll_error_set(err, -EADDRINUSE, "master port %d (%s) is in use on this node", port, port_why);
	ll_error_hint(err, "%s", hint);
	return -EADDRINUSE;
}

/* A node waits this much longer than node 0's deadline for its decision. */
#define VERDICT_WAIT_S 5.0

#define SLURM_PORT_HINT                                                                                             \
	"pass --master-port PORT (the same on every node), or use srun --mpi=pmix, where node 0 picks a free port"

static char *slurm_port_why(bool asked, const struct ll_slurm_job *job, long step)
{
	return asked ? ll_strdup("asked for on the command line or by a profile")
		     : ll_asprintf("derived from job %ld step %ld", job->job_id, step);
}

/* Node 0's decision from what the check-in gathered (ll_rdzv_gather). */
struct gathered {
	const struct ll_rdzv *server;
};

static int gathered_fetch(void *data, size_t i, const struct ll_summary **ret, struct ll_error *err)
{
	const struct gathered *g = data;
	const struct ll_summary *s = ll_rdzv_summary(g->server, i);

	if (!s)
		return ll_error_set(err, -EPROTO, "node '%s' sent no summary", ll_rdzv_nodes(g->server)[i].name);
	*ret = s;
	return 0;
}

static bool gathered_have(void *data, size_t i)
{
	const struct gathered *g = data;

	return ll_rdzv_summary(g->server, i) != NULL;
}

/* The decision into ret; this node's interface from its own summary, or its route to
 * the master when no subnet is every node's. */
static void take_decision(const struct agree_env_world *w, const struct ll_rdzv_decision *d, struct ll_cluster *ret)
{
	const char *mine = d->subnet ? ll_agree_ifname_in(w->me->summary, d->subnet, d->loopback_only) : NULL;

	ret->checked = true;
	ret->node_rank = d->node_rank;
	free(ret->master_addr);
	ret->master_addr = ll_strdup(d->master_addr);
	ret->master_port = d->master_port;
	free(ret->subnet);
	ret->subnet = ll_strdup(d->subnet);
	ret->routed = d->routed;
	free(ret->socket_ifname);
	ret->socket_ifname = ll_strdup(mine);
	if (!mine) {
		_cleanup_free_ char *source = NULL;
		struct ll_error e = { 0 };

		if (ll_route_to(d->master_addr, &ret->socket_ifname, &source, &e) < 0)
			ll_cluster_note(ret, "%s", e.message);
		ll_error_clear(&e);
	}
	for (size_t i = 0; i < d->n_notes; i++)
		ll_cluster_note(ret, "%s", d->notes[i]);
	ret->nvlink_domain = d->nvlink_domain;
	free(ret->nvlink_domain_reason);
	ret->nvlink_domain_reason = ll_strdup(d->nvlink_domain_reason);
	free(ret->node_order);
	ret->node_order = ll_strdup(d->node_order);
}

/* Node 0: every record and the summaries the decision reads, the decision, and each
 * node's share of it (or the failure, to all). */
static int decide_on_node0(const struct ll_agree_options *o, const struct agree_env_world *w, struct ll_rdzv *server,
			   const char *master, double until, struct ll_cluster *ret, struct ll_error *err)
{
	double start = ll_now_s();
	struct gathered g = { .server = server };
	struct ll_agree_result res = { 0 };
	struct ll_agree_input in = {
		.n_nodes = w->nnodes, .self = w->rank, .strict = o->strict, .routed = true,
		.leave_out = w->me->leave_out, .fetch = gathered_fetch, .have = gathered_have, .fetch_data = &g,
	};
	struct ll_rdzv_decision d = { 0 };
	struct ll_agree_node self = *w->me->rec;
	int r;

	self.port = ret->master_port; /* the master's port is node 0's record's, as under PMIx */
	r = ll_rdzv_gather(server, &self, w->me->summary, until, err);
	if (r == -ETIMEDOUT) {
		_cleanup_free_ char *names = NULL;
		size_t n = 0;

		/* A node that never checked in did not reach the master: said as the proof says it. */
		if (ll_rdzv_missing(server, &n, &names, NULL) && n > 0)
			ll_error_set(err, r, "%zu of %zu nodes did not reach the master %s:%d within %.0f s: %s", n, w->nnodes,
				     master, ret->master_port, until - start, names);
	}
	if (r < 0) {
		ll_rdzv_send_decision(server, NULL, err->message, NULL);
		return r;
	}
	in.nodes = ll_rdzv_nodes(server);
	r = ll_agree_decide(&in, &res, err);
	if (r < 0) {
		ll_rdzv_send_decision(server, NULL, err->message, err->hint);
		return r;
	}
	ll_rdzv_send_decision(server, &res, NULL, NULL);
	{
		/* Node 0 takes its share as the others read theirs: the same code path. */
		_cleanup_free_ char *lines = ll_rdzv_decision_lines(&res, res.node_rank, NULL);
		char *save = NULL;

		for (char *l = strtok_r(lines, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
			ll_rdzv_decision_line(&d, l);
	}
	if (res.clique_order)
		d.node_order = ll_agree_order_text(in.nodes, res.order, res.n_nodes);
	take_decision(w, &d, ret);
	ret->n_fetched = res.n_fetched;
	ll_rdzv_decision_release(&d);
	ll_agree_result_release(&res);
	return 0;
}

/* The other nodes: check in with the record, send the summary when asked, take the
 * decision. */
static int decide_from_node0(const struct agree_env_world *w, const struct ll_rdzv_job *rj, const char *master,
			     int port, double until, struct ll_cluster *ret, struct ll_error *err)
{
	_cleanup_(ll_rdzv_closep) struct ll_rdzv *r = NULL;
	const struct ll_rdzv_decision *d;
	_cleanup_free_ char *why = NULL;
	size_t n;
	int rc = ll_rdzv_checkin(rj, master, &port, 1, &r, err);

	if (rc < 0)
		return rc;
	/* Only a node rank 0 answered waits past the deadline, for its decision. */
	ll_rdzv_run(r, -1, until);
	if (ll_rdzv_checked_in(r) && !ll_rdzv_decision(r) && !ll_rdzv_verdict(r))
		ll_rdzv_run(r, -1, until + VERDICT_WAIT_S);
	if (!ll_rdzv_checked_in(r))
		return -ENOTCONN; /* the proof's own attempt says why, in its words */
	d = ll_rdzv_decision(r);
	if (d) {
		ll_rdzv_progress_done(r, true);
		take_decision(w, d, ret);
		return 0;
	}
	ll_rdzv_progress_done(r, false);
	if (ll_rdzv_verdict(r)) {
		rc = ll_error_set(err, -EPROTO, "%s", ll_rdzv_verdict(r));
		if (ll_rdzv_verdict_hint(r))
			ll_error_hint(err, "%s", ll_rdzv_verdict_hint(r));
		return rc;
	}
	if (ll_rdzv_missing(r, &n, NULL, &why))
		return ll_error_set(err, -ETIMEDOUT, "%s (node 0) gave no decision in time", w->names ? w->names[0] : "node 0");
	return ll_error_set(err, -ETIMEDOUT, "%s", why);
}

int agree_env_prove(const struct ll_agree_options *o, const struct agree_env_world *w, const char *master,
		    const char *ifname, double t0, struct ll_cluster *ret, struct ll_error *err)
{
	_cleanup_(ll_rdzv_closep) struct ll_rdzv *server = NULL;
	_cleanup_free_ char *record = NULL, *summary = NULL;
	struct ll_rdzv_outcome out = { 0 };
	struct ll_rdzv_proof p = {
		.master_addr = master, .master_port = ret->master_port, .ifname = ifname,
		.arrive_deadline = t0 + ret->deadlines.agree_s,
	};
	struct ll_rdzv_job rj = {
		.id = w->id, .nnodes = w->nnodes, .rank = w->rank, .names = w->names,
		.progress = o->progress, .progress_data = o->progress_data,
	};
	double t_prove;
	int r = 0;

	if (w->me && w->me->rec && w->me->summary) {
		/* Node 0's record carries the master port, as under PMIx. */
		struct ll_agree_node rec = *w->me->rec;
		rec.port = w->rank == 0 ? ret->master_port : 0;
		record = ll_agree_node_format(&rec);
		summary = ll_summary_serialize(w->me->summary);
		rj.record = record;
		rj.summary = summary;
	}
	if (w->rank == 0) {
		int port = ret->master_port;
		/* Only this port: every node derived it, none can learn of another. */
		r = ll_rdzv_listen(&rj, &port, 1, &server, err);
		if (r == 0 && ll_rdzv_port(server) != port)
			r = port_in_use(err, port, w->port_why, w->port_hint);
	}
	if (r == 0 && record) {
		r = w->rank == 0 ? decide_on_node0(o, w, server, master, p.arrive_deadline, ret, err)
				 : decide_from_node0(w, &rj, master, ret->master_port, p.arrive_deadline, ret, err);
		if (r == -ENOTCONN) {
			r = 0; /* no check-in: the proof below fails, naming this node and what it tried */
		} else if (r < 0) {
			return r;
		} else {
			p.master_addr = ret->master_addr;
			p.master_port = ret->master_port;
			p.ifname = w->user_ifname ? w->user_ifname : ret->socket_ifname;
		}
	}
	t_prove = ll_now_s();
	p.deadline = t_prove + ret->deadlines.reach_s;
	if (p.deadline > p.arrive_deadline)
		p.deadline = p.arrive_deadline;
	if (r == 0)
		r = ll_rdzv_prove(&rj, server, &p, &out, err);
	if (r == 0 && w->rank == 0 && out.arrival_addr && !record) {
		/* Where the others reached this node is its address for the job, whatever its
		 * own name resolves to here (Debian maps a host's own name to 127.0.1.1). */
		free(ret->master_addr);
		ret->master_addr = LL_TAKE(out.arrival_addr);
		free(ret->socket_ifname);
		ret->socket_ifname = LL_TAKE(out.arrival_ifname);
	}
	if (r == -EHOSTUNREACH)
		ll_error_hint(err, "%s", w->unreach_hint);
	if (r == 0) {
		ret->proved = true;
		ret->prove_seconds = ll_now_s() - t_prove;
	}
	ll_rdzv_outcome_release(&out);
	return r;
}

static int prove(const struct ll_agree_options *o, const struct agree_env_self *me, const struct ll_slurm_job *job,
		 long step, const char *master, const char *user_ifname, const char *ifname, double t0, bool asked,
		 struct ll_cluster *ret, struct ll_error *err)
{
	_cleanup_free_ char *id = ll_asprintf("slurm %ld.%ld", job->job_id, step);
	_cleanup_free_ char *port_why = slurm_port_why(asked, job, step);
	char **names = NULL;
	size_t n_names = 0;
	struct agree_env_world w = {
		.id = id, .nnodes = (size_t)job->nnodes, .rank = (size_t)job->node_id, .port_why = port_why,
		.port_hint = SLURM_PORT_HINT, .me = me, .user_ifname = user_ifname,
		.unreach_hint = "nothing was started: without PMIx only this node knows why it failed; its own log says "
				"which interface and address it tried (srun --mpi=pmix tells every node)",
	};
	int r;

	r = ll_hostlist_expand(job->nodelist, (size_t)job->nnodes, &names, &n_names, err);
	if (r < 0)
		return r;
	if (n_names < (size_t)job->nnodes) {
		ll_hostlist_free(names, n_names);
		return ll_error_set(err, -EINVAL, "%s has %zu hosts, fewer than the %ld nodes of the step",
				    job->nodelist, n_names, job->nnodes);
	}
	w.names = names;
	r = agree_env_prove(o, &w, master, ifname, t0, ret, err);
	ll_hostlist_free(names, n_names);
	return r;
}

int agree_slurm_run(const struct ll_agree_options *o, const struct agree_env_self *me, const char *proof_ifname,
		    int port_asked, struct ll_cluster *ret, struct ll_error *err)
{
	struct ll_slurm_job job;
	_cleanup_free_ char *first = NULL, *numeric = NULL, *why = NULL;
	double t0 = ll_now_s();
	bool loopback = false;
	long step;
	int r;

	r = ll_slurm_job_read(o->environ, &job, err);
	if (r < 0)
		return r;
	if (!job.nodelist || job.job_id < 0)
		return ll_error_set(err, -EINVAL, "SLURM_JOB_ID and SLURM_JOB_NODELIST are not both set: not inside a "
						  "Slurm job");
	if (job.in_step && job.step_tasks > job.nnodes) {
		r = ll_error_set(err, -EINVAL,
				 "%ld llmlaunch processes on %ld node%s: llmlaunch runs once per node and starts that "
				 "node's workers itself",
				 job.step_tasks, job.nnodes, job.nnodes == 1 ? "" : "s");
		ll_error_hint(err, "srun -N %ld --ntasks-per-node=1 ...", job.nnodes);
		return r;
	}

	r = ll_hostlist_first(job.nodelist, &first, err);
	if (r < 0)
		return r;

	step = job.step_id >= 0 ? job.step_id : 0;
	ret->backend = LL_AGREE_SLURM;
	ret->nnodes = (int)job.nnodes;
	ret->node_rank = (int)job.node_id;
	ret->master_port = port_asked > 0 ? port_asked : agree_slurm_port((unsigned long)job.job_id, (unsigned long)step);
	ret->checked = false;
	ll_agree_deadlines((size_t)job.nnodes, o->timeout_s, &ret->deadlines);
	if (job.nnodes > 1 && !o->prove)
		ll_cluster_note(ret, "no homogeneity check here without PMIx: 'llmlaunch run' has node 0 compare every "
				     "node's GPUs, RDMA ports and addresses at its check-in before launching");

	if (!job.in_step && job.nnodes > 1)
		ll_cluster_note(ret, "running in the batch script, on the first node only: start one llmlaunch per node "
				     "with 'srun --ntasks-per-node=1 llmlaunch ...'");

	/* A node that must connect to node 0 waits for its name to resolve (a name service
	 * that learns of nodes late), up to the agreement's deadline; node 0 and the
	 * commands that only show the plan try once. */
	numeric = agree_resolve_until(first, o->prove && job.in_step && job.nnodes > 1 && job.node_id != 0
						     ? t0 + ret->deadlines.agree_s : 0,
				      &loopback, &why);
	if (!numeric) {
		ll_cluster_note(ret, "the master host '%s' (first of %s) does not resolve here: %s", first, job.nodelist, why);
		ret->master_addr = LL_TAKE(first);
	} else if (loopback && job.nnodes > 1) {
		/* Only a node on this same host reaches a loopback address; node 0 is reached
		 * by another one (run: where the others came in). The proof tells. */
		ll_cluster_note(ret, "the master host '%s' resolves to %s on this node: only a node on this host reaches that",
				first, numeric);
		ret->master_addr = LL_TAKE(first);
	} else {
		ret->master_addr = ll_strdup(numeric);
		if (job.node_id == 0) {
			ret->socket_ifname = agree_local_ifname(numeric);
		} else {
			_cleanup_free_ char *source = NULL;
			struct ll_error e = { 0 };
			if (ll_route_to(numeric, &ret->socket_ifname, &source, &e) < 0)
				ll_cluster_note(ret, "%s", e.message);
			ll_error_clear(&e);
		}
	}

	if (o->prove && job.in_step && job.nnodes > 1) {
		if (!numeric)
			return ll_error_set(err, -ENETUNREACH, "cannot reach the master host '%s': it is not resolvable "
							       "yet after %.0f s: %s",
					    ret->master_addr, ll_now_s() - t0, why);
		return prove(o, me, &job, step, job.node_id == 0 ? ret->master_addr : numeric, proof_ifname,
			     proof_ifname ? proof_ifname : ret->socket_ifname, t0, port_asked > 0, ret, err);
	}
	/* Only node 0 listens on the port: only it can check that the port is free. */
	if (job.node_id == 0 && ll_port_in_use(ret->master_port)) {
		_cleanup_free_ char *port_why = slurm_port_why(port_asked > 0, &job, step);

		return port_in_use(err, ret->master_port, port_why, SLURM_PORT_HINT);
	}
	return 0;
}
