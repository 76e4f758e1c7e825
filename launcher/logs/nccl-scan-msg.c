/* What an NCCL message says: the recognisers for the few kinds of INFO line that tell
 * the network story (nccl-scan.c picks which one a line needs), WARN records and their
 * classes, the NCCL version, and device lists wrapped onto continuation lines. */
#include "nccl-scan-internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Replace *dst with a copy of (s, n) unless it already holds exactly that. */
static void set_str(char **dst, const char *s, size_t n)
{
	if (*dst && strlen(*dst) == n && memcmp(*dst, s, n) == 0)
		return;
	free(*dst);
	*dst = ll_strndup(s, n);
}

/* ---- warning classes ---------------------------------------------------------- */

static const char *const warn_class_names[] = {
	[LL_NCCL_WARN_IB_COMPLETION] = "ib-completion", [LL_NCCL_WARN_IB_VERBS_CALL] = "ib-verbs-call",
	[LL_NCCL_WARN_SOCKET] = "socket",               [LL_NCCL_WARN_NO_INTERFACE] = "no-interface",
	[LL_NCCL_WARN_PLUGIN_MISSING] = "plugin-missing", [LL_NCCL_WARN_OTHER] = "other",
};

const char *ll_nccl_warn_class_name(enum ll_nccl_warn_class c)
{
	return (unsigned)c < LL_ARRAY_SIZE(warn_class_names) ? warn_class_names[c] : "other";
}

bool ll_nccl_warn_class_is_error(enum ll_nccl_warn_class c)
{
	return c == LL_NCCL_WARN_IB_COMPLETION || c == LL_NCCL_WARN_IB_VERBS_CALL ||
	       c == LL_NCCL_WARN_SOCKET || c == LL_NCCL_WARN_NO_INTERFACE;
}

static bool contains_ci(const char *s, size_t n, const char *lit)
{
	size_t m = strlen(lit);

	for (size_t i = 0; i + m <= n; i++)
		if (strncasecmp(s + i, lit, m) == 0)
			return true;
	return false;
}

enum ll_nccl_warn_class ll_nccl_warn_classify(const char *t, size_t n)
{
	if (FIND(t, n, "Got completion") || contains_ci(t, n, "completion with error") ||
	    (FIND(t, n, "NET/IB") && FIND(t, n, "vendor err")))
		return LL_NCCL_WARN_IB_COMPLETION;
	if (FIND(t, n, "libibverbs") || contains_ci(t, n, "failed to initialize any net plugin") ||
	    contains_ci(t, n, "failed to open libnccl-net") || FIND(t, n, "NET/Plugin"))
		return LL_NCCL_WARN_PLUGIN_MISSING;
	if (FIND(t, n, "ibv_") || FIND(t, n, "wrap_ibv"))
		return LL_NCCL_WARN_IB_VERBS_CALL;
	if (contains_ci(t, n, "no interface found") || contains_ci(t, n, "no socket interface") ||
	    contains_ci(t, n, "no usable listening interface") || contains_ci(t, n, "no interface"))
		return LL_NCCL_WARN_NO_INTERFACE;
	if (contains_ci(t, n, "socket") || contains_ci(t, n, "connection closed") ||
	    contains_ci(t, n, "connection reset") || contains_ci(t, n, "connection refused") ||
	    contains_ci(t, n, "broken pipe"))
		return LL_NCCL_WARN_SOCKET;
	return LL_NCCL_WARN_OTHER;
}

/* ---- messages ----------------------------------------------------------------- */

/* `[0]mlx5_0:1/IB/SHARP [1]mlx5_1:1/RoCE [RO]; OOB ib0:...`. Returns true when the list
 * ended (";" or "OOB" seen), false when the line stopped inside it (wrapped). */
static bool parse_devices(struct ll_nccl_rank *r, const char *s, size_t n)
{
	size_t i = 0;

	for (;;) {
		size_t start;
		struct ll_nccl_device *d;

		while (i < n && is_blank(s[i]))
			i++;
		if (i >= n)
			return false;
		if (s[i] == ';' || HAS(s + i, n - i, "OOB"))
			return true;
		if (HAS(s + i, n - i, "[RO]")) {
			r->relaxed_ordering = true;
			i += 4;
			continue;
		}
		if (s[i] != '[') {
			while (i < n && !is_blank(s[i]) && s[i] != ';')
				i++;
			continue;
		}
		while (i < n && s[i] != ']')
			i++;
		if (i >= n)
			return false;
		start = ++i;
		while (i < n && s[i] != ':' && s[i] != '/' && !is_blank(s[i]) && s[i] != ';')
			i++;
		if (i == start || r->n_devices >= 64)
			continue;
		d = ll_array_push(&r->devices, &r->n_devices, sizeof(*d));
		d->name = ll_strndup(s + start, i - start);
		d->port = -1;
		d->kind = LL_NCCL_DEV_OTHER;
		if (i < n && s[i] == ':') {
			i++;
			d->port = (int)parse_num(s, n, &i);
		}
		while (i < n && s[i] == '/') {
			size_t seg = ++i;
			while (i < n && s[i] != '/' && !is_blank(s[i]) && s[i] != ';')
				i++;
			if (i - seg == 2 && memcmp(s + seg, "IB", 2) == 0)
				d->kind = LL_NCCL_DEV_IB;
			else if (i - seg == 4 && strncasecmp(s + seg, "RoCE", 4) == 0)
				d->kind = LL_NCCL_DEV_ROCE;
			else if (i - seg == 5 && memcmp(s + seg, "SHARP", 5) == 0)
				d->sharp = true;
		}
	}
}

static void clear_devices(struct ll_nccl_rank *r)
{
	for (size_t i = 0; i < r->n_devices; i++)
		free(r->devices[i].name);
	free(r->devices);
	r->devices = NULL;
	r->n_devices = 0;
	r->relaxed_ordering = false;
}

static void clear_ifs(struct ll_nccl_rank *r)
{
	for (size_t i = 0; i < r->n_socket_ifs; i++)
		free(r->socket_ifs[i]);
	free(r->socket_ifs);
	r->socket_ifs = NULL;
	r->n_socket_ifs = 0;
}

/* `[0]eth0:10.0.0.1<0> [1]ib0:fe80::1%ib0<0>`: keep the interface names. */
static void parse_ifs(struct ll_nccl_rank *r, const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t start;

		while (i < n && s[i] != '[')
			i++;
		while (i < n && s[i] != ']')
			i++;
		if (i >= n)
			return;
		start = ++i;
		while (i < n && s[i] != ':' && !is_blank(s[i]))
			i++;
		if (i > start && r->n_socket_ifs < 64) {
			bool dup = false;
			for (size_t k = 0; k < r->n_socket_ifs; k++)
				dup |= strlen(r->socket_ifs[k]) == i - start &&
				       memcmp(r->socket_ifs[k], s + start, i - start) == 0;
			if (!dup)
				*(char **)ll_array_push(&r->socket_ifs, &r->n_socket_ifs, sizeof(char *)) =
					ll_strndup(s + start, i - start);
		}
		while (i < n && !is_blank(s[i]))
			i++;
	}
}

static bool starts_with_index(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && is_blank(s[i]))
		i++;
	return i + 1 < n && s[i] == '[' && is_digit(s[i + 1]);
}

static void scan_gdr_words(struct ll_nccl_rank *r, const char *m, size_t n)
{
	const char *g = FIND(m, n, "GPU Direct RDMA");

	if (!g)
		return;
	n -= (size_t)(g - m);
	if (contains_ci(g, n, "disabled"))
		r->gdr_disabled_line = true;
	else if (contains_ci(g, n, "enabled"))
		r->gdr_enabled_line = true;
}

/* "NET/<name> : ..." */
void ncclscan_msg_net(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n)
{
	size_t i = 4, name_start = 4, name_len;
	const char *rest;
	size_t nrest;

	while (i < n && m[i] != ' ' && m[i] != ':')
		i++;
	name_len = i - name_start;
	while (i < n && (m[i] == ' ' || m[i] == ':'))
		i++;
	rest = m + i;
	nrest = n - i;
	scan_gdr_words(r, m, n);
	if (name_len >= 2 && memcmp(m + name_start, "IB", 2) == 0) {
		if (HAS(rest, nrest, "Using [") || HAS(rest, nrest, "Using\t[")) {
			clear_devices(r);
			if (!parse_devices(r, rest + 6, nrest - 6)) {
				st->cont = CONT_IB_DEVICES;
				st->cont_rank = r;
			}
		} else if (HAS(rest, nrest, "No device found")) {
			r->ib_no_device = true;
		}
	} else if (name_len == 6 && memcmp(m + name_start, "Socket", 6) == 0) {
		if (HAS(rest, nrest, "Using [")) {
			r->socket_line = true;
			clear_ifs(r);
			parse_ifs(r, rest + 6, nrest - 6);
			st->cont = CONT_SOCKET_IFS;
			st->cont_rank = r;
		} else if (HAS(rest, nrest, "Using ")) {
			r->socket_line = true;
		}
	} else if (name_len == 6 && memcmp(m + name_start, "Plugin", 6) == 0) {
		const char *p = FIND(rest, nrest, "Loaded net plugin ");
		if (p) {
			size_t off = (size_t)(p - rest) + 18, e = off;
			while (e < nrest && !is_blank(rest[e]) && rest[e] != '(')
				e++;
			if (e > off)
				set_str(&r->plugin_loaded, rest + off, e - off);
		}
	}
}

/* "Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA", "Ring 00 : 1 -> 0 via NET/Socket/0" */
void ncclscan_msg_channel(struct ll_nccl_rank *r, const char *m, size_t n)
{
	const char *v = find_via_net(m, n);
	size_t i, nv;

	if (!v)
		return;
	v += 9;
	nv = n - (size_t)(v - m);
	/* The name runs to the next '/' (plugin names may contain blanks: "AWS Libfabric"). */
	for (i = 0; i < nv && v[i] != '/'; i++)
		;
	if (i == 6 && memcmp(v, "Socket", 6) == 0) {
		r->socket_channels++;
		return;
	}
	r->net_channels++;
	if (FIND(v + i, nv - i, "/GDRDMA"))
		r->gdr_channels++;
	if (!r->channel_net && i > 0)
		r->channel_net = ll_strndup(v, i);
}

void ncclscan_msg_using_network(struct ll_nccl_rank *r, const char *m, size_t n)
{
	const char *v = m + 14;
	size_t nv = n - 14;

	if (nv > 0)
		set_str(&r->network, v, nv);
}

void ncclscan_msg_bootstrap(struct ll_nccl_rank *r, const char *m, size_t n)
{
	const char *u = FIND(m, n, "Using ");
	size_t i, e;

	if (!u || u - m > 16)
		return;
	if (r->bootstrap)
		return;
	i = (size_t)(u - m) + 6;
	if (i + 1 < n && m[i] == '[') {
		while (i < n && m[i] != ']')
			i++;
		i++;
	}
	for (e = i; e < n && !is_blank(m[e]); e++)
		;
	if (e > i)
		r->bootstrap = ll_strndup(m + i, e - i);
}

void ncclscan_msg_version(struct ll_ncclscan *s, struct ll_nccl_rank *r, const char *v, size_t n)
{
	size_t e = 0;

	while (e < n && !is_blank(v[e]))
		e++;
	if (e == 0)
		return;
	if (!s->version)
		s->version = ll_strndup(v, e);
	if (r && !r->version)
		r->version = ll_strndup(v, e);
}

/* "ncclCommInitRank comm 0x.. rank 6 nranks 16 cudaDev 6 ... - Init START|COMPLETE",
 * NCCL 2.4's "comm 0x.. rank 0 nranks 2 cudaDev 0 nvmlDev 0". */
void ncclscan_msg_comm(struct ll_nccl_rank *r, const char *m, size_t n)
{
	const char *p = FIND(m, n, " rank ");

	if (!p)
		return;
	if (r->nranks < 0) {
		size_t i = (size_t)(p - m) + 6;
		long rank = parse_num(m, n, &i);
		const char *q = FIND(m + i, n - i, " nranks ");
		if (rank >= 0 && q) {
			size_t k = (size_t)(q - m) + 8;
			long nranks = parse_num(m, n, &k);
			r->rank = (int)rank;
			r->nranks = (int)nranks;
		}
	}
	if (FIND(p, n - (size_t)(p - m), "Init COMPLETE"))
		r->init_complete = true;
}

void ncclscan_msg_warn(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const char *pre, size_t npre,
		       const char *m, size_t n)
{
	enum ll_nccl_warn_class c = ll_nccl_warn_classify(m, n);
	struct ll_nccl_rank *r = ncclscan_prefixed_rank(s, st, pre, npre, true);

	s->warnings_total++;
	s->by_class[c]++;
	if (r) {
		r->warn_mask |= 1u << c;
		r->n_warnings++;
	}
	if (s->n_warnings < LL_NCCL_MAX_WARNINGS) {
		struct ll_nccl_warning *w = ll_array_push(&s->warnings, &s->n_warnings, sizeof(*w));
		w->file = ll_strdup(st->file);
		w->line = st->lineno;
		w->cls = c;
		w->text = ll_strndup(m, n > 1024 ? 1024 : n);
		w->host = r ? ll_strdup(r->host) : NULL;
		w->pid = r ? r->pid : -1;
	}
}

/* "P2P plugin IBext_v8": the net plugin NCCL loaded. */
void ncclscan_msg_p2p_plugin(struct ll_nccl_rank *r, const char *m, size_t n)
{
	size_t e = 11;

	while (e < n && !is_blank(m[e]))
		e++;
	if (e > 11)
		set_str(&r->plugin_loaded, m + 11, e - 11);
}

/* ---- continuation lines ------------------------------------------------------- */

void ncclscan_msg_continuation(struct ll_ncclscan_stream *st, const char *l, size_t n)
{
	if (!st->cont_rank || !starts_with_index(l, n)) {
		st->cont = CONT_NONE;
		return;
	}
	if (st->cont == CONT_IB_DEVICES) {
		if (parse_devices(st->cont_rank, l, n))
			st->cont = CONT_NONE;
	} else if (st->cont == CONT_SOCKET_IFS) {
		parse_ifs(st->cont_rank, l, n);
	}
}

void ncclscan_rank_clear_lists(struct ll_nccl_rank *r)
{
	clear_devices(r);
	clear_ifs(r);
}
