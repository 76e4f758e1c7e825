/* ll_agree(): pick the backend from the environment, build this node's summary,
 * agree, and write the cluster-wide values into the plan. */
#include "agree-internal.h"
#include "llmlaunch/launch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

const char *agree_getenv(char *const *env, const char *name)
{
	size_t n = strlen(name);

	if (!env)
		env = environ;
	for (; *env; env++)
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

void agree_note(struct ll_cluster *c, const char *fmt, ...)
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
	for (size_t i = 0; i < c->n_notes; i++)
		free(c->notes[i]);
	free(c->notes);
	memset(c, 0, sizeof(*c));
}

enum ll_agree_backend ll_agree_detect(char *const *env)
{
	if (!env)
		env = environ;
	/* PMIx_Init without a server fails only after a delay: look for its variables first. */
	for (char *const *e = env; *e; e++)
		if (ll_startswith(*e, "PMIX_NAMESPACE=") || ll_startswith(*e, "PMIX_SERVER_URI"))
			return LL_AGREE_PMIX;
	if (agree_getenv(env, "SLURM_JOB_ID") && agree_getenv(env, "SLURM_JOB_NODELIST"))
		return LL_AGREE_SLURM;
	return LL_AGREE_SINGLE;
}

int ll_agree_free_port(void)
{
	int port, r;

	/* Any address, both families when the kernel allows: the master listens on whichever
	 * address the agreement picks. */
	r = ll_free_port("::", &port, NULL);
	if (r < 0)
		r = ll_free_port("0.0.0.0", &port, NULL);
	return r < 0 ? r : port;
}

/* ---- this node's summary ---- */

static enum ll_summary_if_kind summary_kind(const struct ll_netif *n)
{
	switch (n->kind) {
	case LL_NETIF_LOOPBACK:
		return LL_SUMMARY_IF_LOOPBACK;
	case LL_NETIF_INFINIBAND:
		return LL_SUMMARY_IF_IPOIB;
	case LL_NETIF_DOCKER:
	case LL_NETIF_VIRBR:
	case LL_NETIF_VETH:
		return LL_SUMMARY_IF_CONTAINER;
	case LL_NETIF_BRIDGE:
	case LL_NETIF_VLAN:
	case LL_NETIF_BOND:
	case LL_NETIF_TUNNEL:
	case LL_NETIF_OTHER_VIRTUAL:
		return LL_SUMMARY_IF_VIRTUAL;
	default:
		if (strcmp(n->name, "lo") == 0)
			return LL_SUMMARY_IF_LOOPBACK;
		return n->virtual_ ? LL_SUMMARY_IF_VIRTUAL : LL_SUMMARY_IF_PHYSICAL;
	}
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
		if (i->ifa_flags & IFF_LOOPBACK)
			kind = LL_SUMMARY_IF_LOOPBACK;
		else if (ll_startswith(i->ifa_name, "docker") || ll_startswith(i->ifa_name, "virbr") ||
			 ll_startswith(i->ifa_name, "veth"))
			kind = LL_SUMMARY_IF_CONTAINER;
		else if (ll_startswith(i->ifa_name, "ib"))
			kind = LL_SUMMARY_IF_IPOIB;
		else
			kind = LL_SUMMARY_IF_PHYSICAL;
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
	s->n_gpus = (int)f->n_gpus;
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

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
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

static void apply(struct ll_plan *plan, const struct ll_cluster *c)
{
	char num[32], *reason;
	const char *how = ll_agree_backend_name(c->backend);

	snprintf(num, sizeof(num), "%d", c->nnodes);
	reason = ll_asprintf("nodes in the job (%s)", how);
	plan_put(plan, "nnodes", num, reason, false);
	free(reason);
	snprintf(num, sizeof(num), "%d", c->node_rank);
	reason = ll_asprintf(c->backend == LL_AGREE_PMIX ? "this node's place in the launcher's order (pmix)"
			     : c->backend == LL_AGREE_SLURM ? "SLURM_NODEID (slurm)"
							    : "the only node");
	plan_put(plan, "node_rank", num, reason, false);
	free(reason);
	if (c->master_addr) {
		reason = c->backend == LL_AGREE_PMIX
				 ? ll_asprintf("node 0's address in %s, the subnet every node shares", c->subnet)
			 : c->backend == LL_AGREE_SLURM ? ll_strdup("first host of the Slurm node list")
							: ll_strdup("this node");
		plan_put(plan, "master_addr", c->master_addr, reason, false);
		free(reason);
	}
	if (c->master_port > 0) {
		snprintf(num, sizeof(num), "%d", c->master_port);
		plan_put(plan, "master_port", num,
			 c->backend == LL_AGREE_SLURM ? "derived from the job and step id" : "free on node 0 when checked",
			 false);
	}
	if (c->backend != LL_AGREE_SINGLE) {
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
		reason = ll_asprintf("this node's interface in %s, shared by all %d nodes", c->subnet, c->nnodes);
		plan_put(plan, "NCCL_SOCKET_IFNAME", nccl, reason, true);
		plan_put(plan, "GLOO_SOCKET_IFNAME", c->socket_ifname, reason, true);
		free(reason);
		free(nccl);
	}
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

static int agree_single(const struct ll_agree_options *o, struct ll_cluster *ret, struct ll_error *err)
{
	int port;

	ret->backend = LL_AGREE_SINGLE;
	ret->nnodes = o->nnodes > 0 ? o->nnodes : 1;
	ret->node_rank = o->node_rank >= 0 ? o->node_rank : 0;
	ret->master_addr = ll_strdup(o->master_addr ? o->master_addr : "127.0.0.1");
	if (o->master_port > 0) {
		ret->master_port = o->master_port;
	} else if (ret->nnodes == 1) {
		port = ll_agree_free_port();
		if (port < 0)
			return ll_error_set(err, port, "cannot find a free TCP port: %s", strerror(-port));
		ret->master_port = port;
	}
	/* Several nodes by hand: torchrun's defaults (29500) apply, as with torchrun itself. */
	if (ret->nnodes > 1 && !o->master_addr)
		agree_note(ret, "--nnodes %d without --master-addr: every node must reach 127.0.0.1, which is "
				"only this node", ret->nnodes);
	return 0;
}

int ll_agree(struct ll_plan *plan, const struct ll_facts *facts, const struct ll_agree_options *o,
	     struct ll_cluster *ret, struct ll_error *err)
{
	enum ll_agree_backend backend = o->backend ? o->backend : ll_agree_detect(o->environ);
	struct ll_cluster c = { 0 };
	double t0 = now_s();
	int r;

	/* The user's own torchrun flags say they run the nodes by hand. */
	if (o->nnodes > 0 || o->master_addr)
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
		int port;

		r = ll_summary_build(facts, plan, &self, err);
		if (r < 0)
			break;
		port = ll_agree_free_port();
		if (port < 0) {
			r = ll_error_set(err, port, "cannot find a free TCP port: %s", strerror(-port));
			break;
		}
		rec.hw_digest = ll_summary_hw_digest(self);
		rec.net_digest = ll_summary_net_digest(self);
		rec.host_key = host_key();
		rec.port = port;
		rec.topology_addr = (char *)agree_getenv(o->environ, "SLURM_TOPOLOGY_ADDR");
		r = agree_pmix_run(self, &rec, o, &c, err);
		break;
	}
	case LL_AGREE_SLURM:
		r = agree_slurm_run(o, &c, err);
		break;
	default:
		r = agree_single(o, &c, err);
		break;
	}
	if (r < 0) {
		ll_cluster_release(&c);
		return r;
	}
	c.seconds = now_s() - t0;
	if (plan)
		apply(plan, &c);
	*ret = c;
	return 0;
}
