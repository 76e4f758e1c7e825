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

static void lint_port(struct plan_state *s, const struct ll_rdma_device *d, const struct ll_rdma_port *p)
{
	const struct ll_port_qos *q = &p->qos;
	char from[256], sl_from[256], pfc[32];
	const char *tc_text = given(s, "NCCL_IB_TC", from, sizeof(from));
	const char *sl_text = given(s, "NCCL_IB_SL", sl_from, sizeof(sl_from));
	int tc = tc_text ? parse_class(tc_text) : -1;

	if (q->forced_tclass >= 0 && tc >= 0 && tc != q->forced_tclass)
		plan_lint(s, LL_LINT_WARNING, "NCCL_IB_TC",
			  "NCCL_IB_TC=%d (%s) contradicts class %d, which the driver forces on %s:%u "
			  "(/sys/class/infiniband/%s/tc/%u/traffic_class): the driver's %d is what the fabric sees",
			  tc, from, q->forced_tclass, d->name, p->number, d->name, p->number, q->forced_tclass);
	if (q->pfc_mask == 0 && q->ecn_rp_mask == 0)
		plan_lint(s, LL_LINT_WARNING, "NCCL_IB_TC",
			  "lossy RoCE on %s:%u: no priority has PFC and ECN is off on every priority; under "
			  "congestion packets drop and NCCL's throughput collapses (configure PFC and ECN for one "
			  "priority, docs/roce.md)",
			  d->name, p->number);
	else if (q->pfc_mask == 0 && q->ecn_rp_mask < 0)
		plan_lint(s, LL_LINT_INFO, "NCCL_IB_TC",
			  "no priority has PFC on %s:%u and whether ECN is on is unknown (%s): RoCE is lossless only "
			  "where ECN (DCQCN) keeps the queues short",
			  d->name, p->number, q->ecn_why ? q->ecn_why : "not read");
	if (q->pfc_mask > 0) {
		priorities_text(q->pfc_mask, pfc, sizeof(pfc));
		if (tc >= 0 && q->forced_tclass < 0 && q->trust == LL_QOS_TRUST_DSCP) {
			int prio = q->dscp_prio[tc >> 2];

			if (prio < 0)
				plan_lint(s, LL_LINT_WARNING, "NCCL_IB_TC",
					  "NCCL_IB_TC=%d (%s) is DSCP %d, which the DCB table of %s maps to no priority, "
					  "while priority %s has PFC on %s:%u: its traffic is not lossless",
					  tc, from, tc >> 2, p->netdev ? p->netdev : "the port", pfc, d->name, p->number);
			else if (!(q->pfc_mask & (1 << prio)))
				plan_lint(s, LL_LINT_WARNING, "NCCL_IB_TC",
					  "NCCL_IB_TC=%d (%s) is DSCP %d, priority %d on %s:%u, which has no PFC while "
					  "priority %s has: its traffic is not lossless",
					  tc, from, tc >> 2, prio, d->name, p->number, pfc);
		}
		if (sl_text && q->trust == LL_QOS_TRUST_PCP) {
			int sl = parse_class(sl_text);

			if (sl >= 0 && sl < 8 && !(q->pfc_mask & (1 << sl)))
				plan_lint(s, LL_LINT_WARNING, "NCCL_IB_SL",
					  "NCCL_IB_SL=%d (%s) is priority %d on %s:%u (trust PCP), which has no PFC "
					  "while priority %s has: its traffic is not lossless",
					  sl, sl_from, sl, d->name, p->number, pfc);
		}
	}
	/* iboe_get_mtu(): 96 bytes of RoCE headers below the interface MTU. */
	if (q->active_mtu > 0 && q->active_mtu < 4096)
		plan_lint(s, LL_LINT_WARNING, "NCCL_IB_HCA",
			  "RoCE path MTU %d on %s:%u (%s MTU %ld): NCCL's RDMA writes travel in %d-byte packets; "
			  "an interface MTU of 4192 or more gives 4096 (RoCE NICs take 9000)",
			  q->active_mtu, d->name, p->number, p->netdev ? p->netdev : "interface", q->netdev_mtu,
			  q->active_mtu);
}

void plan_lint_roce(struct plan_state *s)
{
	const struct plan_net *net = &s->net;

	if (net->n_chosen == 0 || net->link_layer != LL_LINK_LAYER_ETHERNET)
		return;
	for (size_t i = 0; i < net->n_chosen; i++) {
		const struct ll_rdma_device *d = &s->f->rdma[net->chosen_dev[i]];

		lint_port(s, d, &d->ports[net->chosen_port[i]]);
	}
}
