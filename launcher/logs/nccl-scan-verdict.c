/* From what the NCCL log scanner collected per process to a verdict: the transport,
 * GPUDirect RDMA and fallback of each process, folded per host and for the job; and
 * the words that tell a person (see docs/logs.md for the rules). */
#include "nccl-scan-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ------------------------------------------------------------------ */

static const char *const transport_names[] = {
	[LL_NCCL_TRANSPORT_UNKNOWN] = "unknown", [LL_NCCL_TRANSPORT_NONE] = "none",
	[LL_NCCL_TRANSPORT_SOCKET] = "Socket",   [LL_NCCL_TRANSPORT_PLUGIN] = "plugin",
	[LL_NCCL_TRANSPORT_ROCE] = "RoCE",       [LL_NCCL_TRANSPORT_IB] = "IB",
};

const char *ll_nccl_transport_name(enum ll_nccl_transport t)
{
	return (unsigned)t < LL_ARRAY_SIZE(transport_names) ? transport_names[t] : "unknown";
}

const char *ll_nccl_transport_describe(enum ll_nccl_transport t, const char *plugin)
{
	switch (t) {
	case LL_NCCL_TRANSPORT_NONE: return "no network";
	case LL_NCCL_TRANSPORT_SOCKET: return "sockets";
	case LL_NCCL_TRANSPORT_PLUGIN: return plugin ? plugin : "a net plugin";
	case LL_NCCL_TRANSPORT_ROCE: return "RoCE";
	case LL_NCCL_TRANSPORT_IB: return "InfiniBand";
	default: return "unknown transport";
	}
}

static const char *const expect_names[] = {
	[LL_NET_EXPECT_ANY] = "any", [LL_NET_EXPECT_IB] = "ib",
	[LL_NET_EXPECT_ROCE] = "roce", [LL_NET_EXPECT_SOCKET] = "socket",
};

const char *ll_net_expect_name(enum ll_net_expect e)
{
	return (unsigned)e < LL_ARRAY_SIZE(expect_names) ? expect_names[e] : "any";
}

int ll_net_expect_parse(const char *s, enum ll_net_expect *ret)
{
	for (size_t i = 0; i < LL_ARRAY_SIZE(expect_names); i++)
		if (s && strcmp(s, expect_names[i]) == 0) {
			*ret = (enum ll_net_expect)i;
			return 0;
		}
	return -EINVAL;
}

/* ---- verdict ------------------------------------------------------------------ */

static bool name_is_ib(const char *name)
{
	return name && name[0] == 'I' && name[1] == 'B';
}

/* What the host as a whole showed about RDMA being there, or meant to be. */
struct host_evidence {
	bool no_device, verbs_missing, devices, ib_stack, ib_disabled;
};

static void rank_transport(struct ll_nccl_rank *r)
{
	const char *name = NULL;
	bool roce = r->n_devices > 0;

	for (size_t i = 0; i < r->n_devices; i++)
		roce &= r->devices[i].kind == LL_NCCL_DEV_ROCE;

	r->plugin = NULL;
	/* Channels say what carried data; "Using network" what NCCL picked; a device list
	 * that NCCL's IB transport is usable. A `NET/Socket : Using` line alone comes
	 * last: NCCL 2.4 prints it even when IB is then used. */
	if (r->socket_channels > 0)
		name = "Socket";
	else if (r->net_channels > 0)
		name = r->channel_net;
	else if (r->network)
		name = r->network;
	else if (r->n_devices > 0)
		name = "IB";
	else if (r->socket_line)
		name = "Socket";

	if (!name) {
		r->transport = (r->warn_mask & (1u << LL_NCCL_WARN_NO_INTERFACE)) ? LL_NCCL_TRANSPORT_NONE
										  : LL_NCCL_TRANSPORT_UNKNOWN;
	} else if (strcmp(name, "Socket") == 0) {
		r->transport = LL_NCCL_TRANSPORT_SOCKET;
	} else if (name_is_ib(name)) {
		r->transport = roce ? LL_NCCL_TRANSPORT_ROCE : LL_NCCL_TRANSPORT_IB;
		if (strcmp(name, "IB") != 0)
			r->plugin = name;
	} else {
		r->transport = LL_NCCL_TRANSPORT_PLUGIN;
		r->plugin = name;
	}

	if (r->gdr_channels > 0)
		r->gdr = 1;
	else if (r->transport == LL_NCCL_TRANSPORT_SOCKET || r->transport == LL_NCCL_TRANSPORT_NONE)
		r->gdr = 0;
	else if (r->net_channels > 0 || r->gdr_disabled_line)
		r->gdr = 0;
	else if (r->gdr_enabled_line)
		r->gdr = 1;
	else
		r->gdr = -1;
}

static void rank_fallback(struct ll_nccl_rank *r, const struct host_evidence *h, enum ll_net_expect expect)
{
	bool socketish = r->transport == LL_NCCL_TRANSPORT_SOCKET || r->transport == LL_NCCL_TRANSPORT_NONE ||
			 (r->transport == LL_NCCL_TRANSPORT_UNKNOWN && r->ib_no_device);
	const char *why = NULL;

	if (!socketish || expect == LL_NET_EXPECT_SOCKET)
		why = NULL;
	else if (expect == LL_NET_EXPECT_IB)
		why = "InfiniBand was expected";
	else if (expect == LL_NET_EXPECT_ROCE)
		why = "RoCE was expected";
	else if (h->no_device)
		why = "NET/IB found no usable device";
	else if (h->verbs_missing)
		why = "libibverbs or the RDMA net plugin is missing";
	else if (h->devices)
		why = "RDMA devices were listed but sockets carry the traffic";
	else if (h->ib_disabled && h->ib_stack)
		why = "NCCL_IB_DISABLE=1 although an RDMA stack is present";
	r->fallback = why != NULL;
	r->fallback_reason = why;
}

/* Fold a member's transport/GDR/fallback into an aggregate: weakest known transport,
 * GDR off if any member is off, fallback if any member fell back. */
static void fold(enum ll_nccl_transport *t, const char **plugin, int *gdr, bool *fb, const char **why,
		 enum ll_nccl_transport mt, const char *mplugin, int mgdr, bool mfb, const char *mwhy,
		 bool *any_t, bool *any_gdr_on)
{
	if (mt != LL_NCCL_TRANSPORT_UNKNOWN && (!*any_t || mt < *t)) {
		*t = mt;
		*plugin = mplugin;
		*any_t = true;
	}
	if (mgdr == 0)
		*gdr = 0;
	else if (mgdr == 1)
		*any_gdr_on = true;
	if (mfb && !*fb) {
		*fb = true;
		*why = mwhy;
	}
}

static struct ll_nccl_host *host_find(struct ll_ncclscan *s, const char *name)
{
	for (size_t i = s->n_hosts; i-- > 0;)
		if (ll_streq(s->hosts[i].name, name))
			return &s->hosts[i];
	return NULL;
}

void ncclscan_hosts_release(struct ll_ncclscan *s)
{
	for (size_t i = 0; i < s->n_hosts; i++)
		free(s->hosts[i].ranks);
	free(s->hosts);
	s->hosts = NULL;
	s->n_hosts = 0;
}

const struct ll_nccl_verdict *ll_ncclscan_result(struct ll_ncclscan *s)
{
	struct ll_nccl_verdict *v = &s->verdict;
	bool any_t = false, any_on = false;

	ncclscan_hosts_release(s);
	for (size_t i = 0; i < s->n_ranks; i++) {
		struct ll_nccl_rank *r = s->ranks[i];
		struct ll_nccl_host *h = host_find(s, r->host);

		if (!h) {
			h = ll_array_push(&s->hosts, &s->n_hosts, sizeof(*h));
			h->name = r->host;
		}
		*(struct ll_nccl_rank **)ll_array_push(&h->ranks, &h->n_ranks, sizeof(r)) = r;
		rank_transport(r);
	}

	memset(v, 0, sizeof(*v));
	v->gdr = -1;
	for (size_t i = 0; i < s->n_hosts; i++) {
		struct ll_nccl_host *h = &s->hosts[i];
		struct host_evidence ev = { 0 };
		bool h_any_t = false, h_any_on = false;

		for (size_t k = 0; k < h->n_ranks; k++) {
			const struct ll_nccl_rank *r = h->ranks[k];
			ev.no_device |= r->ib_no_device;
			ev.verbs_missing |= (r->warn_mask & (1u << LL_NCCL_WARN_PLUGIN_MISSING)) != 0;
			ev.devices |= r->n_devices > 0;
			ev.ib_stack |= r->n_devices > 0 || name_is_ib(r->plugin_loaded) || name_is_ib(r->network);
			ev.ib_disabled |= r->ib_disabled;
		}
		h->transport = LL_NCCL_TRANSPORT_UNKNOWN;
		h->gdr = -1;
		for (size_t k = 0; k < h->n_ranks; k++) {
			struct ll_nccl_rank *r = h->ranks[k];
			rank_fallback(r, &ev, s->expect);
			fold(&h->transport, &h->plugin, &h->gdr, &h->fallback, &h->fallback_reason, r->transport,
			     r->plugin, r->gdr, r->fallback, r->fallback_reason, &h_any_t, &h_any_on);
			h->warn_mask |= r->warn_mask;
			h->initialized |= r->init_complete;
		}
		if (h->gdr != 0 && h_any_on)
			h->gdr = 1;
		fold(&v->transport, &v->plugin, &v->gdr, &v->fallback, &v->fallback_reason, h->transport,
		     h->plugin, h->gdr, h->fallback, h->fallback_reason, &any_t, &any_on);
	}
	if (v->gdr != 0 && any_on)
		v->gdr = 1;
	v->version = s->version;
	v->expect = s->expect;
	v->hosts = s->hosts;
	v->n_hosts = s->n_hosts;
	v->warnings = s->warnings;
	v->n_warnings = s->n_warnings;
	v->warnings_total = s->warnings_total;
	memcpy(v->warnings_by_class, s->by_class, sizeof(s->by_class));
	v->files = s->files;
	v->lines = s->lines;
	v->skipped = s->skipped;
	v->n_skipped = s->n_skipped;
	v->skipped_total = s->skipped_total;
	v->error = v->fallback;
	for (int c = 0; c < LL_NCCL_WARN_CLASS_COUNT; c++)
		if (s->by_class[c] && ll_nccl_warn_class_is_error((enum ll_nccl_warn_class)c))
			v->error = true;
	return v;
}

/* ---- words for people --------------------------------------------------------- */

/* Split "mlx5_12" into stem "mlx5_" and number 12; -1 when it does not end in digits. */
static long name_number(const char *s, size_t *stem)
{
	size_t n = strlen(s), i = n;

	while (i > 0 && is_digit(s[i - 1]))
		i--;
	*stem = i;
	if (i == n || n - i > 6)
		return -1;
	return strtol(s + i, NULL, 10);
}

static void add_compressed(struct ll_buf *b, char **names, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t stem, stem2, j = i;
		long num = name_number(names[i], &stem);

		while (num >= 0 && j + 1 < n) {
			long next = name_number(names[j + 1], &stem2);
			if (next != num + (long)(j + 1 - i) || stem2 != stem || strncmp(names[i], names[j + 1], stem) != 0)
				break;
			j++;
		}
		if (b->len)
			ll_buf_add(b, ",");
		if (j - i >= 2) {
			ll_buf_addf(b, "%s..%s", names[i], names[j]);
		} else {
			ll_buf_add(b, names[i]);
			for (size_t k = i + 1; k <= j; k++)
				ll_buf_addf(b, ",%s", names[k]);
		}
		i = j + 1;
	}
}

static void push_unique(char ***names, size_t *n, char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*names)[i], name) == 0)
			return;
	*(char **)ll_array_push(names, n, sizeof(char *)) = name;
}

void ll_nccl_host_devices(const struct ll_nccl_host *h, struct ll_buf *b)
{
	_cleanup_free_ char **names = NULL;
	size_t n = 0;
	struct ll_buf tmp;
	bool sockets = h->transport == LL_NCCL_TRANSPORT_SOCKET;

	for (size_t k = 0; k < h->n_ranks; k++) {
		const struct ll_nccl_rank *r = h->ranks[k];
		if (sockets)
			for (size_t i = 0; i < r->n_socket_ifs; i++)
				push_unique(&names, &n, r->socket_ifs[i]);
		else
			for (size_t i = 0; i < r->n_devices; i++)
				push_unique(&names, &n, r->devices[i].name);
	}
	ll_buf_init(&tmp);
	add_compressed(&tmp, names, n);
	ll_buf_add(b, tmp.s);
	ll_buf_release(&tmp);
}

void ll_nccl_host_summary(const struct ll_nccl_host *h, struct ll_buf *b)
{
	struct ll_buf devs;
	bool sharp = false, ro = false;
	const char *gdr = h->gdr == 1 ? "on" : h->gdr == 0 ? "off" : "unknown";

	for (size_t k = 0; k < h->n_ranks; k++) {
		ro |= h->ranks[k]->relaxed_ordering;
		for (size_t i = 0; i < h->ranks[k]->n_devices; i++)
			sharp |= h->ranks[k]->devices[i].sharp;
	}
	ll_buf_init(&devs);
	ll_nccl_host_devices(h, &devs);
	ll_buf_addf(b, "NCCL on %s: %s", h->name ? h->name : "(no host prefix)",
		    ll_nccl_transport_describe(h->transport, h->plugin));
	if (h->plugin && h->transport != LL_NCCL_TRANSPORT_PLUGIN)
		ll_buf_addf(b, " (plugin %s)", h->plugin);
	if (devs.len)
		ll_buf_addf(b, " over %s", devs.s);
	if (sharp || ro)
		ll_buf_addf(b, " [%s%s%s]", sharp ? "SHARP" : "", sharp && ro ? ", " : "",
			    ro ? "relaxed ordering" : "");
	ll_buf_addf(b, ", GPUDirect RDMA %s", gdr);
	if (h->fallback)
		ll_buf_addf(b, ", FALLBACK: %s", h->fallback_reason);
	ll_buf_release(&devs);
}
