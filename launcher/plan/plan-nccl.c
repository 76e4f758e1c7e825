/* The NCCL the plan is for (llmlaunch/nccl-lib.h, found by the caller) and the rules
 * that depend on its version: one table, each rule with the NCCL release that makes
 * it true. An unknown version keeps the behaviour that fits every NCCL, and says so. */
#include <stdio.h>
#include <string.h>

#include "plan-internal.h"

struct nccl_rule {
	const char *id;
	int major, minor, patch;  /* first release it holds for */
	const char *since;        /* where that is stated */
};

static const struct nccl_rule nccl_rules[] = {
	/* NCCL_IB_GID_INDEX defaults to -1: ncclIbGetGidIndex picks a RoCE v2 GID of the
	 * address family NCCL_IB_ADDR_FAMILY names (IPv4) per port (src/transport/net_ib). */
	{ "roce-gid-auto", 2, 21, 5, "NCCL 2.21.5 release notes (RoCE GID index chosen automatically)" },
	/* ncclIbRtrQp: the control (FIFO) QPs carry NCCL_IB_FIFO_TC, NCCL_IB_TC when unset. */
	{ "ib-fifo-tc", 2, 22, 3, "NCCL 2.22.3 release notes (NCCL_IB_FIFO_TC added)" },
	/* An environment plugin (libnccl-env*.so, NCCL_ENV_PLUGIN) answers NCCL's own
	 * ncclGetEnv: it can hand NCCL other values than the ones exported. */
	{ "env-plugin", 2, 28, 3, "NCCL 2.28.3 release notes (environment plugin API)" },
};

static const struct nccl_rule *rule_find(const char *id)
{
	for (size_t i = 0; i < LL_ARRAY_SIZE(nccl_rules); i++)
		if (strcmp(nccl_rules[i].id, id) == 0)
			return &nccl_rules[i];
	return NULL;
}

static bool version_known(const struct ll_nccl_lib *l)
{
	return l && l->major >= 0;
}

enum ll_tristate plan_nccl_has(const struct plan_state *s, const char *id, const char **ret_since)
{
	const struct ll_nccl_lib *l = s->in->nccl;
	const struct nccl_rule *r = rule_find(id);
	long have, need;

	if (ret_since)
		*ret_since = r ? r->since : "";
	if (!r || !version_known(l))
		return LL_UNKNOWN;
	have = (long)l->major * 1000000 + l->minor * 1000 + l->patch;
	need = (long)r->major * 1000000 + r->minor * 1000 + r->patch;
	return have >= need ? LL_YES : LL_NO;
}

const char *plan_nccl_version_text(const struct plan_state *s, char *buf, size_t size)
{
	const struct ll_nccl_lib *l = s->in->nccl;

	if (!version_known(l))
		return NULL;
	snprintf(buf, size, "%d.%d.%d", l->major, l->minor, l->patch);
	return buf;
}

/* "; plugins beside it: net /usr/lib/libnccl-net.so, env /opt/x/libnccl-env.so". */
static void plugins_text(const struct ll_nccl_lib *l, struct ll_buf *b)
{
	for (size_t i = 0; i < l->n_plugins; i++)
		ll_buf_addf(b, "%s%s %s", i ? ", " : "; NCCL plugins on its path: ",
			    ll_nccl_plugin_kind_name(l->plugins[i].kind), l->plugins[i].path);
}

void plan_nccl_decide(struct plan_state *s)
{
	const struct ll_nccl_lib *l = s->in->nccl;
	struct ll_buf plugins;
	char v[32];

	ll_buf_init(&plugins);
	if (l)
		plugins_text(l, &plugins);

	if (!l || !l->searched)
		plan_decide(s, "nccl_version", NULL, LL_SOURCE_DEFAULT, false,
			    "not searched (a snapshot: the node's libraries are not in it): version rules as for "
			    "any NCCL");
	else if (!version_known(l))
		plan_decide(s, "nccl_version", NULL, LL_SOURCE_PROBE, false,
			    "unknown (%s): version rules as for any NCCL%s", l->why_unknown ? l->why_unknown : "",
			    plugins.len ? plugins.s : "");
	else
		plan_decide(s, "nccl_version", plan_nccl_version_text(s, v, sizeof(v)), LL_SOURCE_PROBE, false,
			    "%s, found through %s; version from %s%s", l->path, l->source, l->version_from,
			    plugins.len ? plugins.s : "");
	ll_buf_release(&plugins);
}

void plan_lint_nccl(struct plan_state *s)
{
	const struct ll_nccl_lib *l = s->in->nccl;
	const struct ll_setting *fifo = ll_plan_get(s->p, "NCCL_IB_FIFO_TC");
	const char *since;
	char v[32];

	if (fifo && fifo->value && plan_nccl_has(s, "ib-fifo-tc", &since) == LL_NO)
		plan_lint(s, LL_LINT_WARNING, "NCCL_IB_FIFO_TC",
			  "NCCL_IB_FIFO_TC=%s (%s%s%s) means nothing to NCCL %s, which the workers load: it came "
			  "with NCCL 2.22.3 (%s)",
			  fifo->value, ll_source_name(fifo->source), fifo->origin ? " " : "",
			  fifo->origin ? fifo->origin : "", plan_nccl_version_text(s, v, sizeof(v)), since);
	if (!l)
		return;
	for (size_t i = 0; i < l->n_plugins; i++) {
		const struct ll_nccl_plugin *p = &l->plugins[i];
		enum ll_tristate has;

		if (p->kind != LL_NCCL_PLUGIN_ENV)
			continue;
		has = plan_nccl_has(s, "env-plugin", &since);
		if (has == LL_YES)
			plan_lint(s, LL_LINT_WARNING, "NCCL_ENV_PLUGIN",
				  "NCCL %s loads the environment plugin %s, which can override every NCCL variable "
				  "llmlaunch exports (%s): explain's values may not be what NCCL uses",
				  plan_nccl_version_text(s, v, sizeof(v)), p->path, since);
		else if (has == LL_UNKNOWN)
			plan_lint(s, LL_LINT_INFO, "NCCL_ENV_PLUGIN",
				  "an NCCL environment plugin (%s) is on the library path; NCCL 2.28.3 and later load it "
				  "and it can override what llmlaunch exports; this NCCL's version is unknown",
				  p->path);
	}
}
