/* Lint of a RoCE plan's traffic class against the host's QoS state (docs/roce.md):
 * a fabric without any lossless priority and without ECN; a class (profile, user)
 * whose DSCP maps to a priority without PFC while another priority has it; a class
 * that contradicts the one the driver forces; a path MTU below 4096 bytes. The class's
 * upper six bits are its DSCP (RFC 2474); NCCL puts it on every RoCE QP (ncclIbRtrQp). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan-internal.h"

/* The value of a setting and where it came from ("profile oci.yaml:12", "environment"). */
static const char *given(const struct plan_state *s, const char *name, char *from, size_t size)
{
	const struct ll_setting *st = ll_plan_get(s->p, name);

	if (!st || !st->value || st->source == LL_SOURCE_PROBE || st->source == LL_SOURCE_DEFAULT)
		return NULL;
	if (st->origin)
		snprintf(from, size, "%s %s", ll_source_name(st->source), st->origin);
	else
		snprintf(from, size, "%s", ll_source_name(st->source));
	return st->value;
}

static int parse_class(const char *v)
{
	char *end;
	long n = strtol(v, &end, 10);

	return end != v && *end == '\0' && n >= 0 && n <= 255 ? (int)n : -1;
}

static void priorities_text(int mask, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int p = 0; p < 8; p++)
		if (mask & (1 << p))
			len += (size_t)snprintf(buf + len, size - len, "%s%d", len ? ", " : "", p);
}

/* One lint said once for every port it holds on: the first such port's values, and
 * all of them named ("mlx5_0:1, mlx5_1:1"): an 8-port node gets one warning, not 8. */
enum roce_lint { RL_FORCED, RL_LOSSY, RL_LOSSY_ECN_UNKNOWN, RL_TC_NO_PFC, RL_TC_UNMAPPED, RL_SL_NO_PFC, RL_MTU, RL_N };

struct roce_lints {
	struct ll_buf ports[RL_N];
	const struct ll_rdma_device *dev[RL_N];
	const struct ll_rdma_port *port[RL_N];
};

static void note(struct roce_lints *l, enum roce_lint k, const struct ll_rdma_device *d, const struct ll_rdma_port *p)
{
	ll_buf_addf(&l->ports[k], "%s%s:%u", l->ports[k].len ? ", " : "", d->name, p->number);
	if (!l->dev[k]) {
		l->dev[k] = d;
		l->port[k] = p;
	}
}

static void check_port(struct plan_state *s, struct roce_lints *l, const struct ll_rdma_device *d,
		       const struct ll_rdma_port *p, int tc, int sl)
{
	const struct ll_port_qos *q = &p->qos;

	if (!q->read)
		return; /* nothing known to hold a class against */
	if (q->forced_tclass >= 0 && tc >= 0 && tc != q->forced_tclass)
		note(l, RL_FORCED, d, p);
	if (q->pfc_mask == 0 && q->ecn_rp_mask == 0)
		note(l, RL_LOSSY, d, p);
	else if (q->pfc_mask == 0 && q->ecn_rp_mask < 0)
		note(l, RL_LOSSY_ECN_UNKNOWN, d, p);
	if (q->pfc_mask > 0 && tc >= 0 && q->forced_tclass < 0 && q->trust == LL_QOS_TRUST_DSCP) {
		int prio = q->dscp_prio[tc >> 2];

		if (prio < 0)
			note(l, RL_TC_UNMAPPED, d, p);
		else if (!(q->pfc_mask & (1 << prio)))
			note(l, RL_TC_NO_PFC, d, p);
	}
	if (q->pfc_mask > 0 && sl >= 0 && sl < 8 && q->trust == LL_QOS_TRUST_PCP && !(q->pfc_mask & (1 << sl)))
		note(l, RL_SL_NO_PFC, d, p);
	/* iboe_get_mtu(): 96 bytes of RoCE headers below the interface MTU. */
	if (q->active_mtu > 0 && q->active_mtu < 4096)
		note(l, RL_MTU, d, p);
	(void)s;
}

void plan_lint_roce(struct plan_state *s)
{
	const struct plan_net *net = &s->net;
	struct roce_lints l = { 0 };
	char from[256], sl_from[256], pfc[32];
	const char *tc_text, *sl_text;
	int tc, sl;

	if (net->n_chosen == 0 || net->link_layer != LL_LINK_LAYER_ETHERNET)
		return;
	tc_text = given(s, "NCCL_IB_TC", from, sizeof(from));
	sl_text = given(s, "NCCL_IB_SL", sl_from, sizeof(sl_from));
	tc = tc_text ? parse_class(tc_text) : -1;
	sl = sl_text ? parse_class(sl_text) : -1;
	for (size_t k = 0; k < RL_N; k++)
		ll_buf_init(&l.ports[k]);
	for (size_t i = 0; i < net->n_chosen; i++) {
		const struct ll_rdma_device *d = &s->f->rdma[net->chosen_dev[i]];

		check_port(s, &l, d, &d->ports[net->chosen_port[i]], tc, sl);
	}

	if (l.dev[RL_FORCED]) {
		const struct ll_rdma_device *d = l.dev[RL_FORCED];
		const struct ll_rdma_port *p = l.port[RL_FORCED];

		plan_lint(s, LL_LINT_WARNING, "NCCL_IB_TC",
			  "NCCL_IB_TC=%d (%s) contradicts class %d, which the driver forces on %s "
			  "(/sys/class/infiniband/%s/tc/%u/traffic_class): the driver's %d is what the fabric sees",
			  tc, from, p->qos.forced_tclass, l.ports[RL_FORCED].s, d->name, p->number, p->qos.forced_tclass);
	}
	if (l.dev[RL_LOSSY])
		plan_lint(s, LL_LINT_WARNING, "NCCL_IB_TC",
			  "lossy RoCE on %s: no priority has PFC and ECN is off on every priority; under "
			  "congestion packets drop and NCCL's throughput collapses (configure PFC and ECN for one "
			  "priority, docs/roce.md)",
			  l.ports[RL_LOSSY].s);
	if (l.dev[RL_LOSSY_ECN_UNKNOWN]) {
		const struct ll_port_qos *q = &l.port[RL_LOSSY_ECN_UNKNOWN]->qos;

		plan_lint(s, LL_LINT_INFO, "NCCL_IB_TC",
			  "no priority has PFC on %s and whether ECN is on is unknown (%s): RoCE is lossless only "
			  "where ECN (DCQCN) keeps the queues short",
			  l.ports[RL_LOSSY_ECN_UNKNOWN].s, q->ecn_why ? q->ecn_why : "not read");
	}
	if (l.dev[RL_TC_UNMAPPED]) {
		const struct ll_rdma_port *p = l.port[RL_TC_UNMAPPED];

		priorities_text(p->qos.pfc_mask, pfc, sizeof(pfc));
		plan_lint(s, LL_LINT_WARNING, "NCCL_IB_TC",
			  "NCCL_IB_TC=%d (%s) is DSCP %d, which the DCB table maps to no priority on %s, while "
			  "priority %s has PFC: its traffic is not lossless",
			  tc, from, tc >> 2, l.ports[RL_TC_UNMAPPED].s, pfc);
	}
	if (l.dev[RL_TC_NO_PFC]) {
		const struct ll_rdma_port *p = l.port[RL_TC_NO_PFC];

		priorities_text(p->qos.pfc_mask, pfc, sizeof(pfc));
		plan_lint(s, LL_LINT_WARNING, "NCCL_IB_TC",
			  "NCCL_IB_TC=%d (%s) is DSCP %d, priority %d on %s, which has no PFC while priority %s has: "
			  "its traffic is not lossless",
			  tc, from, tc >> 2, p->qos.dscp_prio[tc >> 2], l.ports[RL_TC_NO_PFC].s, pfc);
	}
	if (l.dev[RL_SL_NO_PFC]) {
		const struct ll_rdma_port *p = l.port[RL_SL_NO_PFC];

		priorities_text(p->qos.pfc_mask, pfc, sizeof(pfc));
		plan_lint(s, LL_LINT_WARNING, "NCCL_IB_SL",
			  "NCCL_IB_SL=%d (%s) is priority %d on %s (trust PCP), which has no PFC while priority %s "
			  "has: its traffic is not lossless",
			  sl, sl_from, sl, l.ports[RL_SL_NO_PFC].s, pfc);
	}
	if (l.dev[RL_MTU]) {
		const struct ll_rdma_port *p = l.port[RL_MTU];

		plan_lint(s, LL_LINT_WARNING, "NCCL_IB_HCA",
			  "RoCE path MTU %d on %s (%s MTU %ld): NCCL's RDMA writes travel in %d-byte packets; "
			  "an interface MTU of 4192 or more gives 4096 (RoCE NICs take 9000)",
			  p->qos.active_mtu, l.ports[RL_MTU].s, p->netdev ? p->netdev : "interface", p->qos.netdev_mtu,
			  p->qos.active_mtu);
	}
	for (size_t k = 0; k < RL_N; k++)
		ll_buf_release(&l.ports[k]);
}
