/* The pure agreement decision: node order, homogeneity verdict, common subnet,
 * master address. Every node runs it on the same records and reaches the same
 * result, so a bad node is named identically everywhere and nobody launches. */
#include "llmlaunch/agree.h"
#include "agree-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* Nodes named in one message before "and N more" (llmlaunch/agree.h). */
#define NAMES_SHOWN LL_AGREE_NAMES_SHOWN

const char *ll_agree_backend_name(enum ll_agree_backend b)
{
	static const char *const names[] = {
		[LL_AGREE_AUTO] = "auto", [LL_AGREE_PMIX] = "pmix", [LL_AGREE_SLURM] = "slurm",
		[LL_AGREE_SINGLE] = "single", [LL_AGREE_CONTRACT] = "contract",
	};
	return (unsigned)b < LL_ARRAY_SIZE(names) ? names[b] : "?";
}

char *ll_agree_leave_out(enum ll_leave_out who, const char *names)
{
	switch (who) {
	case LL_LEAVE_OUT_MPIRUN:
		return ll_asprintf("drop them from mpirun's --host or --hostfile: %s", names);
	case LL_LEAVE_OUT_PODS:
		return ll_asprintf("cordon their Kubernetes nodes and delete the job's pods so that they are "
				   "scheduled elsewhere: %s", names);
	case LL_LEAVE_OUT_SKYPILOT:
		return ll_asprintf("relaunch the SkyPilot cluster on other nodes (sky down, then sky launch): %s", names);
	case LL_LEAVE_OUT_MANUAL:
		return ll_asprintf("start the job without them, with NNODES and NODE_RANK set again: %s", names);
	case LL_LEAVE_OUT_SRUN:
		break;
	}
	return ll_asprintf("srun --exclude=%s", names);
}

void ll_agree_result_release(struct ll_agree_result *r)
{
	free(r->order);
	free(r->master_addr);
	free(r->subnet);
	free(r->socket_ifname);
	for (size_t i = 0; i < r->n_warnings; i++)
		free(r->warnings[i]);
	free(r->warnings);
	free(r->nvlink_domain_reason);
	memset(r, 0, sizeof(*r));
}

size_t ll_topology_leaf_len(const char *addr)
{
	const char *dot = addr ? strrchr(addr, '.') : NULL;
	return dot ? (size_t)(dot - addr) : 0;
}

/* ---- ordering ---- */

struct order_key {
	const char *leaf;
	size_t leaf_len;
	size_t first; /* launcher index of the first node under the same leaf switch */
	size_t index;
};

static int cmp_leaf(const void *a, const void *b)
{
	const struct order_key *x = a, *y = b;
	size_t n = x->leaf_len < y->leaf_len ? x->leaf_len : y->leaf_len;
	int c = memcmp(x->leaf, y->leaf, n);

	if (c)
		return c;
	if (x->leaf_len != y->leaf_len)
		return x->leaf_len < y->leaf_len ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int cmp_first(const void *a, const void *b)
{
	const struct order_key *x = a, *y = b;

	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Launcher order, except that the nodes of one NVLink clique, or else under one leaf
 * switch, become consecutive (agree_order_key); cliques and switches keep the order
 * of their first node, so with neither nothing moves. */
static size_t *node_order(const struct ll_agree_node *nodes, size_t n)
{
	size_t *order = ll_calloc(n, sizeof(*order));
	bool any_topology = false;
	struct order_key *keys;

	for (size_t i = 0; i < n; i++) {
		order[i] = i;
		any_topology |= nodes[i].topology_addr != NULL || nodes[i].clique.key != NULL;
	}
	if (!any_topology)
		return order;

	keys = ll_calloc(n, sizeof(*keys));
	for (size_t i = 0; i < n; i++) {
		keys[i].leaf_len = agree_order_key(&nodes[i], &keys[i].leaf);
		keys[i].index = i;
	}
	qsort(keys, n, sizeof(*keys), cmp_leaf);
	for (size_t i = 0; i < n; i++)
		keys[i].first = i > 0 && keys[i].leaf_len == keys[i - 1].leaf_len &&
					memcmp(keys[i].leaf, keys[i - 1].leaf, keys[i].leaf_len) == 0
				? keys[i - 1].first
				: keys[i].index;
	qsort(keys, n, sizeof(*keys), cmp_first);
	for (size_t i = 0; i < n; i++)
		order[i] = keys[i].index;
	free(keys);
	return order;
}

/* ---- groups of equal digests ---- */

struct digest_key {
	uint64_t digest;
	size_t index;
};

static int cmp_digest(const void *a, const void *b)
{
	const struct digest_key *x = a, *y = b;

	if (x->digest != y->digest)
		return x->digest < y->digest ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

struct group {
	size_t *members; /* launcher indices, ascending */
	size_t n;
	const struct ll_summary *rep; /* summary of one member (equal digests: any will do) */
};

static void groups_free(struct group *g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(g[i].members);
	free(g);
}

/* Group nodes by the digest `which` picks; groups come out ordered by their first member. */
static struct group *group_by(const struct ll_agree_node *nodes, size_t n, bool net, size_t *ret_n)
{
	struct digest_key *keys = ll_calloc(n, sizeof(*keys));
	struct group *groups = NULL;
	size_t n_groups = 0;

	for (size_t i = 0; i < n; i++) {
		keys[i].digest = net ? nodes[i].net_digest : nodes[i].hw_digest;
		keys[i].index = i;
	}
	qsort(keys, n, sizeof(*keys), cmp_digest);
	for (size_t i = 0; i < n; i++) {
		struct group *g;
		if (i == 0 || keys[i].digest != keys[i - 1].digest)
			ll_array_push(&groups, &n_groups, sizeof(*groups));
		g = &groups[n_groups - 1];
		*(size_t *)ll_array_push(&g->members, &g->n, sizeof(size_t)) = keys[i].index;
	}
	free(keys);
	/* Few groups (usually one): a simple insertion sort by first member is enough. */
	for (size_t i = 1; i < n_groups; i++)
		for (size_t j = i; j > 0 && groups[j].members[0] < groups[j - 1].members[0]; j--) {
			struct group t = groups[j];
			groups[j] = groups[j - 1];
			groups[j - 1] = t;
		}
	*ret_n = n_groups;
	return groups;
}

struct fetcher {
	const struct ll_agree_input *in;
	size_t n_fetched;
};

static int fetch(struct fetcher *f, size_t i, const struct ll_summary **ret, struct ll_error *err)
{
	int r = f->in->fetch(f->in->fetch_data, i, ret, err);

	if (r == 0)
		f->n_fetched++;
	return r;
}

/* Equal digests mean equal summaries for what is compared: read whichever member is
 * cheapest, this node or one the backend already holds, before asking a peer. */
static size_t group_rep(const struct fetcher *f, const struct group *g)
{
	for (size_t k = 0; k < g->n; k++)
		if (g->members[k] == f->in->self)
			return g->members[k];
	if (f->in->have)
		for (size_t k = 0; k < g->n; k++)
			if (f->in->have(f->in->fetch_data, g->members[k]))
				return g->members[k];
	return g->members[0];
}

static const char *node_name(const struct ll_agree_node *nodes, size_t i, char buf[32])
{
	if (nodes[i].name)
		return nodes[i].name;
	snprintf(buf, 32, "node#%zu", i);
	return buf;
}

/* "n4" / "n3, n4" / "n1, ..., n8 and 992 more": the first names of index[], then a count. */
static void names_list(struct ll_buf *b, const char *(*name)(const void *data, size_t i), const void *data,
		       const size_t *index, size_t n_index, size_t n_total)
{
	size_t shown = n_index < NAMES_SHOWN ? n_index : NAMES_SHOWN;

	for (size_t i = 0; i < shown; i++) {
		const char *s = name(data, index[i]);
		if (i)
			ll_buf_add(b, ", ");
		if (s)
			ll_buf_add(b, s);
		else
			ll_buf_addf(b, "node#%zu", index[i]);
	}
	if (n_total > shown)
		ll_buf_addf(b, " and %zu more", n_total - shown);
}

static const char *name_in_list(const void *data, size_t i)
{
	return ((char *const *)data)[i];
}

static const char *name_of_node(const void *data, size_t i)
{
	return ((const struct ll_agree_node *)data)[i].name;
}

void ll_agree_add_names(struct ll_buf *b, char *const *names, const size_t *index, size_t n_index, size_t n_total)
{
	names_list(b, name_in_list, names, index, n_index, n_total);
}

char *ll_agree_order_text(const struct ll_agree_node *nodes, const size_t *order, size_t n)
{
	struct ll_buf b;
	char *text;

	ll_buf_init(&b);
	names_list(&b, name_of_node, nodes, order, n, n);
	text = ll_buf_detach(&b);
	ll_buf_release(&b);
	return text;
}

static void add_names(struct ll_buf *b, const struct ll_agree_node *nodes, const struct group *g)
{
	names_list(b, name_of_node, nodes, g->members, g->n, g->n);
}

bool ll_agree_publishes_summary(const struct ll_agree_node *nodes, size_t n, size_t i)
{
	bool first_hw = true, first_net = true;

	if (i == 0)
		return true;
	for (size_t j = 0; j < i && j < n && (first_hw || first_net); j++) {
		first_hw &= nodes[j].hw_digest != nodes[i].hw_digest;
		first_net &= nodes[j].net_digest != nodes[i].net_digest;
	}
	return first_hw || first_net;
}

/* ---- homogeneity ---- */

static unsigned link_layers(const struct ll_summary *s)
{
	unsigned mask = 0;

	for (size_t i = 0; i < s->n_ports; i++)
		if (s->ports[i].state == LL_PORT_ACTIVE || s->ports[i].state == LL_PORT_ACTIVE_DEFER)
			mask |= 1u << s->ports[i].link_layer;
	return mask;
}

static const char *link_layer_text(unsigned mask)
{
	switch (mask) {
	case 1u << LL_LINK_LAYER_INFINIBAND:
		return "InfiniBand";
	case 1u << LL_LINK_LAYER_ETHERNET:
		return "Ethernet (RoCE)";
	case 0:
		return "none";
	default:
		return mask & (1u << LL_LINK_LAYER_UNKNOWN) ? "unknown" : "mixed";
	}
}

static double min_active_rate(const struct ll_summary *s)
{
	double m = -1;

	for (size_t i = 0; i < s->n_ports; i++)
		if ((s->ports[i].state == LL_PORT_ACTIVE || s->ports[i].state == LL_PORT_ACTIVE_DEFER) &&
		    s->ports[i].rate_gbps >= 0 && (m < 0 || s->ports[i].rate_gbps < m))
			m = s->ports[i].rate_gbps;
	return m;
}

/* Ports not active on `s`, named for the message: "mlx5_3 port 1 DOWN". */
static void add_down_ports(struct ll_buf *b, const struct ll_summary *s)
{
	static const char *const states[] = { "unknown", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER" };
	int shown = 0;

	for (size_t i = 0; i < s->n_ports && shown < 4; i++) {
		const struct ll_summary_port *p = &s->ports[i];
		if (p->state == LL_PORT_ACTIVE || p->state == LL_PORT_ACTIVE_DEFER)
			continue;
		ll_buf_addf(b, "%s%s port %u %s", shown++ ? ", " : " (", p->device ? p->device : "?", p->port,
			    states[p->state]);
	}
	if (shown)
		ll_buf_addc(b, ')');
}

struct verdict {
	char **hard, **soft;
	size_t n_hard, n_soft;
};

static const char *tristate_ready(enum ll_tristate t)
{
	return t == LL_YES ? "ready" : t == LL_NO ? "not ready" : "unknown";
}

/* One group's differences, gathered so each group is named once per message. */
struct group_diff {
	struct ll_buf hard, soft;
};

static void diff_add(struct group_diff *d, bool hard, const char *fmt, ...) LL_PRINTF(3, 4);

static void diff_add(struct group_diff *d, bool hard, const char *fmt, ...)
{
	struct ll_buf *b = hard ? &d->hard : &d->soft;
	va_list ap;

	if (b->len)
		ll_buf_add(b, "; ");
	va_start(ap, fmt);
	ll_buf_vaddf(b, fmt, ap);
	va_end(ap);
}

static void verdict_push(char ***list, size_t *n, const struct ll_agree_node *nodes, const struct group *g,
			 const struct ll_buf *items)
{
	struct ll_buf b;

	if (!items->len)
		return;
	ll_buf_init(&b);
	add_names(&b, nodes, g);
	ll_buf_add(&b, ": ");
	ll_buf_add(&b, items->s);
	*(char **)ll_array_push(list, n, sizeof(char *)) = ll_buf_detach(&b);
	ll_buf_release(&b);
}

static void compare(struct verdict *v, const struct ll_agree_node *nodes, const struct group *g,
		    const struct group *ref)
{
	struct group_diff d;
	const struct ll_summary *s = g->rep, *r = ref->rep;
	int sa = ll_summary_active_ports(s), ra = ll_summary_active_ports(r);
	unsigned sl = link_layers(s), rl = link_layers(r);
	double srate = min_active_rate(s), rrate = min_active_rate(r);
	char o[64]; /* who the group is compared with */

	ll_buf_init(&d.hard);
	ll_buf_init(&d.soft);
	if (ref->n == 1)
		snprintf(o, sizeof(o), "the other node");
	else
		snprintf(o, sizeof(o), "the other %zu nodes", ref->n);

	if (s->nproc_per_node != r->nproc_per_node)
		diff_add(&d, true, "plans %d processes per node, %s %d", s->nproc_per_node, o,
			    r->nproc_per_node);
	if (s->master_port != r->master_port) {
		char mine[16] = "none", theirs[16] = "none";

		if (s->master_port > 0)
			snprintf(mine, sizeof(mine), "%d", s->master_port);
		if (r->master_port > 0)
			snprintf(theirs, sizeof(theirs), "%d", r->master_port);
		diff_add(&d, true, "asks for master port %s, %s for %s", mine, o, theirs);
	}
	if ((s->n_gpus < 0) != (r->n_gpus < 0)) {
		/* One side cannot tell (a topology without PCI objects): a note, not a fault. */
		diff_add(&d, false, "GPUs %s, %s %s", s->n_gpus < 0 ? "unknown" : "known", o,
			    r->n_gpus < 0 ? "unknown" : "known");
	} else if (s->n_gpus != r->n_gpus) {
		bool too_few = s->n_gpus < r->n_gpus &&
			       (s->n_gpus < s->nproc_per_node || s->n_gpus < r->nproc_per_node);
		diff_add(&d, too_few, "%d GPU%s%s, %s have %d", s->n_gpus, s->n_gpus == 1 ? "" : "s",
			    too_few ? ", fewer than the processes per node" : "", o, r->n_gpus);
	} else if (!ll_streq(s->gpu_model, r->gpu_model)) {
		diff_add(&d, false, "GPU model '%s', %s '%s'", s->gpu_model ? s->gpu_model : "unknown",
			    o, r->gpu_model ? r->gpu_model : "unknown");
	}
	if (sa == 0 && ra > 0) {
		struct ll_buf b;
		ll_buf_init(&b);
		add_down_ports(&b, s);
		diff_add(&d, true, "no active RDMA port%s, %s have %d (%s)", b.s, o, ra,
			    link_layer_text(rl));
		ll_buf_release(&b);
	} else if (sa > 0 && ra > 0 && sl != rl) {
		diff_add(&d, true, "RDMA link layer %s, %s %s", link_layer_text(sl), o,
			    link_layer_text(rl));
	} else if (sa != ra) {
		struct ll_buf b;
		ll_buf_init(&b);
		add_down_ports(&b, s);
		diff_add(&d, false, "%d active RDMA port%s%s, %s have %d", sa, sa == 1 ? "" : "s", b.s,
			    o, ra);
		ll_buf_release(&b);
	}
	if (sa > 0 && ra > 0 && srate != rrate)
		diff_add(&d, false, "RDMA rate %g Gb/s, %s %g Gb/s", srate, o, rrate);
	if (!ll_streq(s->net, r->net))
		diff_add(&d, true, "transport %s, %s %s", s->net ? s->net : "unset", o,
			    r->net ? r->net : "unset");
	if (s->gid_index != r->gid_index)
		diff_add(&d, false, "GID index %d, %s %d", s->gid_index, o, r->gid_index);
	if (s->gdr_ready != r->gdr_ready && sa > 0)
		diff_add(&d, false, "GPUDirect RDMA %s, %s %s", tristate_ready(s->gdr_ready), o,
			    tristate_ready(r->gdr_ready));
	if (!ll_streq(s->ib_hca, r->ib_hca))
		diff_add(&d, false, "NCCL_IB_HCA '%s', %s '%s'", s->ib_hca ? s->ib_hca : "unset", o,
			    r->ib_hca ? r->ib_hca : "unset");
	if (!ll_streq(s->qos, r->qos))
		diff_add(&d, false, "RoCE QoS '%s', %s '%s'", s->qos ? s->qos : "none", o, r->qos ? r->qos : "none");
	verdict_push(&v->hard, &v->n_hard, nodes, g, &d.hard);
	verdict_push(&v->soft, &v->n_soft, nodes, g, &d.soft);
	ll_buf_release(&d.hard);
	ll_buf_release(&d.soft);
}

static void verdict_release(struct verdict *v)
{
	for (size_t i = 0; i < v->n_hard; i++)
		free(v->hard[i]);
	for (size_t i = 0; i < v->n_soft; i++)
		free(v->soft[i]);
	free(v->hard);
	free(v->soft);
}

/* The reference is the largest group; on a tie the one holding node rank 0. */
static size_t reference_group(const struct group *g, size_t n, size_t node0)
{
	size_t best = 0;

	for (size_t i = 1; i < n; i++)
		if (g[i].n > g[best].n)
			best = i;
	for (size_t i = 0; i < n; i++)
		if (g[i].n == g[best].n)
			for (size_t k = 0; k < g[i].n; k++)
				if (g[i].members[k] == node0)
					return i;
	return best;
}

static int check_homogeneity(const struct ll_agree_input *in, struct fetcher *f, size_t node0,
			     struct ll_agree_result *res, struct ll_error *err)
{
	struct verdict v = { 0 };
	struct group *groups;
	size_t n_groups, ref;
	int r = 0;

	groups = group_by(in->nodes, in->n_nodes, false, &n_groups);
	if (n_groups == 1)
		goto out;
	for (size_t i = 0; i < n_groups; i++) {
		r = fetch(f, group_rep(f, &groups[i]), &groups[i].rep, err);
		if (r < 0)
			goto out;
	}
	ref = reference_group(groups, n_groups, node0);
	for (size_t i = 0; i < n_groups; i++)
		if (i != ref)
			compare(&v, in->nodes, &groups[i], &groups[ref]);

	if (v.n_hard > 0 || (in->strict && v.n_soft > 0)) {
		struct ll_buf b, names;
		ll_buf_init(&b);
		ll_buf_init(&names);
		ll_buf_add(&b, "nodes differ: ");
		for (size_t i = 0; i < v.n_hard; i++)
			ll_buf_addf(&b, "%s%s", i ? "; " : "", v.hard[i]);
		if (in->strict)
			for (size_t i = 0; i < v.n_soft; i++)
				ll_buf_addf(&b, "%s%s%s", v.n_hard || i ? "; " : "", v.soft[i],
					    " (an error under --strict)");
		for (size_t i = 0; i < n_groups; i++)
			if (i != ref) {
				if (names.len)
					ll_buf_addc(&names, ',');
				add_names(&names, in->nodes, &groups[i]);
			}
		r = ll_error_set(err, -EPROTO, "%s", b.s);
		{
			_cleanup_free_ char *how = in->leave_out != LL_LEAVE_OUT_SRUN
							   ? ll_agree_leave_out(in->leave_out, names.s)
							   : ll_asprintf("srun --exclude=...: %s", names.s);

			ll_error_hint(err, "fix those nodes or leave them out (%s); nothing was started", how);
		}
		ll_buf_release(&b);
		ll_buf_release(&names);
		goto out;
	}
	for (size_t i = 0; i < v.n_soft; i++)
		*(char **)ll_array_push(&res->warnings, &res->n_warnings, sizeof(char *)) = LL_TAKE(v.soft[i]);
out:
	verdict_release(&v);
	groups_free(groups, n_groups);
	return r;
}

/* ---- network ---- */

/* Lower is better; -1: never a candidate. With InfiniBand as node 0's transport
 * (ipoib_first) its IPoIB addresses come before Ethernet, as the planner ranks
 * IPoIB on an ACTIVE port first (plan-net.c, netif_rank). */
static int if_rank(const struct ll_summary_if *f, bool one_host, bool ipoib_first)
{
	int base;

	if (f->family == AF_INET6 && f->addr && (strncasecmp(f->addr, "fe8", 3) == 0 ||
						 strncasecmp(f->addr, "fe9", 3) == 0 ||
						 strncasecmp(f->addr, "fea", 3) == 0 ||
						 strncasecmp(f->addr, "feb", 3) == 0))
		return -1; /* link-local: needs a scope id, not a rendezvous address */
	switch (f->kind) {
	case LL_SUMMARY_IF_LOOPBACK:
		/* All nodes on one host (emulated clusters, one-node jobs): loopback is the sure path. */
		if (!one_host)
			return -1;
		base = 0;
		break;
	case LL_SUMMARY_IF_PHYSICAL:
		base = 4;
		break;
	case LL_SUMMARY_IF_IPOIB:
		base = ipoib_first ? 2 : 6;
		break;
	case LL_SUMMARY_IF_VIRTUAL:
		base = 8;
		break;
	default:
		return -1;
	}
	return base + (f->family == AF_INET6);
}

static const struct ll_summary_if *if_in_subnet(const struct ll_summary *s, const char *subnet, bool one_host)
{
	for (size_t i = 0; i < s->n_ifs; i++) {
		char *net;
		bool match;
		if (if_rank(&s->ifs[i], one_host, false) < 0)
			continue;
		net = ll_subnet_of(s->ifs[i].family, s->ifs[i].addr, s->ifs[i].prefixlen);
		match = net && strcmp(net, subnet) == 0;
		free(net);
		if (match)
			return &s->ifs[i];
	}
	return NULL;
}

const char *ll_agree_ifname_in(const struct ll_summary *s, const char *subnet, bool loopback)
{
	const struct ll_summary_if *f = s && subnet ? if_in_subnet(s, subnet, loopback) : NULL;

	return f ? f->name : NULL;
}

static int choose_network(const struct ll_agree_input *in, struct fetcher *f, size_t node0,
			  const struct ll_summary *s0, const struct ll_summary *self, struct ll_agree_result *res,
			  struct ll_error *err)
{
	bool one_host = true, ipoib_first;
	struct group *groups;
	size_t n_groups, *cand = NULL, n_cand = 0;
	const struct ll_summary_if *best = NULL;
	char *best_net = NULL, buf[32];
	int r = 0;

	for (size_t i = 1; i < in->n_nodes; i++)
		one_host &= in->nodes[i].host_key == in->nodes[0].host_key;
	res->loopback_only = false;

	groups = group_by(in->nodes, in->n_nodes, true, &n_groups);
	for (size_t i = 0; i < n_groups; i++) {
		r = fetch(f, group_rep(f, &groups[i]), &groups[i].rep, err);
		if (r < 0)
			goto out;
	}

	/* Node 0's addresses in order of preference (stable within a rank). */
	ipoib_first = s0->net && strcasecmp(s0->net, "ib") == 0;
	for (int want = 0; want <= 9; want++)
		for (size_t i = 0; i < s0->n_ifs; i++)
			if (if_rank(&s0->ifs[i], one_host, ipoib_first) == want)
				*(size_t *)ll_array_push(&cand, &n_cand, sizeof(size_t)) = i;
	if (n_cand == 0) {
		r = ll_error_set(err, -ENETUNREACH, "node %s (rank 0) has no usable IP address", node_name(in->nodes, node0, buf));
		ll_error_hint(err, "loopback, container bridges and link-local addresses cannot reach other nodes");
		goto out;
	}
	for (size_t c = 0; c < n_cand && !best; c++) {
		const struct ll_summary_if *f0 = &s0->ifs[cand[c]];
		char *net = ll_subnet_of(f0->family, f0->addr, f0->prefixlen);
		bool everyone = net != NULL;

		for (size_t g = 0; g < n_groups && everyone; g++)
			everyone = if_in_subnet(groups[g].rep, net, one_host) != NULL;
		if (everyone) {
			best = f0;
			best_net = net;
		} else {
			free(net);
		}
	}
	if (!best && in->routed && !one_host) {
		/* Routed fabrics: no subnet is every node's, but routers may join them. Node
		 * 0's preferred address is the master on every node; each node's interface is
		 * the one its kernel route to it leaves by, which the caller asks for, and the
		 * proof shows who cannot reach it. The same verdict everywhere. */
		res->master_addr = ll_strdup(s0->ifs[cand[0]].addr);
		res->routed = true;
		goto out;
	}
	if (!best) {
		/* Name the nodes missing node 0's preferred subnet: that is where to look. */
		const struct ll_summary_if *f0 = &s0->ifs[cand[0]];
		char *net = ll_subnet_of(f0->family, f0->addr, f0->prefixlen);
		struct ll_buf b;
		ll_buf_init(&b);
		for (size_t g = 0; g < n_groups; g++)
			if (!net || !if_in_subnet(groups[g].rep, net, one_host)) {
				if (b.len)
					ll_buf_add(&b, ", ");
				add_names(&b, in->nodes, &groups[g]);
			}
		r = ll_error_set(err, -ENETUNREACH,
				 "no subnet is shared by every node: %s %s no address in %s (%s's %s %s)", b.s,
				 b.len && strchr(b.s, ',') ? "have" : "has", net ? net : "?",
				 node_name(in->nodes, node0, buf), f0->name, f0->addr);
		ll_error_hint(err, "every node needs an interface in one common subnet for the rendezvous");
		ll_buf_release(&b);
		free(net);
		goto out;
	}
	{
		const struct ll_summary_if *mine = if_in_subnet(self, best_net, one_host);
		if (!mine) {
			/* Cannot happen when self's digest matched its group's; guard anyway. */
			r = ll_error_set(err, -ENETUNREACH, "this node has no address in %s", best_net);
			goto out;
		}
		res->master_addr = ll_strdup(best->addr);
		res->subnet = LL_TAKE(best_net);
		res->socket_ifname = ll_strdup(mine->name);
		res->loopback_only = best->kind == LL_SUMMARY_IF_LOOPBACK;
	}
out:
	free(best_net);
	free(cand);
	groups_free(groups, n_groups);
	return r;
}

int ll_agree_decide(const struct ll_agree_input *in, struct ll_agree_result *ret, struct ll_error *err)
{
	struct ll_agree_result res = { 0 };
	struct fetcher f = { .in = in };
	const struct ll_summary *s0, *self;
	size_t node0;
	int r;

	if (in->n_nodes == 0 || in->self >= in->n_nodes)
		return ll_error_set(err, -EINVAL, "agreement needs this node among 1 or more nodes");

	res.n_nodes = in->n_nodes;
	res.order = node_order(in->nodes, in->n_nodes);
	node0 = res.order[0];
	for (size_t i = 0; i < in->n_nodes; i++)
		if (res.order[i] == in->self)
			res.node_rank = (int)i;

	r = check_homogeneity(in, &f, node0, &res, err);
	if (r < 0)
		goto fail;
	r = agree_cliques_decide(in, &res, err);
	if (r < 0)
		goto fail;
	r = fetch(&f, node0, &s0, err);
	if (r < 0)
		goto fail;
	r = fetch(&f, in->self, &self, err);
	if (r < 0)
		goto fail;
	r = choose_network(in, &f, node0, s0, self, &res, err);
	if (r < 0)
		goto fail;
	res.master_port = in->nodes[node0].port;
	if (res.master_port <= 0) {
		char buf[32];
		r = ll_error_set(err, -EPROTO, "node %s (rank 0) published no master port",
				 node_name(in->nodes, node0, buf));
		goto fail;
	}
	res.n_fetched = f.n_fetched;
	*ret = res;
	return 0;
fail:
	ll_agree_result_release(&res);
	return r;
}

/* ---- deadlines ---- */

void ll_agree_deadlines(size_t nnodes, double agree_timeout, struct ll_agree_deadlines *ret)
{
	double n = (double)nnodes;

	ret->agree_given = agree_timeout > 0;
	ret->agree_s = ret->agree_given ? agree_timeout : LL_AGREE_BASE_S + LL_AGREE_PER_NODE_S * n;
	/* Rank 0 takes one connection a node; the base covers the kernel's first SYN
	 * retransmissions (1 s, 3 s). Never longer than the user's own agreement bound. */
	ret->reach_s = LL_REACH_BASE_S + LL_REACH_PER_NODE_S * n;
	if (ret->agree_given && ret->reach_s > agree_timeout)
		ret->reach_s = agree_timeout;
	/* torchrun's agents start within moments of each other after the proof: the
	 * rest is Python's import time and how fast rank 0's store takes them. */
	ret->rdzv_s = LL_RDZV_BASE_S + LL_RDZV_PER_NODE_S * n;
}

char *ll_agree_deadline_reason(double base_s, double per_node_s, size_t nnodes)
{
	return ll_asprintf("%g s + %g ms a node, for %zu nodes", base_s, per_node_s * 1000, nnodes);
}
