/* ll_agree(): pick the backend from the environment, build this node's summary,
 * agree, and write the cluster-wide values into the plan. */
#include "llmlaunch/addr.h"
#include "llmlaunch/file.h"
#include "agree-internal.h"
#include "llmlaunch/clock.h"
#include "llmlaunch/hash.h"
#include "llmlaunch/env.h"
#include "llmlaunch/port.h"
#include "llmlaunch/slurm.h"
#include "llmlaunch/torchrun-options.h"

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
	ll_contract_release(c->contract);
	free(c->contract);
	for (size_t i = 0; i < c->n_notes; i++)
		free(c->notes[i]);
	free(c->notes);
	memset(c, 0, sizeof(*c));
}

/* The backend the environment calls for, its name as the plan's "agreement" (an
 * engine's, for a contract) and what showed it; an engine's contract that cannot be
 * read is an error (err may be NULL: then it reads as that engine's contract, whose
 * agreement then says what is wrong). */
static int detect(char *const *env, enum ll_agree_backend *ret, const char **ret_name, const char **ret_why,
		  struct ll_error *err)
{
	struct ll_contract c = { 0 };
	struct ll_error own = { 0 };
	int r;

	env = ll_env_or_process(env);
	*ret_why = NULL;
	*ret_name = NULL;
	/* PMIx_Init without a server fails only after a delay: look for its variables first. */
	for (char *const *e = env; *e; e++)
		if (ll_startswith(*e, "PMIX_NAMESPACE=") || ll_startswith(*e, "PMIX_SERVER_URI")) {
			*ret_why = ll_startswith(*e, "PMIX_NAMESPACE=") ? "PMIX_NAMESPACE is set (srun --mpi=pmix, mpirun)"
									 : "a PMIx server is named (PMIX_SERVER_URI*)";
			*ret = LL_AGREE_PMIX;
			*ret_name = "pmix";
			return 0;
		}
	if (ll_slurm_in_job(env)) {
		*ret_why = "SLURM_JOB_ID and SLURM_JOB_NODELIST are set (a Slurm job)";
		*ret = LL_AGREE_SLURM;
		*ret_name = "slurm";
		return 0;
	}
	r = ll_contract_read(env, &c, err ? err : &own);
	ll_error_clear(&own);
	if (r > 0) {
		*ret = LL_AGREE_CONTRACT;
		*ret_name = ll_contract_engine_name(c.engine);
		*ret_why = ll_contract_engine_why(c.engine);
		ll_contract_release(&c);
		return 0;
	}
	*ret = LL_AGREE_SINGLE;
	if (r < 0 && !err) {
		/* Contradictory or partial: the contract backend reads it again and says so. */
		*ret = LL_AGREE_CONTRACT;
		*ret_name = "contract";
		*ret_why = "an engine's variables are set";
	}
	return r < 0 ? r : 0;
}

enum ll_agree_backend ll_agree_detect(char *const *env)
{
	enum ll_agree_backend b;
	const char *name, *why;

	detect(env, &b, &name, &why, NULL);
	return b;
}

const char *ll_agree_launcher(char *const *env, const char **ret_why)
{
	enum ll_agree_backend b;
	const char *name;

	detect(env, &b, &name, ret_why, NULL);
	return b == LL_AGREE_SINGLE ? NULL : name;
}

int ll_agree_launcher_read(char *const *env, const char **ret_name, const char **ret_why, struct ll_error *err)
{
	enum ll_agree_backend b;
	const char *name, *why;
	int r = detect(env, &b, &name, &why, err);

	if (r < 0)
		return r;
	*ret_name = b == LL_AGREE_SINGLE ? NULL : name;
	*ret_why = why;
	return 0;
}

/* A world value the plan holds from the command line or a profile: the user's own
 * rendezvous (no agreement), or an input the agreement proves (the master port).
 * NULL when the agreement decides it. */
static const char *world_input(const struct ll_plan *plan, const char *name)
{
	const struct ll_setting *s = ll_plan_get(plan, name);

	return s && s->value && (s->source == LL_SOURCE_CLI || s->source == LL_SOURCE_PROFILE) ? s->value : NULL;
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

/* Snapshots and --fsroot carry no addresses, but the rendezvous happens on this
 * machine's real network anyway: read it live then. */
static void add_live_ifs(struct ll_summary *s)
{
	struct ifaddrs *ifa = NULL;

	if (getifaddrs(&ifa) < 0)
		return;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		char text[INET6_ADDRSTRLEN];
		int fam;

		if (!i->ifa_addr || !(i->ifa_flags & IFF_UP))
			continue;
		fam = i->ifa_addr->sa_family;
		if ((fam != AF_INET && fam != AF_INET6) || !ll_addr_text(i->ifa_addr, text))
			continue;
		add_if(s, i->ifa_name, live_kind(ifa, i), fam, text, ll_addr_prefix_len(i->ifa_netmask));
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
	/* The transport NCCL will use: the plan decides it once (NCCL_NET and
	 * NCCL_IB_DISABLE of every layer included). */
	s->net = ll_strdup(ll_plan_value(plan, "LLMLAUNCH_NET"));
	v = world_input(plan, "torchrun.master_port");
	s->master_port = v ? atoi(v) : 0;
	s->ib_hca = ll_strdup(ll_plan_value(plan, "NCCL_IB_HCA"));
	s->qos = ll_summary_qos_text(f, plan);

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
	uint64_t h;
	ssize_t n;

	ll_read_line("/proc/sys/kernel/random/boot_id", &boot);
	n = readlink("/proc/self/ns/net", ns, sizeof(ns) - 1);
	ns[n > 0 ? n : 0] = '\0';
	h = ll_hash_add(LL_HASH_INIT, boot ? boot : "", boot ? strlen(boot) : 0);
	h = ll_hash_add(h, ns, strlen(ns));
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

/* A torchrun option of the world. A value the command line or a profile gave stays
 * theirs: the user's own rendezvous (single), or an input the agreement used and
 * proved (the master port), which the reason then says. */
static void put_world(struct ll_plan *plan, const struct ll_cluster *c, const char *name, const char *value,
		      const char *reason)
{
	const struct ll_setting *old = ll_plan_get(plan, name);

	if (old && old->value && (old->source == LL_SOURCE_CLI || old->source == LL_SOURCE_PROFILE)) {
		if (c->backend != LL_AGREE_SINGLE && ll_streq(old->value, value) &&
		    !strstr(old->reason, "every node asked for it")) {
			_cleanup_free_ char *more = ll_asprintf("%s; every node asked for it (%s)", old->reason,
								ll_agree_backend_name(c->backend));
			ll_plan_set(plan, name, old->value, old->source, old->origin, more, false);
		}
		return;
	}
	plan_put(plan, name, value, reason, false);
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
 * explain to show; torchrun's own rendezvous timeout is passed to it. */
static void apply_deadlines(struct ll_plan *plan, const struct ll_cluster *c)
{
	const struct ll_agree_deadlines *d = &c->deadlines;
	size_t n = (size_t)c->nnodes;
	char *value = ll_asprintf("timeout=%.0f", d->rdzv_s);
	char *reason = ll_agree_deadline_reason(LL_RDZV_BASE_S, LL_RDZV_PER_NODE_S, n);
	char *full = ll_asprintf("torchrun's rendezvous timeout (seconds): %s", reason);

	put_deadline(plan, "agree_timeout", d->agree_s, "seconds every node has to arrive",
		     d->agree_given ? ll_strdup("--agree-timeout on the command line")
				    : ll_agree_deadline_reason(LL_AGREE_BASE_S, LL_AGREE_PER_NODE_S, n));
	put_deadline(plan, "reach_timeout", d->reach_s, "seconds every node has to reach the master",
		     d->agree_given && d->reach_s >= d->agree_s
			     ? ll_strdup("no longer than --agree-timeout")
			     : ll_agree_deadline_reason(LL_REACH_BASE_S, LL_REACH_PER_NODE_S, n));
	put_world(plan, c, "torchrun.rdzv_conf", value, full);
	free(full);
	free(reason);
	free(value);
}

/* Every variable an engine's contract read, as explain shows it: "contract.PET_NNODES". */
static void apply_contract_vars(struct ll_plan *plan, const struct ll_contract *k)
{
	for (size_t i = 0; i < k->n_vars; i++) {
		_cleanup_free_ char *name = ll_asprintf("contract.%s", k->vars[i].name);
		_cleanup_free_ char *reason = ll_asprintf("read by the %s agreement: %s", k->name, k->vars[i].meaning);

		ll_plan_set(plan, name, k->vars[i].value, LL_SOURCE_ENVIRONMENT, k->vars[i].name, reason, false);
	}
}

void ll_cluster_apply(struct ll_plan *plan, const struct ll_cluster *c)
{
	bool single = c->backend == LL_AGREE_SINGLE;
	const struct ll_contract *k = c->backend == LL_AGREE_CONTRACT ? c->contract : NULL;
	char num[32], *reason;

	snprintf(num, sizeof(num), "%d", c->nnodes);
	reason = single ? ll_strdup("one node: no launcher runs this job on others")
		 : k	? ll_asprintf("nodes in the job (%s: %s)", k->name, k->nnodes_var)
			: ll_asprintf("nodes in the job (%s)", ll_agree_backend_name(c->backend));
	put_world(plan, c, "torchrun.nnodes", num, reason);
	free(reason);
	snprintf(num, sizeof(num), "%d", c->node_rank);
	reason = k ? ll_asprintf("%s (%s)", k->rank_var, k->name)
		   : ll_strdup(c->backend == LL_AGREE_PMIX    ? "this node's place in the launcher's order (pmix)"
			       : c->backend == LL_AGREE_SLURM ? "SLURM_NODEID (slurm)"
							      : "the first node");
	put_world(plan, c, "torchrun.node_rank", num, reason);
	free(reason);
	if (c->master_addr) {
		reason = c->backend == LL_AGREE_PMIX && c->routed
				 ? ll_strdup("node 0's preferred address: no subnet is every node's, each reaches it by its "
					     "route")
			 : c->backend == LL_AGREE_PMIX
				 ? ll_asprintf("node 0's address in %s, the subnet every node shares", c->subnet)
			 : c->backend == LL_AGREE_SLURM
				 ? ll_asprintf("first host of the Slurm node list%s", c->proved ? ", where every node reached it" : "")
			 : k	 ? ll_asprintf("%s '%s' (%s)%s", k->addr_var, k->master_host, k->name,
					       c->proved ? ", where every node reached it" : "")
				 : ll_strdup("this node: the only one");
		put_world(plan, c, "torchrun.master_addr", c->master_addr, reason);
		free(reason);
	}
	if (c->master_port > 0) {
		snprintf(num, sizeof(num), "%d", c->master_port);
		reason = k && k->port_var ? ll_asprintf("%s (%s)", k->port_var, k->name)
			 : k		  ? ll_asprintf("torchrun's default: the %s contract names no port", k->name)
			 : ll_strdup(c->backend == LL_AGREE_SLURM ? "derived from the job and step id"
				     : single ? "free on every address of this node when checked"
					      : "the first of the job's candidate ports free on node 0, held by it while "
						"the nodes agreed");
		put_world(plan, c, "torchrun.master_port", num, reason);
		free(reason);
	}
	if (k)
		apply_contract_vars(plan, k);
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
		/* checked: the decision chose it (PMIx, or node 0's check-in without it). */
		if (c->checked && c->routed)
			reason = ll_asprintf("the interface of this node's route to the master %s (no subnet is every "
					     "node's: routers join them)%s", c->master_addr,
					     c->proved ? ", where this node reached it" : "");
		else if (c->checked && c->subnet)
			reason = ll_asprintf("this node's interface in %s, shared by all %d nodes", c->subnet, c->nnodes);
		else if (c->node_rank == 0)
			reason = ll_asprintf("this node's interface with the master address %s%s", c->master_addr,
					     c->proved ? ", where the other nodes reached it" : "");
		else
			reason = ll_asprintf("the interface of this node's route to the master %s (%s, unchecked: "
					     "only 'run' agrees without PMIx)", c->master_addr, k ? k->name : "slurm");
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
	switch (opt) {
	case LL_OPT_AGREE_TIMEOUT:
		return ll_parse_seconds("--agree-timeout", arg, 0.001, 86400, &o->timeout_s, err) < 0 ? -EINVAL : 1;
	case LL_OPT_STRICT:
		o->strict = true;
		return 1;
	default:
		return 0;
	}
}

/* One node, or several nodes whose rendezvous the user runs by hand with torchrun's
 * own options (the plan holds them from the command line or a local profile). One
 * node: rank 0, the rendezvous on 127.0.0.1 (or the user's address) at a port free on
 * every address right now, so two jobs on one machine never share it. Several nodes
 * by hand: only what the user said; torchrun's defaults apply to the rest, as with
 * torchrun itself (each node choosing its own free port would give every node a
 * different master port). */
static int agree_single(const struct ll_plan *plan, bool choose_port, struct ll_cluster *ret, struct ll_error *err)
{
	const char *nnodes = world_input(plan, "torchrun.nnodes"), *rank = world_input(plan, "torchrun.node_rank");
	const char *addr = world_input(plan, "torchrun.master_addr"), *port = world_input(plan, "torchrun.master_port");
	bool own = world_input(plan, "torchrun.rdzv_endpoint") ||
		   ll_torchrun_flag_on(world_input(plan, "torchrun.standalone"));
	long n = 1;
	int r;

	ret->backend = LL_AGREE_SINGLE;
	/* "N" and "N:N" are a fixed count, "MIN:MAX" elastic (the plan checked the form). */
	if (nnodes && ll_parse_long(nnodes, 1, 1 << 20, &n) < 0) {
		const char *colon = strchr(nnodes, ':');

		n = colon && strtol(nnodes, NULL, 10) == strtol(colon + 1, NULL, 10) ? strtol(nnodes, NULL, 10) : -1;
	}
	ret->nnodes = n > 0 ? (int)n : 1;
	ret->node_rank = rank ? atoi(rank) : 0;
	if (n != 1) {
		ret->master_addr = ll_strdup(addr);
		ret->master_port = port ? atoi(port) : 0;
		if (!addr && !own)
			ll_cluster_note(ret, "--nnodes %s without --master-addr: every node must reach 127.0.0.1, "
					     "which is only this node",
					nnodes);
		return 0;
	}
	ret->master_addr = ll_strdup(addr ? addr : "127.0.0.1");
	if (port) {
		ret->master_port = atoi(port);
	} else if (!own && choose_port) {
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

	if (ll_slurm_job_read(env, &job, NULL) == 0 && job.job_id >= 0)
		return agree_slurm_port((unsigned long)job.job_id, (unsigned long)(job.step_id >= 0 ? job.step_id : 0));
	ns = ns ? ns : "";
	return 20000 + (int)(ll_hash(ns, strlen(ns)) % 12768);
}

/* This node's summary and its record (the digests, the host, the topology address,
 * the NVLink clique): what every node tells the others, with PMIx or without. */
static int self_record(const struct ll_facts *facts, const struct ll_plan *plan, const struct ll_agree_options *o,
		       struct ll_summary **ret_self, struct ll_agree_node *rec, struct ll_error *err)
{
	int r = ll_summary_build(facts, plan, ret_self, err);

	if (r < 0)
		return r;
	rec->hw_digest = ll_summary_hw_digest(*ret_self);
	rec->net_digest = ll_summary_net_digest(*ret_self);
	rec->host_key = host_key();
	rec->topology_addr = (char *)ll_env_get(o->environ, "SLURM_TOPOLOGY_ADDR");
	ll_agree_clique_of(facts, plan, o->environ, &rec->clique);
	return 0;
}

/* The backend: the options' (tests), else the plan's "agreement", else the environment's. */
static enum ll_agree_backend choose_backend(const struct ll_plan *plan, const struct ll_agree_options *o)
{
	const char *a;

	if (o->backend)
		return o->backend;
	if (!plan || !ll_plan_get(plan, "agreement"))
		return ll_agree_detect(o->environ);
	a = ll_plan_value(plan, "agreement");
	if (ll_contract_engine_of(a) >= 0 || ll_streq(a, "contract"))
		return LL_AGREE_CONTRACT;
	return ll_streq(a, "pmix") ? LL_AGREE_PMIX : ll_streq(a, "slurm") ? LL_AGREE_SLURM : LL_AGREE_SINGLE;
}

int ll_agree(struct ll_plan *plan, const struct ll_facts *facts, const struct ll_agree_options *o,
	     struct ll_cluster *ret, struct ll_error *err)
{
	enum ll_agree_backend backend = choose_backend(plan, o);
	struct ll_cluster c = { 0 };
	double t0 = ll_now_s();
	_cleanup_free_ char *proof_ifname = user_ifname(plan);
	const char *asked = world_input(plan, "torchrun.master_port");
	int r;

	if (backend == LL_AGREE_SINGLE && o->launcher_only) {
		/* env, explain: the single node's world as the launch will have it, but for
		 * the port, which only the launch itself can find free. */
		r = agree_single(plan, false, &c, err);
		if (r < 0)
			return r;
		if (plan) {
			ll_cluster_apply(plan, &c);
			if (!c.master_port && !ll_plan_get(plan, "torchrun.master_port") &&
			    !world_input(plan, "torchrun.rdzv_endpoint") &&
			    !ll_torchrun_flag_on(world_input(plan, "torchrun.standalone")))
				plan_put(plan, "torchrun.master_port", NULL,
					 c.nnodes == 1 ? "chosen when the job starts: a port free on every address of this node"
						       : "torchrun's default (29500): every node must use the same port",
					 false);
		}
		*ret = c;
		return 0;
	}
	switch (backend) {
	case LL_AGREE_SLURM:
	case LL_AGREE_CONTRACT: {
		/* The check without PMIx: built as for PMIx, exchanged at rank 0's check-in. */
		_cleanup_(ll_summary_freep) struct ll_summary *self = NULL;
		struct ll_agree_node rec = { 0 };
		struct agree_env_self me = { .leave_out = LL_LEAVE_OUT_SRUN }; /* a contract says its own */

		/* Only `run` exchanges (env and explain would wait for every node). */
		if (o->prove && facts) {
			r = self_record(facts, plan, o, &self, &rec, err);
			if (r < 0)
				break;
			me.summary = self;
			me.rec = &rec;
		}
		r = backend == LL_AGREE_SLURM ? agree_slurm_run(o, &me, proof_ifname, asked ? atoi(asked) : 0, &c, err)
					      : agree_contract_run(o, &me, proof_ifname, asked ? atoi(asked) : 0, &c, err);
		ll_agree_clique_release(&rec.clique);
		break;
	}
	case LL_AGREE_PMIX: {
		_cleanup_(ll_summary_freep) struct ll_summary *self = NULL;
		struct ll_agree_node rec = { 0 };
		struct ll_agree_pmix_args args = { .rec = &rec, .o = o };
		_cleanup_free_ char *self_name = NULL;

		r = self_record(facts, plan, o, &self, &rec, err);
		if (r < 0)
			break;
		args.self = self;
		args.proof_ifname = proof_ifname;
		args.port_base = port_base(o->environ);
		args.port_asked = asked ? atoi(asked) : 0;
		args.not_slurm = !ll_env_get(o->environ, "SLURM_JOB_ID");
		/* Slurm's name for this node, the one the other nodes read from their PMIx
		 * servers for it (the step's node list). This node's own server answers
		 * PMIX_HOSTNAME for local ranks with its host name instead (OpenPMIx 5 under
		 * Slurm 24.11), which need not be the node's Slurm name. */
		self_name = args.not_slurm ? NULL : ll_strdup(ll_env_get_nonempty(o->environ, "SLURMD_NODENAME"));
		args.self_name = self_name;
		r = agree_pmix_run(&args, &c, err);
		ll_agree_clique_release(&rec.clique);
		break;
	}
	default:
		r = agree_single(plan, true, &c, err);
		break;
	}
	if (r < 0) {
		ll_cluster_release(&c);
		return r;
	}
	c.seconds = ll_now_s() - t0;
	if (plan && c.contract && c.contract->nproc_per_node > 0 && plan->nproc_per_node > 0 &&
	    c.contract->nproc_per_node != plan->nproc_per_node)
		ll_cluster_note(&c, "%s=%ld (%s) but this node starts %d processes (torchrun.nproc_per_node): the engine "
				    "counts on %ld; pass --nproc-per-node %ld, or let the engine say auto",
				c.contract->nproc_var, c.contract->nproc_per_node, c.contract->name, plan->nproc_per_node,
				c.contract->nproc_per_node, c.contract->nproc_per_node);
	if (plan)
		ll_cluster_apply(plan, &c);
	*ret = c;
	return 0;
}
