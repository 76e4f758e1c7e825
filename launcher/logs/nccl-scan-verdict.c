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

static const char *const path_names[] = {
	[LL_NCCL_PATH_NET] = "network", [LL_NCCL_PATH_P2P] = "P2P", [LL_NCCL_PATH_SHM] = "SHM",
	[LL_NCCL_PATH_NVLS] = "NVLS",   [LL_NCCL_PATH_COLLNET] = "CollNet",
};

const char *ll_nccl_path_name(enum ll_nccl_path p)
{
	return (unsigned)p < LL_ARRAY_SIZE(path_names) ? path_names[p] : "network";
}

static bool name_is_ib(const char *name)
{
	return name && name[0] == 'I' && name[1] == 'B';
}

static bool name_is_socket(const char *name)
{
	return name && strcmp(name, "Socket") == 0;
}

/* The fallback reasons, in the order they are given (docs/logs.md). */
static const char *const REASON_IB = "InfiniBand was expected";
static const char *const REASON_ROCE = "RoCE was expected";
static const char *const REASON_PLUGIN = "the net plugin failed to load";
static const char *const REASON_VERBS = "libibverbs is missing";
static const char *const REASON_NO_DEVICE = "NET/IB found no usable device";
static const char *const REASON_LISTED = "RDMA devices were listed but sockets carry the traffic";
static const char *const REASON_DISABLED = "NCCL_IB_DISABLE=1 although an RDMA stack is present";

/* What the host as a whole showed about RDMA being there, or meant to be, and the first
 * line that showed each. */
struct host_evidence {
	const struct ll_nccl_proof *plugin_failed, *verbs_missing, *no_device, *listed, *ib_disabled;
	bool rdma_plugin, ibext_disabled;
};

static const struct ll_nccl_proof *proof_of(struct ll_nccl_rank *r, enum proof_kind k)
{
	const struct ll_nccl_proof *p = &rank_state_of(r)->proofs[k];

	return p->line ? p : NULL;
}

static void first_proof(const struct ll_nccl_proof **dst, const struct ll_nccl_proof *p)
{
	if (!*dst && p)
		*dst = p;
}

/* NCCL 2.4.2 to 2.4.7 set up the socket transport first, for bootstrap, and print its
 * `NET/Socket : Using` line whatever they then use (G2); from 2.4.8 it is printed only
 * when sockets are chosen (G14). Does this process's line prove sockets? */
static bool socket_line_proves(struct ll_nccl_rank *r, int job_version)
{
	int v = rank_state_of(r)->version_code ? rank_state_of(r)->version_code : job_version;

	return r->socket_line_late || r->modern || v >= 20408;
}

/* The network name the process's channels or chosen networks show, weakest first. */
static const char *comms_network(const struct ll_nccl_rank *r)
{
	const char *name = r->network;

	for (size_t i = 0; i < r->n_comms; i++)
		if (name_is_socket(r->comms[i].network))
			return "Socket";
	return name;
}

static void name_transport(const char *name, bool roce, enum ll_nccl_transport *t, const char **plugin)
{
	*plugin = NULL;
	if (name_is_socket(name)) {
		*t = LL_NCCL_TRANSPORT_SOCKET;
	} else if (name_is_ib(name)) {
		*t = roce ? LL_NCCL_TRANSPORT_ROCE : LL_NCCL_TRANSPORT_IB;
		if (strcmp(name, "IB") != 0)
			*plugin = name;
	} else {
		*t = LL_NCCL_TRANSPORT_PLUGIN;
		*plugin = name;
	}
}

static bool all_roce(const struct ll_nccl_rank *r)
{
	bool roce = r->n_devices > 0;

	for (size_t i = 0; i < r->n_devices; i++)
		roce &= r->devices[i].kind == LL_NCCL_DEV_ROCE;
	return roce;
}

/* The network name NCCL gives the aws-ofi-nccl plugin: "AWS Libfabric" up to 1.12,
 * "Libfabric" from 1.13.0 (aws-ofi-nccl commit 7c014f0d, src/nccl_ofi_interface_nvidia.c);
 * the plugin's own name when its version was not printed. */
static const char *ofi_network(const struct ll_nccl_rank *r)
{
	const char *v = r->ofi_version;
	long major, minor;
	char *e;

	if (!v)
		return "aws-ofi-nccl";
	major = strtol(v, &e, 10);
	minor = *e == '.' ? strtol(e + 1, NULL, 10) : 0;
	return major > 1 || (major == 1 && minor >= 13) ? "Libfabric" : "AWS Libfabric";
}

/* Transport of a process, first rule that applies (docs/logs.md, "From evidence to
 * verdict"); *via is the line that proved sockets. */
static void rank_transport(struct ll_nccl_rank *r, int job_version, const struct ll_nccl_proof **via)
{
	const char *name = NULL, *net = comms_network(r);
	enum proof_kind pk = PF_COUNT;
	bool proves = socket_line_proves(r, job_version);

	if (r->socket_channels > 0)
		name = "Socket", pk = PF_SOCKET_CHANNEL;
	else if (r->net_channels > 0 && r->channel_net)
		name = r->channel_net;
	else if (net)
		name = net, pk = PF_NETWORK_SOCKET;
	else if (r->no_network)
		name = NULL;
	else if (r->net_named)
		name = r->net_named, pk = PF_NAMED_SOCKET;
	else if (r->ib_used)
		name = "IB";
	else if (r->socket_threads)
		name = "Socket", pk = PF_SOCKET_THREADS;
	else if (r->socket_trace && proves)
		name = "Socket", pk = PF_SOCKET_TRACE;
	else if (r->socket_line && r->socket_line_late)
		name = "Socket", pk = PF_SOCKET_LINE;
	else if (r->ofi_provider)
		name = ofi_network(r); /* G25: before NCCL's own IB, as NCCL tries plugins first */
	else if (r->ib_listed || r->n_devices > 0)
		name = "IB";
	else if (r->socket_line && proves)
		name = "Socket", pk = PF_SOCKET_LINE;

	*via = NULL;
	if (!name) {
		r->transport = r->no_network || (r->warn_mask & (1u << LL_NCCL_WARN_NO_INTERFACE))
				       ? LL_NCCL_TRANSPORT_NONE
				       : LL_NCCL_TRANSPORT_UNKNOWN;
		r->plugin = NULL;
	} else {
		name_transport(name, all_roce(r), &r->transport, &r->plugin);
		if (r->transport == LL_NCCL_TRANSPORT_SOCKET && pk != PF_COUNT)
			*via = proof_of(r, pk);
	}

	if (r->gdr_channels > 0)
		r->gdr = 1;
	else if (r->transport == LL_NCCL_TRANSPORT_SOCKET || r->transport == LL_NCCL_TRANSPORT_NONE)
		r->gdr = 0;
	else if (r->net_channels > 0 || r->gdr_disabled_line)
		r->gdr = 0;
	else if (r->gdr_ring >= 0)
		r->gdr = r->gdr_ring;
	else if (r->gdr_enabled_line)
		r->gdr = 1;
	else
		r->gdr = -1;
}

static void rank_fallback(struct ll_nccl_rank *r, const struct host_evidence *h, enum ll_net_expect expect,
			  const struct ll_nccl_proof *via)
{
	const char *why = NULL;
	const struct ll_nccl_proof *cause = NULL;

	r->fallback = false;
	r->fallback_reason = NULL;
	r->fallback_cause = r->fallback_via = NULL;
	if (expect == LL_NET_EXPECT_SOCKET || r->transport == LL_NCCL_TRANSPORT_NONE)
		return;
	if (r->transport == LL_NCCL_TRANSPORT_SOCKET) {
		/* Sockets are proven: a fallback when RDMA was expected, or when the host shows
		 * why RDMA is not in use (its line is kept either way). */
		if ((cause = h->plugin_failed))
			why = REASON_PLUGIN;
		else if ((cause = h->verbs_missing))
			why = REASON_VERBS;
		else if ((cause = h->no_device))
			why = REASON_NO_DEVICE;
		else if ((cause = h->listed))
			why = REASON_LISTED;
		else if (h->ib_disabled && h->rdma_plugin && !h->ibext_disabled)
			why = REASON_DISABLED, cause = h->ib_disabled;
		if (expect == LL_NET_EXPECT_IB)
			why = REASON_IB;
		else if (expect == LL_NET_EXPECT_ROCE)
			why = REASON_ROCE;
	} else if (r->transport == LL_NCCL_TRANSPORT_UNKNOWN && (r->ib_no_device || r->verbs_missing) &&
		   !r->ib_listed && !r->ib_used && !r->plugin_loaded && r->n_devices == 0) {
		/* NCCL tried IB and could not use it, and no plugin is left to try before
		 * sockets (an RDMA plugin's "No device found" is followed by NCCL's own IB). */
		cause = proof_of(r, r->verbs_missing ? PF_VERBS_MISSING : PF_NO_DEVICE);
		why = expect == LL_NET_EXPECT_IB     ? REASON_IB
		      : expect == LL_NET_EXPECT_ROCE ? REASON_ROCE
		      : r->verbs_missing             ? REASON_VERBS
						     : REASON_NO_DEVICE;
	}
	if (!why)
		return;
	r->fallback = true;
	r->fallback_reason = why;
	r->fallback_cause = cause;
	r->fallback_via = via;
	r->gdr = 0;
}

/* Fold a member's transport/GDR into an aggregate: weakest known transport, GDR off if
 * any member is off (on is decided by the caller from *any_gdr_on). */
static void fold(enum ll_nccl_transport *t, const char **plugin, int *gdr, enum ll_nccl_transport mt,
		 const char *mplugin, int mgdr, bool *any_t, bool *any_gdr_on)
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
	free(s->comms);
	s->comms = NULL;
	s->n_comms = 0;
}

static void comm_verdict(const struct ll_nccl_rank *r, struct ll_nccl_comm *c)
{
	const char *name = NULL;

	c->paths = 0;
	if (c->net_channels || c->socket_channels)
		c->paths |= 1u << LL_NCCL_PATH_NET;
	if (c->p2p_channels)
		c->paths |= 1u << LL_NCCL_PATH_P2P;
	if (c->shm_channels)
		c->paths |= 1u << LL_NCCL_PATH_SHM;
	if (c->nvls_channels)
		c->paths |= 1u << LL_NCCL_PATH_NVLS;
	if (c->collnet_channels)
		c->paths |= 1u << LL_NCCL_PATH_COLLNET;
	if (c->socket_channels)
		name = "Socket";
	else if (c->net_channels && c->channel_net)
		name = c->channel_net;
	else
		name = c->network;
	c->plugin = NULL;
	if (name)
		name_transport(name, all_roce(r), &c->transport, &c->plugin);
	else
		c->transport = LL_NCCL_TRANSPORT_UNKNOWN;
	c->gdr = c->gdr_channels                                 ? 1
		 : c->transport == LL_NCCL_TRANSPORT_SOCKET      ? 0
		 : c->net_channels                               ? 0
								 : -1;
}

/* Group the processes' communicators by commId; one named only by its pointer is an
 * entry of its own (pointers are per process). */
static void job_comms(struct ll_ncclscan *s)
{
	_cleanup_free_ size_t *last_host = NULL; /* per entry: index + 1 of the last host counted */
	size_t n_last = 0;

	for (size_t h = 0; h < s->n_hosts; h++) {
		const struct ll_nccl_host *host = &s->hosts[h];
		for (size_t k = 0; k < host->n_ranks; k++) {
			struct ll_nccl_rank *r = host->ranks[k];
			for (size_t i = 0; i < r->n_comms; i++) {
				struct ll_nccl_comm *c = &r->comms[i];
				struct ll_nccl_job_comm *j = NULL;
				size_t x;

				comm_verdict(r, c);
				if (!c->id && !c->ptr)
					continue;
				for (x = 0; c->id && x < s->n_comms; x++)
					if (ll_streq(s->comms[x].id, c->id)) {
						j = &s->comms[x];
						break;
					}
				if (!j) {
					j = ll_array_push(&s->comms, &s->n_comms, sizeof(*j));
					j->id = c->id;
					j->ptr = c->id ? NULL : c->ptr;
					j->nranks = -1;
					j->gdr = -1;
					*(size_t *)ll_array_push(&last_host, &n_last, sizeof(size_t)) = 0;
					x = s->n_comms - 1;
				}
				if (j->nranks < 0)
					j->nranks = c->nranks;
				j->n_members++;
				if (last_host[x] != h + 1) {
					j->n_hosts++;
					last_host[x] = h + 1;
				}
				j->paths |= c->paths;
				if (c->transport != LL_NCCL_TRANSPORT_UNKNOWN &&
				    (j->transport == LL_NCCL_TRANSPORT_UNKNOWN || c->transport < j->transport)) {
					j->transport = c->transport;
					j->plugin = c->plugin;
				}
				if (c->gdr == 0 || (c->gdr == 1 && j->gdr == -1))
					j->gdr = c->gdr;
			}
		}
	}
}

const struct ll_nccl_verdict *ll_ncclscan_result(struct ll_ncclscan *s)
{
	struct ll_nccl_verdict *v = &s->verdict;
	bool any_t = false, any_on = false;
	int job_version = s->version ? ncclscan_version_code(s->version, strlen(s->version)) : 0;
	const struct ll_nccl_proof **vias;

	ncclscan_hosts_release(s);
	for (size_t i = 0; i < s->n_ranks; i++) {
		struct ll_nccl_rank *r = s->ranks[i];
		struct rank_state *rs = rank_state_of(r);

		/* The launcher's rank where NCCL's communicator lines gave none. */
		if (r->rank < 0 && rs->fill_rank >= 0)
			r->rank = rs->fill_rank;
		r->init_failure = r->init_failed ? rs->init_failure : NULL;
		r->init_cause = r->init_failed ? proof_of(r, rs->init_cause) : NULL;
		r->init_trace = r->init_failed ? proof_of(r, PF_INIT_TRACE) : NULL;
	}
	vias = ll_calloc(s->n_ranks ? s->n_ranks : 1, sizeof(*vias));
	for (size_t i = 0; i < s->n_ranks; i++) {
		struct ll_nccl_rank *r = s->ranks[i];
		struct ll_nccl_host *h = host_find(s, r->host);

		if (!h) {
			h = ll_array_push(&s->hosts, &s->n_hosts, sizeof(*h));
			h->name = r->host;
		}
		*(struct ll_nccl_rank **)ll_array_push(&h->ranks, &h->n_ranks, sizeof(r)) = r;
		rank_transport(r, job_version, &vias[i]);
	}

	memset(v, 0, sizeof(*v));
	v->gdr = -1;
	for (size_t i = 0; i < s->n_hosts; i++) {
		struct ll_nccl_host *h = &s->hosts[i];
		struct host_evidence ev = { 0 };
		bool h_any_t = false, h_any_on = false;

		for (size_t k = 0; k < h->n_ranks; k++) {
			struct ll_nccl_rank *r = h->ranks[k];
			first_proof(&ev.plugin_failed, proof_of(r, PF_PLUGIN_FAILED));
			first_proof(&ev.verbs_missing, proof_of(r, PF_VERBS_MISSING));
			first_proof(&ev.no_device, proof_of(r, PF_NO_DEVICE));
			first_proof(&ev.listed, proof_of(r, PF_RDMA_LISTED));
			first_proof(&ev.ib_disabled, proof_of(r, PF_IB_DISABLED));
			ev.rdma_plugin |= name_is_ib(r->plugin_loaded) || name_is_ib(r->network);
			ev.ibext_disabled |= r->ibext_disabled;
		}
		h->transport = LL_NCCL_TRANSPORT_UNKNOWN;
		h->gdr = -1;
		for (size_t k = 0; k < h->n_ranks; k++) {
			struct ll_nccl_rank *r = h->ranks[k];
			size_t idx = 0;

			while (s->ranks[idx] != r)
				idx++;
			rank_fallback(r, &ev, s->expect, vias[idx]);
			fold(&h->transport, &h->plugin, &h->gdr, r->transport, r->plugin, r->gdr, &h_any_t, &h_any_on);
			if (r->fallback && !h->fallback) {
				h->fallback = true;
				h->fallback_reason = r->fallback_reason;
				h->fallback_cause = r->fallback_cause;
				h->fallback_via = r->fallback_via;
			}
			h->warn_mask |= r->warn_mask;
			h->initialized |= r->init_complete;
			if (r->init_failed && !h->init_failed) {
				h->init_failed = true;
				h->init_failure = r->init_failure;
				h->init_cause = r->init_cause;
				h->init_trace = r->init_trace;
			}
		}
		if (h->gdr != 0 && h_any_on)
			h->gdr = 1;
		h->unknown = h->transport == LL_NCCL_TRANSPORT_UNKNOWN && !h->fallback && !h->init_failed;
		v->hosts_unknown += h->unknown;
		v->hosts_init_failed += h->init_failed;
		fold(&v->transport, &v->plugin, &v->gdr, h->transport, h->plugin, h->gdr, &any_t, &any_on);
		if (h->fallback && !v->fallback) {
			v->fallback = true;
			v->fallback_reason = h->fallback_reason;
		}
	}
	free(vias);
	if (v->gdr != 0 && any_on)
		v->gdr = 1;
	job_comms(s);
	v->version = s->version;
	v->expect = s->expect;
	v->hosts = s->hosts;
	v->n_hosts = s->n_hosts;
	v->comms = s->comms;
	v->n_comms = s->n_comms;
	v->warnings = s->warnings;
	v->n_warnings = s->n_warnings;
	v->warnings_total = s->warnings_total;
	memcpy(v->warnings_by_class, s->by_class, sizeof(s->by_class));
	v->files = s->files;
	v->lines = s->lines;
	v->skipped = s->skipped;
	v->n_skipped = s->n_skipped;
	v->skipped_total = s->skipped_total;
	v->error = v->fallback || v->hosts_init_failed > 0;
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

/* " (aws-ofi-nccl 1.11.0-aws, provider efa)": the net plugin the host's NET/OFI lines
 * name (G6), whatever it turned out to carry. */
static void ofi_words(const struct ll_nccl_host *h, struct ll_buf *b)
{
	const char *version = NULL, *provider = NULL;

	for (size_t k = 0; k < h->n_ranks; k++) {
		if (!version)
			version = h->ranks[k]->ofi_version;
		if (!provider)
			provider = h->ranks[k]->ofi_provider;
	}
	ll_buf_add(b, " (");
	if (!(h->transport == LL_NCCL_TRANSPORT_PLUGIN && ll_streq(h->plugin, "aws-ofi-nccl")))
		ll_buf_addf(b, "aws-ofi-nccl%s%s%s", version ? " " : "", version ? version : "", provider ? ", " : "");
	if (provider)
		ll_buf_addf(b, "provider %s", provider);
	else if (h->transport != LL_NCCL_TRANSPORT_PLUGIN)
		ll_buf_add(b, " loaded");
	ll_buf_add(b, ")");
}

void ll_nccl_host_summary(const struct ll_nccl_host *h, struct ll_buf *b)
{
	struct ll_buf devs;
	bool sharp = false, ro = false, ofi = false;
	const char *gdr = h->gdr == 1 ? "on" : h->gdr == 0 ? "off" : "unknown";

	for (size_t k = 0; k < h->n_ranks; k++) {
		ofi |= h->ranks[k]->ofi;
		ro |= h->ranks[k]->relaxed_ordering;
		for (size_t i = 0; i < h->ranks[k]->n_devices; i++)
			sharp |= h->ranks[k]->devices[i].sharp;
	}
	if (h->init_failed) {
		/* What NCCL would have used does not matter: it did not start. */
		ll_buf_addf(b, "NCCL init failed on %s: %s", h->name ? h->name : "(no host prefix)", h->init_failure);
		return;
	}
	ll_buf_init(&devs);
	ll_nccl_host_devices(h, &devs);
	ll_buf_addf(b, "NCCL on %s: %s", h->name ? h->name : "(no host prefix)",
		    ll_nccl_transport_describe(h->transport, h->plugin));
	if (h->plugin && h->transport != LL_NCCL_TRANSPORT_PLUGIN)
		ll_buf_addf(b, " (plugin %s)", h->plugin);
	if (ofi)
		ofi_words(h, b);
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

void ll_nccl_proof_describe(const struct ll_nccl_proof *p, struct ll_buf *b)
{
	if (p && p->line)
		ll_buf_addf(b, "%s:%lu: %s", p->file, p->line, p->text);
}

void ll_nccl_comm_summary(const struct ll_nccl_job_comm *c, struct ll_buf *b)
{
	const char *gdr = c->gdr == 1 ? "on" : c->gdr == 0 ? "off" : "unknown";
	bool first = true;

	if (c->id)
		ll_buf_addf(b, "communicator %s (", c->id);
	else
		ll_buf_addf(b, "communicator comm %s (", c->ptr);
	if (c->nranks >= 0)
		ll_buf_addf(b, "%d ranks, ", c->nranks);
	ll_buf_addf(b, "%zu seen on %zu host%s): ", c->n_members, c->n_hosts, c->n_hosts == 1 ? "" : "s");
	for (int p = 0; p < LL_NCCL_PATH_COUNT; p++) {
		if (!(c->paths & (1u << p)))
			continue;
		if (!first)
			ll_buf_add(b, ", ");
		first = false;
		if (p == LL_NCCL_PATH_NET) {
			ll_buf_add(b, ll_nccl_transport_describe(c->transport, c->plugin));
			if (c->plugin && c->transport != LL_NCCL_TRANSPORT_PLUGIN)
				ll_buf_addf(b, " (plugin %s)", c->plugin);
			ll_buf_addf(b, " with GPUDirect RDMA %s", gdr);
		} else {
			ll_buf_add(b, ll_nccl_path_name((enum ll_nccl_path)p));
		}
	}
	if (first) {
		if (c->transport != LL_NCCL_TRANSPORT_UNKNOWN)
			ll_buf_addf(b, "network %s chosen, ", ll_nccl_transport_describe(c->transport, c->plugin));
		ll_buf_add(b, "no connection seen");
	}
}
