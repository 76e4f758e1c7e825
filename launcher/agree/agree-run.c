/* ll_agree(): pick the backend from the environment, build this node's summary,
 * agree, and write the cluster-wide values into the plan. */
#include "llmlaunch/file.h"
#include "agree-internal.h"
#include "llmlaunch/clock.h"
#include "llmlaunch/env.h"
#include "llmlaunch/port.h"
#include "llmlaunch/slurm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netpacket/packet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

void ll_cluster_note(struct ll_cluster *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	*(char **)ll_array_push(&c->notes, &c->n_notes, sizeof(char *)) = ll_vasprintf(fmt, ap);
	va_end(ap);
}

void ll_cluster_release(struct ll_cluster *c)
{
	if (!c)
		return;
	free(c->master_addr);
	free(c->socket_ifname);
	free(c->subnet);
	free(c->nvlink_domain_reason);
	free(c->node_order);
	for (size_t i = 0; i < c->n_notes; i++)
		free(c->notes[i]);
	free(c->notes);
	memset(c, 0, sizeof(*c));
}

enum ll_agree_backend ll_agree_detect(char *const *env)
{
	env = ll_env_or_process(env);
	/* PMIx_Init without a server fails only after a delay: look for its variables first. */
	for (char *const *e = env; *e; e++)
		if (ll_startswith(*e, "PMIX_NAMESPACE=") || ll_startswith(*e, "PMIX_SERVER_URI"))
			return LL_AGREE_PMIX;
	if (ll_slurm_in_job(env))
		return LL_AGREE_SLURM;
	return LL_AGREE_SINGLE;
}

/* ---- this node's summary ---- */

static enum ll_summary_if_kind summary_kind(const struct ll_netif *n)
{
	return (enum ll_summary_if_kind)ll_netif_role(n->kind, n->virtual_);
}

/* The kind of a live interface known only by name and getifaddrs(): the link
 * type of its AF_PACKET entry (IPoIB is ARPHRD_INFINIBAND whatever its name), else
 * the facts' one inference. */
static enum ll_summary_if_kind live_kind(const struct ifaddrs *all, const struct ifaddrs *i)
{
	enum ll_netif_kind kind;

	if (i->ifa_flags & IFF_LOOPBACK)
		return LL_SUMMARY_IF_LOOPBACK;
	for (const struct ifaddrs *p = all; p; p = p->ifa_next)
		if (p->ifa_addr && p->ifa_addr->sa_family == AF_PACKET && strcmp(p->ifa_name, i->ifa_name) == 0 &&
		    ((const struct sockaddr_ll *)p->ifa_addr)->sll_hatype == ARPHRD_INFINIBAND)
			return LL_SUMMARY_IF_IPOIB;
	kind = ll_netif_kind_infer(i->ifa_name, NULL, false);
	return (enum ll_summary_if_kind)ll_netif_role(kind, false);
}

static void add_if(struct ll_summary *s, const char *name, enum ll_summary_if_kind kind, int family,
		   const char *addr, unsigned prefixlen)
{
	struct ll_summary_if *f = ll_array_push(&s->ifs, &s->n_ifs, sizeof(*f));

	f->name = ll_strdup(name);
	f->kind = kind;
	f->family = family;
	f->addr = ll_strdup(addr);
	f->prefixlen = prefixlen;
}

static unsigned prefix_of(const struct sockaddr *mask)
{
	const unsigned char *b;
	unsigned n = 0, len;

	if (!mask)
		return 0;
	if (mask->sa_family == AF_INET6) {
		b = ((const struct sockaddr_in6 *)mask)->sin6_addr.s6_addr;
		len = 16;
	} else {
		b = (const unsigned char *)&((const struct sockaddr_in *)mask)->sin_addr;
		len = 4;
	}
	for (unsigned i = 0; i < len; i++)
		n += (unsigned)__builtin_popcount(b[i]);
	return n;
}

/* Snapshots and --fsroot carry no addresses, but the rendezvous happens on this
 * machine's real network anyway: read it live then. */
static void add_live_ifs(struct ll_summary *s)
{
	struct ifaddrs *ifa = NULL;

	if (getifaddrs(&ifa) < 0)
		return;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		char text[INET6_ADDRSTRLEN];
		enum ll_summary_if_kind kind;
		int fam;

		if (!i->ifa_addr || !(i->ifa_flags & IFF_UP))
			continue;
		fam = i->ifa_addr->sa_family;
		if (fam != AF_INET && fam != AF_INET6)
			continue;
		if (!inet_ntop(fam,
			       fam == AF_INET ? (const void *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr
					      : (const void *)&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
			       text, sizeof(text)))
			continue;
		kind = live_kind(ifa, i);
		add_if(s, i->ifa_name, kind, fam, text, prefix_of(i->ifa_netmask));
	}
	freeifaddrs(ifa);
}

int ll_summary_build(const struct ll_facts *f, const struct ll_plan *plan, struct ll_summary **ret,
		     struct ll_error *err)
{
	struct ll_summary *s = ll_calloc(1, sizeof(*s));
	const char *v;
	bool any_addrs = false;

	(void)err;
	s->host = ll_strdup(f->hostname);
	/* -1: the topology cannot tell (no PCI objects); never compared as "0 GPUs". */
	s->n_gpus = f->gpus_known ? (int)f->n_gpus : -1;
	s->gpu_model = f->n_gpus ? ll_strdup(f->gpus[0].model) : NULL;
	s->nproc_per_node = plan ? plan->nproc_per_node : 0;
	for (size_t d = 0; d < f->n_rdma; d++)
		for (size_t p = 0; p < f->rdma[d].n_ports; p++) {
			const struct ll_rdma_port *rp = &f->rdma[d].ports[p];
			struct ll_summary_port *sp = ll_array_push(&s->ports, &s->n_ports, sizeof(*sp));
			sp->device = ll_strdup(f->rdma[d].name);
			sp->port = rp->number;
			sp->state = rp->state;
			sp->link_layer = rp->link_layer;
			sp->rate_gbps = rp->rate_gbps;
			sp->rdma_class = f->rdma[d].rdma_class;
		}
	v = ll_plan_value(plan, "NCCL_IB_GID_INDEX");
	s->gid_index = v ? atoi(v) : -1;
	s->gdr_ready = f->gdr_ready;
	/* The transport NCCL will use: forced by NCCL_NET, else the planner's verdict. */
	if ((v = ll_plan_value(plan, "NCCL_NET")))
		s->net = ll_strdup(v);
	else if ((v = ll_plan_value(plan, "LLMLAUNCH_NET")))
		s->net = ll_strdup(v);
	else if ((v = ll_plan_value(plan, "NCCL_IB_DISABLE")) && strcmp(v, "1") == 0)
		s->net = ll_strdup("socket");
	s->ib_hca = ll_strdup(ll_plan_value(plan, "NCCL_IB_HCA"));

	for (size_t i = 0; i < f->n_netifs; i++) {
		const struct ll_netif *n = &f->netifs[i];
		if (!n->addrs_known)
			continue;
		any_addrs = true;
		if (n->up == LL_NO)
			continue;
		for (size_t a = 0; a < n->n_addrs; a++)
			add_if(s, n->name, summary_kind(n), n->addrs[a].family, n->addrs[a].addr, n->addrs[a].prefixlen);
	}
	if (!any_addrs)
		add_live_ifs(s);
	*ret = s;
	return 0;
}

/* Same value on two processes: same boot of the same machine, same network namespace,
 * so 127.0.0.1 of one reaches the other. */
static uint64_t host_key(void)
{
	char *boot = NULL, ns[64] = "";
	uint64_t h = 0xcbf29ce484222325ULL;
	ssize_t n;
	const char *parts[2];

	ll_read_line("/proc/sys/kernel/random/boot_id", &boot);
	n = readlink("/proc/self/ns/net", ns, sizeof(ns) - 1);
	ns[n > 0 ? n : 0] = '\0';
	parts[0] = boot ? boot : "";
	parts[1] = ns;
	for (size_t k = 0; k < 2; k++)
		for (const char *c = parts[k]; *c; c++) {
			h ^= (unsigned char)*c;
			h *= 0x100000001b3ULL;
		}
	free(boot);
	return h;
}

/* ---- writing the result into the plan ---- */

static void plan_put(struct ll_plan *plan, const char *name, const char *value, const char *reason, bool exported)
{
	const struct ll_setting *old = ll_plan_get(plan, name);

	/* What the user set in the environment or on the command line stays. */
	if (old && old->source > LL_SOURCE_CLUSTER)
		return;
	ll_plan_set(plan, name, value, LL_SOURCE_CLUSTER, NULL, reason, exported);
}

static void put_deadline(struct ll_plan *plan, const char *name, double seconds, const char *what, char *reason)
{
	char num[32], *full = ll_asprintf("%s: %s", what, reason);

	snprintf(num, sizeof(num), "%.0f", seconds);
	plan_put(plan, name, num, full, false);
	free(full);
	free(reason);
}

/* The waits of a multi-node start, each scaled with the job (ll_agree_deadlines), for
 * explain to show; torchrun's own rendezvous timeout is passed to it unless a profile
 * or the user set --rdzv_conf. */
static void apply_deadlines(struct ll_plan *plan, const struct ll_cluster *c)
{
	const struct ll_agree_deadlines *d = &c->deadlines;
	size_t n = (size_t)c->nnodes;

	put_deadline(plan, "agree_timeout", d->agree_s, "seconds every node has to arrive",
		     d->agree_given ? ll_strdup("--agree-timeout on the command line")
				    : ll_agree_deadline_reason(LL_AGREE_BASE_S, LL_AGREE_PER_NODE_S, n));
	put_deadline(plan, "reach_timeout", d->reach_s, "seconds every node has to reach the master",
		     d->agree_given && d->reach_s >= d->agree_s
			     ? ll_strdup("no longer than --agree-timeout")
			     : ll_agree_deadline_reason(LL_REACH_BASE_S, LL_REACH_PER_NODE_S, n));
	if (!ll_plan_get(plan, "torchrun.rdzv_conf")) {
		char *value = ll_asprintf("timeout=%.0f", d->rdzv_s);
		char *reason = ll_agree_deadline_reason(LL_RDZV_BASE_S, LL_RDZV_PER_NODE_S, n);
		char *full = ll_asprintf("torchrun's rendezvous timeout (seconds): %s", reason);
		plan_put(plan, "torchrun.rdzv_conf", value, full, false);
		free(full);
		free(reason);
		free(value);
	}
}

void ll_cluster_apply(struct ll_plan *plan, const struct ll_cluster *c, const struct ll_agree_options *o)
{
	static const struct ll_agree_options no_options = { 0 };
	bool single = c->backend == LL_AGREE_SINGLE;
	char num[32], *reason;

	if (!o)
		o = &no_options;
	snprintf(num, sizeof(num), "%d", c->nnodes);
	if (single && o->nnodes > 0) {
		ll_plan_set(plan, "nnodes", num, LL_SOURCE_CLI, NULL, "torchrun's --nnodes on the command line", false);
	} else {
		reason = single ? ll_strdup("one node: no launcher runs this job on others")
				: ll_asprintf("nodes in the job (%s)", ll_agree_backend_name(c->backend));
		plan_put(plan, "nnodes", num, reason, false);
		free(reason);
	}
	snprintf(num, sizeof(num), "%d", c->node_rank);
	if (single && o->node_rank > 0)
		ll_plan_set(plan, "node_rank", num, LL_SOURCE_CLI, NULL, "torchrun's --node_rank on the command line",
			    false);
	else
		plan_put(plan, "node_rank", num,
			 c->backend == LL_AGREE_PMIX	? "this node's place in the launcher's order (pmix)"
			 : c->backend == LL_AGREE_SLURM ? "SLURM_NODEID (slurm)"
							: "the first node",
			 false);
	if (c->master_addr) {
		if (single && o->master_addr) {
			ll_plan_set(plan, "master_addr", c->master_addr, LL_SOURCE_CLI, NULL,
				    "torchrun's --master_addr on the command line", false);
		} else {
			reason = c->backend == LL_AGREE_PMIX
					 ? ll_asprintf("node 0's address in %s, the subnet every node shares", c->subnet)
				 : c->backend == LL_AGREE_SLURM
					 ? ll_asprintf("first host of the Slurm node list%s",
						       c->proved ? ", where every node reached it" : "")
					 : ll_strdup("this node: the only one");
			plan_put(plan, "master_addr", c->master_addr, reason, false);
			free(reason);
		}
	}
	if (c->master_port > 0) {
		snprintf(num, sizeof(num), "%d", c->master_port);
		if (single && o->master_port > 0)
			ll_plan_set(plan, "master_port", num, LL_SOURCE_CLI, NULL,
				    "torchrun's --master_port on the command line", false);
		else
			plan_put(plan, "master_port", num,
				 c->backend == LL_AGREE_SLURM ? "derived from the job and step id"
				 : single ? "free on every address of this node when checked"
					  : "the first of the job's candidate ports free on node 0, held by it while the "
					    "nodes agreed",
				 false);
	}
	if (!single) {
		/* For hand-written launches from 'llmlaunch env': torchrun --nnodes
		 * $LLMLAUNCH_NNODES --node_rank $LLMLAUNCH_NODE_RANK --master_addr $MASTER_ADDR ... */
		snprintf(num, sizeof(num), "%d", c->nnodes);
		plan_put(plan, "LLMLAUNCH_NNODES", num, "nodes in the job", true);
		snprintf(num, sizeof(num), "%d", c->node_rank);
		plan_put(plan, "LLMLAUNCH_NODE_RANK", num, "this node's rank", true);
		if (c->master_addr)
			plan_put(plan, "MASTER_ADDR", c->master_addr, "the rendezvous host, node 0", true);
		if (c->master_port > 0) {
			snprintf(num, sizeof(num), "%d", c->master_port);
			plan_put(plan, "MASTER_PORT", num, "the rendezvous port on node 0", true);
		}
	}
	if (c->socket_ifname) {
		char *nccl = ll_asprintf("=%s", c->socket_ifname);
		if (c->backend == LL_AGREE_PMIX)
			reason = ll_asprintf("this node's interface in %s, shared by all %d nodes", c->subnet, c->nnodes);
		else if (c->node_rank == 0)
			reason = ll_asprintf("this node's interface with the master address %s%s", c->master_addr,
					     c->proved ? ", where the other nodes reached it" : "");
		else
			reason = ll_asprintf("the interface of this node's route to the master %s (slurm: the nodes "
					     "exchange nothing)", c->master_addr);
		plan_put(plan, "NCCL_SOCKET_IFNAME", nccl, reason, true);
		plan_put(plan, "GLOO_SOCKET_IFNAME", c->socket_ifname, reason, true);
		free(reason);
		free(nccl);
	}
	if (c->nvlink_domain > 0) {
		/* Multi-node NVLink: the domain is the clique, across nodes (agree-clique.c). */
		snprintf(num, sizeof(num), "%d", c->nvlink_domain);
		plan_put(plan, "LLMLAUNCH_NVLINK_DOMAIN", num, c->nvlink_domain_reason, true);
		plan_put(plan, "LLMLAUNCH_GPU_DOMAIN", num, c->nvlink_domain_reason, true);
		plan_put(plan, "LLMLAUNCH_GPU_FABRIC", "nvlink", "the GPUs of an NVLink clique, across nodes", true);
	}
	if (c->node_order)
		plan_put(plan, "node_order", c->node_order,
			 "node ranks by NVLink clique, then the launcher's order: consecutive ranks share NVLink", false);
	if (!single)
		apply_deadlines(plan, c);
}

/* ---- the entry ---- */

int ll_agree_cmd_option(struct ll_agree_options *o, int opt, const char *arg, struct ll_error *err)
{
	char *end;
	double v;

	switch (opt) {
	case LL_OPT_AGREE_TIMEOUT:
		errno = 0;
		v = strtod(arg, &end);
		if (errno || end == arg || *end || !(v > 0) || v > 86400)
			return ll_error_set(err, -EINVAL, "--agree-timeout '%s': expected seconds, more than 0", arg);
		o->timeout_s = v;
		return 1;
	case LL_OPT_STRICT:
		o->strict = true;
		return 1;
	default:
		return 0;
	}
}

/* One node, or several nodes whose rendezvous the user runs by hand with torchrun's
 * own flags. One node: rank 0, the rendezvous on 127.0.0.1 (or the user's address)
 * at a port free on every address right now, so two jobs on one machine never
 * share it. Several nodes by hand: only what the user said; torchrun's defaults
 * apply to the rest, as with torchrun itself (each node choosing its own free port
 * would give every node a different master port). */
static int agree_single(const struct ll_agree_options *o, struct ll_cluster *ret, struct ll_error *err)
{
	int r;

	ret->backend = LL_AGREE_SINGLE;
	ret->nnodes = o->nnodes > 0 ? o->nnodes : 1;
	ret->node_rank = o->node_rank > 0 ? o->node_rank : 0;
	if (o->nnodes != 0 && o->nnodes != 1) {
		ret->master_addr = ll_strdup(o->master_addr);
		ret->master_port = o->master_port;
		if (!o->master_addr && !o->own_endpoint)
			ll_cluster_note(ret, "--nnodes %s without --master-addr: every node must reach 127.0.0.1, "
					     "which is only this node",
					o->nnodes_text ? o->nnodes_text : "N");
		return 0;
	}
	ret->master_addr = ll_strdup(o->master_addr ? o->master_addr : "127.0.0.1");
	if (o->master_port > 0) {
		ret->master_port = o->master_port;
	} else if (!o->own_endpoint) {
		/* torchrun's store listens on the wildcard address: free there means free on
		 * every address, 127.0.0.1 included. */
		r = ll_free_port_any(&ret->master_port, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The interface the user chose for the job (environment or command line), which the
 * rendezvous proof then uses: NCCL_SOCKET_IFNAME when it names one interface ("eth0",
 * "=eth0"), else GLOO_SOCKET_IFNAME. NULL: none, or a list (the agreed one is proved). */
static char *user_ifname(const struct ll_plan *plan)
{
	static const char *const vars[] = { "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME" };

	for (size_t i = 0; plan && i < LL_ARRAY_SIZE(vars); i++) {
		const struct ll_setting *s = ll_plan_get(plan, vars[i]);
		const char *v;

		if (!s || s->source <= LL_SOURCE_CLUSTER || !s->value)
			continue;
		v = s->value[0] == '=' ? s->value + 1 : s->value;
		if (*v && !strpbrk(v, ",^ "))
			return ll_strdup(v);
	}
	return NULL;
}

/* The job's first candidate master port, the same on every node: from the Slurm job
 * and step (as the Slurm backend's port), else from the PMIx namespace. */
static int port_base(char *const *env)
{
	struct ll_slurm_job job;
	const char *ns = ll_env_get(env, "PMIX_NAMESPACE");
	uint64_t h = 0xcbf29ce484222325ULL;

	if (ll_slurm_job_read(env, &job, NULL) == 0 && job.job_id >= 0)
		return agree_slurm_port((unsigned long)job.job_id, (unsigned long)(job.step_id >= 0 ? job.step_id : 0));
	for (const char *c = ns ? ns : ""; *c; c++) {
		h ^= (unsigned char)*c;
		h *= 0x100000001b3ULL;
	}
	return 20000 + (int)(h % 12768);
}

int ll_agree(struct ll_plan *plan, const struct ll_facts *facts, const struct ll_agree_options *o,
	     struct ll_cluster *ret, struct ll_error *err)
{
	enum ll_agree_backend backend = o->backend ? o->backend : ll_agree_detect(o->environ);
	struct ll_cluster c = { 0 };
	double t0 = ll_now_s();
	_cleanup_free_ char *proof_ifname = user_ifname(plan);
	int r;

	/* The user's own torchrun flags say they run the nodes by hand. */
	if (o->rendezvous_by_hand)
		backend = LL_AGREE_SINGLE;
	if (backend == LL_AGREE_SINGLE && o->launcher_only) {
		memset(ret, 0, sizeof(*ret));
		ret->backend = LL_AGREE_SINGLE;
		ret->nnodes = 1;
		return 0;
	}
	switch (backend) {
	case LL_AGREE_PMIX: {
		_cleanup_(ll_summary_freep) struct ll_summary *self = NULL;
		struct ll_agree_node rec = { 0 };
		struct ll_agree_pmix_args args = { .rec = &rec, .o = o };

		r = ll_summary_build(facts, plan, &self, err);
		if (r < 0)
			break;
		rec.hw_digest = ll_summary_hw_digest(self);
		rec.net_digest = ll_summary_net_digest(self);
		rec.host_key = host_key();
		rec.topology_addr = (char *)ll_env_get(o->environ, "SLURM_TOPOLOGY_ADDR");
		ll_agree_clique_of(facts, plan, o->environ, &rec.clique);
		args.self = self;
		args.proof_ifname = proof_ifname;
		args.port_base = port_base(o->environ);
		r = agree_pmix_run(&args, &c, err);
		ll_agree_clique_release(&rec.clique);
		break;
	}
	case LL_AGREE_SLURM:
		r = agree_slurm_run(o, proof_ifname, &c, err);
		break;
	default:
		r = agree_single(o, &c, err);
		break;
	}
	if (r < 0) {
		ll_cluster_release(&c);
		return r;
	}
	c.seconds = ll_now_s() - t0;
	if (plan)
		ll_cluster_apply(plan, &c, o);
	*ret = c;
	return 0;
}
