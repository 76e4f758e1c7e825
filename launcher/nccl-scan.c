/* NCCL debug-log scanner (see include/llmlaunch/ncclscan.h and docs/logs.md).
 *
 * Hot path: one memchr per line for its end, one memmem per line for "NCCL ", then a
 * dispatch on the first byte of the message. Only the few kinds of line that matter
 * resolve their process (prefix parse + hash lookup, cached per stream), and nothing
 * is allocated per line. */
#include "llmlaunch/ncclscan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCAN_READ_BUFFER (1u << 20)
#define SCAN_MAX_PARTIAL (64u << 10)

enum cont_kind { CONT_NONE = 0, CONT_IB_DEVICES, CONT_SOCKET_IFS };

struct ll_ncclscan_stream {
	struct ll_ncclscan_stream *next;
	char *file;
	unsigned long lineno;
	char *partial;
	size_t n_partial;
	struct ll_nccl_rank *last;      /* last process seen: prefix-less lines belong to it */
	char last_pre[96];              /* the bytes before its last marker, to skip re-parsing */
	size_t n_last_pre;
	enum cont_kind cont;            /* what a wrapped continuation line would extend */
	struct ll_nccl_rank *cont_rank;
};

struct ll_ncclscan {
	enum ll_net_expect expect;
	double now;
	struct ll_nccl_rank **ranks;
	size_t n_ranks;
	size_t *table;                  /* open addressing: index + 1, 0 empty */
	size_t table_size;
	struct ll_nccl_rank *anonymous; /* lines without any prefix and no earlier process */
	struct ll_nccl_warning *warnings;
	size_t n_warnings;
	unsigned long warnings_total;
	unsigned long by_class[LL_NCCL_WARN_CLASS_COUNT];
	char *version;
	unsigned long files, lines;
	struct ll_ncclscan_stream *streams;
	struct ll_nccl_host *hosts;
	size_t n_hosts;
	struct ll_nccl_verdict verdict;
};

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

/* ---- small string helpers on (pointer, length) -------------------------------- */

static bool has_prefix(const char *s, size_t n, const char *lit, size_t nlit)
{
	return n >= nlit && memcmp(s, lit, nlit) == 0;
}
#define HAS(s, n, lit) has_prefix((s), (n), lit, sizeof(lit) - 1)

static const char *find(const char *s, size_t n, const char *lit, size_t nlit)
{
	return memmem(s, n, lit, nlit);
}
#define FIND(s, n, lit) find((s), (n), lit, sizeof(lit) - 1)

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Parse a decimal number at s[*i]; returns -1 when there is none. */
static long parse_num(const char *s, size_t n, size_t *i)
{
	long v = 0;
	size_t start = *i;

	while (*i < n && is_digit(s[*i]) && v < 100000000L)
		v = v * 10 + (s[(*i)++] - '0');
	return *i > start ? v : -1;
}

/* Replace *dst with a copy of (s, n) unless it already holds exactly that. */
static void set_str(char **dst, const char *s, size_t n)
{
	if (*dst && strlen(*dst) == n && memcmp(*dst, s, n) == 0)
		return;
	free(*dst);
	*dst = ll_strndup(s, n);
}

/* ---- warning classes ---------------------------------------------------------- */

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

/* ---- processes ---------------------------------------------------------------- */

static uint64_t key_hash(const char *host, size_t n, long pid)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)host[i]) * 1099511628211ULL;
	h ^= (uint64_t)pid;
	h *= 1099511628211ULL;
	return h ^ (h >> 29);
}

static bool rank_is(const struct ll_nccl_rank *r, const char *host, size_t n, long pid)
{
	return r->pid == pid && r->host && strlen(r->host) == n && memcmp(r->host, host, n) == 0;
}

static void table_insert(struct ll_ncclscan *s, size_t idx)
{
	const struct ll_nccl_rank *r = s->ranks[idx];
	size_t mask = s->table_size - 1;
	size_t i = key_hash(r->host, strlen(r->host), r->pid) & mask;

	while (s->table[i])
		i = (i + 1) & mask;
	s->table[i] = idx + 1;
}

static struct ll_nccl_rank *rank_new(struct ll_ncclscan *s, const char *host, size_t n, long pid,
				     const struct ll_ncclscan_stream *st)
{
	struct ll_nccl_rank *r = ll_calloc(1, sizeof(*r));

	r->host = host ? ll_strndup(host, n) : NULL;
	r->pid = pid;
	r->cuda_dev = r->rank = r->nranks = -1;
	r->gdr = -1;
	r->file = ll_strdup(st->file);
	*(struct ll_nccl_rank **)ll_array_push(&s->ranks, &s->n_ranks, sizeof(r)) = r;
	return r;
}

static struct ll_nccl_rank *rank_get(struct ll_ncclscan *s, const struct ll_ncclscan_stream *st,
				     const char *host, size_t n, long pid)
{
	size_t mask, i;
	struct ll_nccl_rank *r;

	if (2 * (s->n_ranks + 1) > s->table_size) {
		free(s->table);
		s->table_size = s->table_size ? s->table_size * 2 : 64;
		s->table = ll_calloc(s->table_size, sizeof(*s->table));
		for (size_t k = 0; k < s->n_ranks; k++)
			if (s->ranks[k]->host)
				table_insert(s, k);
	}
	mask = s->table_size - 1;
	for (i = key_hash(host, n, pid) & mask; s->table[i]; i = (i + 1) & mask)
		if (rank_is(s->ranks[s->table[i] - 1], host, n, pid))
			return s->ranks[s->table[i] - 1];
	r = rank_new(s, host, n, pid, st);
	s->table[i] = s->n_ranks;
	return r;
}

/* ---- the NCCL prefix ---------------------------------------------------------- */

struct prefix {
	const char *host;
	size_t n_host;
	long pid;
	int cuda_dev;
	int launcher_rank; /* [N], [J,N]<stdout>:, "N: " at the start of the line; -1 none */
};

/* Characters that end a host name when scanning backwards: launchers separate their
 * own prefix with ':' (mpirun's `<stdout>:`, torchrun's `[default0]:`), ']' or blanks. */
static bool host_stop(char c)
{
	return c == ' ' || c == '\t' || c == ':' || c == ']' || c == '|';
}

static int parse_launcher_rank(const char *p, size_t n)
{
	size_t i = 0;
	long v;

	if (n > 0 && p[0] == '[') {
		i = 1;
		v = parse_num(p, n, &i);
		if (v >= 0 && i < n && p[i] == ',') {
			i++;
			v = parse_num(p, n, &i);
		}
		return v >= 0 && i < n && p[i] == ']' ? (int)v : -1;
	}
	while (i < n && is_blank(p[i]))
		i++;
	v = parse_num(p, n, &i);
	return v >= 0 && i + 1 < n && p[i] == ':' && is_blank(p[i + 1]) ? (int)v : -1;
}

/* Parse `host:pid:tid [dev]` (and for WARN a `file.cc:NN` after it) at the end of the
 * bytes before "NCCL ". Returns false when they do not end that way. */
static bool parse_prefix(const char *p, size_t n, bool warn, struct prefix *ret)
{
	size_t i = n, end;
	long dev, tid, pid;

	while (i > 0 && is_blank(p[i - 1]))
		i--;
	if (warn && i > 0 && p[i - 1] != ']') {
		while (i > 0 && !is_blank(p[i - 1]))
			i--;
		while (i > 0 && is_blank(p[i - 1]))
			i--;
	}
	if (i == 0 || p[i - 1] != ']')
		return false;
	end = --i;
	while (i > 0 && is_digit(p[i - 1]))
		i--;
	if (i == end || i == 0 || p[i - 1] != '[')
		return false;
	{
		size_t k = i;
		dev = parse_num(p, end, &k);
	}
	i--;
	if (i == 0 || !is_blank(p[i - 1]))
		return false;
	while (i > 0 && is_blank(p[i - 1]))
		i--;
	/* tid, then pid, each preceded by ':' */
	end = i;
	while (i > 0 && is_digit(p[i - 1]))
		i--;
	if (i == end || i == 0 || p[i - 1] != ':')
		return false;
	{
		size_t k = i;
		tid = parse_num(p, end, &k);
	}
	end = --i;
	while (i > 0 && is_digit(p[i - 1]))
		i--;
	if (i == end || i == 0 || p[i - 1] != ':')
		return false;
	{
		size_t k = i;
		pid = parse_num(p, end, &k);
	}
	end = --i;
	while (i > 0 && !host_stop(p[i - 1]))
		i--;
	if (i == end || tid < 0)
		return false;
	ret->host = p + i;
	ret->n_host = end - i;
	ret->pid = pid;
	ret->cuda_dev = (int)dev;
	ret->launcher_rank = i > 0 ? parse_launcher_rank(p, i) : -1;
	return true;
}

/* The process a record belongs to. Prefix-less records go to the stream's last process
 * (an NCCL_DEBUG_FILE holds one process), else to one anonymous process. */
static struct ll_nccl_rank *record_rank(struct ll_ncclscan *s, struct ll_ncclscan_stream *st,
					const char *pre, size_t npre, bool warn)
{
	struct prefix px;
	struct ll_nccl_rank *r;

	/* Consecutive lines of one thread share their prefix byte for byte. */
	if (st->last && npre == st->n_last_pre && npre > 0 && memcmp(pre, st->last_pre, npre) == 0) {
		r = st->last;
		r->n_lines++;
		r->last_seen = s->now;
		return r;
	}
	if (!parse_prefix(pre, npre, warn, &px)) {
		if (st->last)
			r = st->last;
		else {
			if (!s->anonymous)
				s->anonymous = rank_new(s, NULL, 0, -1, st);
			r = s->anonymous;
		}
	} else if (st->last && rank_is(st->last, px.host, px.n_host, px.pid)) {
		r = st->last;
	} else {
		r = rank_get(s, st, px.host, px.n_host, px.pid);
		if (r->cuda_dev < 0)
			r->cuda_dev = px.cuda_dev;
		if (r->rank < 0 && px.launcher_rank >= 0)
			r->rank = px.launcher_rank;
	}
	st->last = r;
	st->n_last_pre = 0;
	if (npre <= sizeof(st->last_pre) && r->host) {
		memcpy(st->last_pre, pre, npre);
		st->n_last_pre = npre;
	}
	r->n_lines++;
	r->last_seen = s->now;
	return r;
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
static void msg_net(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n)
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
/* " via NET/" in a channel line, or NULL: a memchr for 'v' finds "via" at once. */
static const char *find_via_net(const char *m, size_t n)
{
	const char *p = m, *end = m + n;

	while (p < end) {
		const char *q = memchr(p, 'v', (size_t)(end - p));
		if (!q || end - q < 8)
			return NULL;
		if (q > m && q[-1] == ' ' && memcmp(q, "via NET/", 8) == 0)
			return q - 1;
		p = q + 1;
	}
	return NULL;
}

static void msg_channel(struct ll_nccl_rank *r, const char *m, size_t n)
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

static void msg_using_network(struct ll_nccl_rank *r, const char *m, size_t n)
{
	const char *v = m + 14;
	size_t nv = n - 14;

	if (nv > 0)
		set_str(&r->network, v, nv);
}

static void msg_bootstrap(struct ll_nccl_rank *r, const char *m, size_t n)
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

static void msg_version(struct ll_ncclscan *s, struct ll_nccl_rank *r, const char *v, size_t n)
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
static void msg_comm(struct ll_nccl_rank *r, const char *m, size_t n)
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

static void msg_warn(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const char *pre, size_t npre,
		     const char *m, size_t n)
{
	struct prefix px;
	enum ll_nccl_warn_class c = ll_nccl_warn_classify(m, n);
	struct ll_nccl_rank *r = NULL;

	if (parse_prefix(pre, npre, true, &px))
		r = record_rank(s, st, pre, npre, true);
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

/* A record's process, looked up only when its message turns out to matter: most
 * INFO lines do not, and the prefix parse is the costliest step per line. */
struct record {
	struct ll_ncclscan *s;
	struct ll_ncclscan_stream *st;
	const char *pre;
	size_t npre;
	struct ll_nccl_rank *r;
};

static struct ll_nccl_rank *rec_rank(struct record *rc)
{
	if (!rc->r)
		rc->r = record_rank(rc->s, rc->st, rc->pre, rc->npre, false);
	return rc->r;
}

static void msg_info(struct record *rc, const char *m, size_t n)
{
	if (n == 0)
		return;
	switch (m[0]) {
	case 'C':
		if (HAS(m, n, "Channel ") && find_via_net(m, n))
			msg_channel(rec_rank(rc), m, n);
		break;
	case 'R':
		if (HAS(m, n, "Ring ") && find_via_net(m, n))
			msg_channel(rec_rank(rc), m, n);
		break;
	case 'N':
		if (HAS(m, n, "NET/"))
			msg_net(rc->st, rec_rank(rc), m, n);
		else if (HAS(m, n, "NCCL_IB_DISABLE set by environment to ")) {
			struct ll_nccl_rank *r = rec_rank(rc);
			if (n > 38 && m[38] != '0')
				r->ib_disabled = true;
		} else if (HAS(m, n, "NCCL version "))
			msg_version(rc->s, rec_rank(rc), m + 13, n - 13);
		break;
	case 'U':
		if (HAS(m, n, "Using network "))
			msg_using_network(rec_rank(rc), m, n);
		break;
	case 'B':
		if (HAS(m, n, "Bootstrap"))
			msg_bootstrap(rec_rank(rc), m, n);
		break;
	case 'n':
		if (HAS(m, n, "ncclCommInitRank"))
			msg_comm(rec_rank(rc), m, n);
		break;
	case 'c':
		if (HAS(m, n, "comm 0x"))
			msg_comm(rec_rank(rc), m, n);
		break;
	case 'P':
		if (HAS(m, n, "P2P plugin ")) {
			struct ll_nccl_rank *r = rec_rank(rc);
			size_t e = 11;
			while (e < n && !is_blank(m[e]))
				e++;
			if (e > 11)
				set_str(&r->plugin_loaded, m + 11, e - 11);
		}
		break;
	default:
		break;
	}
}

/* ---- lines -------------------------------------------------------------------- */

enum marker { MARK_INFO, MARK_WARN, MARK_VERSION };

/* The next "NCCL INFO ", "NCCL WARN " or "NCCL version " at or after `from`. memchr
 * for the 'N' (vectorised in libc) beats memmem here: lines are short and the first
 * 'N' of a line is nearly always the marker. */
static const char *find_marker(const char *l, size_t n, size_t from, enum marker *kind)
{
	const char *p = l + from, *end = l + n;

	while (p < end) {
		const char *q = memchr(p, 'N', (size_t)(end - p));
		size_t rest;

		if (!q)
			return NULL;
		rest = (size_t)(end - q);
		if (rest < 9)
			return NULL;
		if (q[1] == 'C' && q[2] == 'C' && q[3] == 'L' && q[4] == ' ') {
			if (memcmp(q + 5, "INFO", 4) == 0) {
				*kind = MARK_INFO;
				return q;
			}
			if (memcmp(q + 5, "WARN", 4) == 0) {
				*kind = MARK_WARN;
				return q;
			}
			if (rest >= 13 && memcmp(q + 5, "version ", 8) == 0) {
				*kind = MARK_VERSION;
				return q;
			}
		}
		p = q + 1;
	}
	return NULL;
}

/* Where the record whose marker is at `m` begins: back over `host:pid:tid [dev] ` (and
 * a WARN's `file:NN `). Returns m itself when no prefix precedes it. */
static const char *record_start(const char *from, const char *m, enum marker kind)
{
	struct prefix px;

	size_t i, j;

	if (kind == MARK_VERSION || !parse_prefix(from, (size_t)(m - from), kind == MARK_WARN, &px))
		return m;
	/* Also take a launcher's own prefix in front of the host: `[1,4]<stdout>:`,
	 * `[default0]:`, `[155] `. Without any separator the host name cannot be told
	 * from the previous record's text, and the record starts at the host as found. */
	i = (size_t)(px.host - from);
	j = i;
	if (j > 0 && from[j - 1] == ':') {
		j--;
		if (j >= 8 && (memcmp(from + j - 8, "<stdout>", 8) == 0 || memcmp(from + j - 8, "<stderr>", 8) == 0))
			j -= 8;
	} else {
		while (j > 0 && is_blank(from[j - 1]))
			j--;
	}
	if (j > 0 && from[j - 1] == ']') {
		size_t k = j - 1;
		while (k > 0 && from[k - 1] != '[' && from[k - 1] != ']' && j - k < 24)
			k--;
		if (k > 0 && from[k - 1] == '[')
			return from + k - 1;
	}
	return j < i && from[j] == '<' ? from + j : px.host;
}

/* Length of what a launcher or log shipper put before a continuation line's text:
 * an RFC 3339 timestamp, `[1,4]<stdout>:`, `[default0]:`. */
static size_t continuation_prefix(const char *l, size_t n)
{
	size_t i = 0;

	if (n > 0 && is_digit(l[0])) {
		size_t e = 0;
		while (e < n && !is_blank(l[e]))
			e++;
		if (memchr(l, ':', e) && memchr(l, '-', e))
			i = e;
	} else if (n > 0 && l[0] == '[') {
		const char *colon = memchr(l, ':', n < 32 ? n : 32);
		/* "[4]mlx5_4:1/IB" is the text itself: its colon follows a device name. */
		if (colon && colon > l && (colon[-1] == '>' || (colon[-1] == ']' && !is_digit(l[1]))))
			i = (size_t)(colon - l) + 1;
	}
	while (i < n && is_blank(l[i]))
		i++;
	return i;
}

static void scan_continuation(struct ll_ncclscan_stream *st, const char *l, size_t n)
{
	size_t skip = continuation_prefix(l, n);

	l += skip;
	n -= skip;
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

static void scan_line(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const char *l, size_t n)
{
	const char *m, *rec = l;
	enum marker kind;

	st->lineno++;
	s->lines++;
	while (n > 0 && (l[n - 1] == '\r' || l[n - 1] == ' ' || l[n - 1] == '\t'))
		n--;
	m = find_marker(l, n, 0, &kind);
	if (!m) {
		if (st->cont != CONT_NONE && n > 0)
			scan_continuation(st, l, n);
		return;
	}
	st->cont = CONT_NONE;
	while (m) {
		enum marker next_kind = kind;
		size_t hdr = kind == MARK_VERSION ? 13 : 10;
		const char *msg = m + hdr <= l + n ? m + hdr : l + n;
		/* +1: an INFO message may itself start with "NCCL version ". */
		const char *next = find_marker(l, n, (size_t)(msg - l) + 1, &next_kind);
		const char *end = next ? record_start(msg, next, next_kind) : l + n;
		size_t nmsg;

		while (end > msg && is_blank(end[-1]))
			end--;
		nmsg = (size_t)(end - msg);
		if (kind == MARK_INFO) {
			/* Every process that printed counts, even with only lines that say
			 * nothing about the network; the prefix cache keeps that cheap. */
			struct record rc = { s, st, rec, (size_t)(m - rec), NULL };
			rec_rank(&rc);
			msg_info(&rc, msg, nmsg);
		}
		else if (kind == MARK_WARN)
			msg_warn(s, st, rec, (size_t)(m - rec), msg, nmsg);
		else {
			struct prefix px;
			msg_version(s, parse_prefix(rec, (size_t)(m - rec), false, &px) ?
					       record_rank(s, st, rec, (size_t)(m - rec), false) : NULL,
				    msg, nmsg);
		}
		if (!next)
			break;
		rec = end;
		m = next;
		kind = next_kind;
	}
}

/* ---- streams and files -------------------------------------------------------- */

struct ll_ncclscan *ll_ncclscan_new(enum ll_net_expect expect)
{
	struct ll_ncclscan *s = ll_calloc(1, sizeof(*s));

	s->expect = expect;
	return s;
}

void ll_ncclscan_set_clock(struct ll_ncclscan *s, double now)
{
	s->now = now;
}

static void rank_free(struct ll_nccl_rank *r)
{
	clear_devices(r);
	clear_ifs(r);
	free(r->host);
	free(r->file);
	free(r->version);
	free(r->network);
	free(r->channel_net);
	free(r->plugin_loaded);
	free(r->bootstrap);
	free(r);
}

static void hosts_release(struct ll_ncclscan *s)
{
	for (size_t i = 0; i < s->n_hosts; i++)
		free(s->hosts[i].ranks);
	free(s->hosts);
	s->hosts = NULL;
	s->n_hosts = 0;
}

void ll_ncclscan_free(struct ll_ncclscan *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_ranks; i++)
		rank_free(s->ranks[i]);
	free(s->ranks);
	free(s->table);
	for (size_t i = 0; i < s->n_warnings; i++) {
		free(s->warnings[i].file);
		free(s->warnings[i].text);
		free(s->warnings[i].host);
	}
	free(s->warnings);
	free(s->version);
	while (s->streams) {
		struct ll_ncclscan_stream *st = s->streams;
		s->streams = st->next;
		free(st->file);
		free(st->partial);
		free(st);
	}
	hosts_release(s);
	free(s);
}

struct ll_ncclscan_stream *ll_ncclscan_stream_new(struct ll_ncclscan *s, const char *file)
{
	struct ll_ncclscan_stream *st = ll_calloc(1, sizeof(*st));

	st->file = ll_strdup(file ? file : "-");
	st->next = s->streams;
	s->streams = st;
	s->files++;
	return st;
}

static void partial_add(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const char *d, size_t n)
{
	if (!st->partial)
		st->partial = ll_malloc(SCAN_MAX_PARTIAL);
	if (st->n_partial + n > SCAN_MAX_PARTIAL) {
		/* An endless line: scan what we have as a line of its own. */
		scan_line(s, st, st->partial, st->n_partial);
		st->n_partial = 0;
		if (n > SCAN_MAX_PARTIAL)
			n = SCAN_MAX_PARTIAL;
	}
	memcpy(st->partial + st->n_partial, d, n);
	st->n_partial += n;
}

void ll_ncclscan_feed(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const char *data, size_t n)
{
	const char *p = data, *end = data + n;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl) {
			partial_add(s, st, p, (size_t)(end - p));
			return;
		}
		if (st->n_partial) {
			partial_add(s, st, p, (size_t)(nl - p));
			scan_line(s, st, st->partial, st->n_partial);
			st->n_partial = 0;
		} else {
			scan_line(s, st, p, (size_t)(nl - p));
		}
		p = nl + 1;
	}
}

void ll_ncclscan_flush(struct ll_ncclscan *s, struct ll_ncclscan_stream *st)
{
	if (st->n_partial) {
		scan_line(s, st, st->partial, st->n_partial);
		st->n_partial = 0;
	}
}

/* Regular files are mapped a window at a time (no copy into a buffer, and the
 * window is unmapped before the next, so memory stays flat); anything mmap refuses
 * (pipes, /proc) is read through a fixed buffer. */
#define SCAN_WINDOW (8u << 20)

static int scan_fd_read(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, int fd, const char *path,
			struct ll_error *err)
{
	_cleanup_free_ char *buf = ll_malloc(SCAN_READ_BUFFER);

	for (;;) {
		ssize_t got = read(fd, buf, SCAN_READ_BUFFER);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return ll_error_set(err, -errno, "cannot read '%s': %s", path, strerror(errno));
		}
		if (got == 0)
			return 0;
		ll_ncclscan_feed(s, st, buf, (size_t)got);
	}
}

static int scan_fd_mapped(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, int fd, off_t size)
{
	for (off_t off = 0; off < size; off += SCAN_WINDOW) {
		size_t len = size - off < SCAN_WINDOW ? (size_t)(size - off) : SCAN_WINDOW;
		void *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, off);

		/* At the start: let the caller read() instead. Later: the file shrank. */
		if (p == MAP_FAILED)
			return off == 0 ? -errno : -EIO;
		ll_ncclscan_feed(s, st, p, len);
		munmap(p, len);
	}
	return 0;
}

int ll_ncclscan_file(struct ll_ncclscan *s, const char *path, struct ll_error *err)
{
	struct ll_ncclscan_stream *st;
	struct stat sb;
	int fd, r = -1;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ll_error_set(err, -errno, "cannot open '%s': %s", path, strerror(errno));
	st = ll_ncclscan_stream_new(s, path);
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
		r = scan_fd_mapped(s, st, fd, sb.st_size);
		if (r == -EIO) {
			close(fd);
			return ll_error_set(err, -EIO, "cannot map '%s' (did it shrink while being read?)", path);
		}
	}
	if (r < 0) {
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
		r = scan_fd_read(s, st, fd, path, err);
	}
	ll_ncclscan_flush(s, st);
	close(fd);
	return r;
}

static int name_order(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int scan_dir(struct ll_ncclscan *s, const char *path, int depth, struct ll_error *err)
{
	struct dirent **names = NULL;
	int n, r = 0;

	if (depth > 32)
		return ll_error_set(err, -ELOOP, "cannot read '%s': directories nested too deep", path);
	n = scandir(path, &names, NULL, name_order);
	if (n < 0)
		return ll_error_set(err, -errno, "cannot read directory '%s': %s", path, strerror(errno));
	for (int i = 0; i < n; i++) {
		struct stat sb;
		_cleanup_free_ char *child = NULL;

		if (r < 0 || names[i]->d_name[0] == '.') {
			free(names[i]);
			continue;
		}
		child = ll_asprintf("%s/%s", path, names[i]->d_name);
		free(names[i]);
		if (stat(child, &sb) < 0) {
			r = ll_error_set(err, -errno, "cannot read '%s': %s", child, strerror(errno));
			continue;
		}
		if (S_ISDIR(sb.st_mode))
			r = scan_dir(s, child, depth + 1, err);
		else if (S_ISREG(sb.st_mode))
			r = ll_ncclscan_file(s, child, err);
	}
	free(names);
	return r;
}

int ll_ncclscan_path(struct ll_ncclscan *s, const char *path, struct ll_error *err)
{
	struct stat sb;

	if (stat(path, &sb) < 0)
		return ll_error_set(err, -errno, "cannot read '%s': %s", path, strerror(errno));
	if (S_ISDIR(sb.st_mode))
		return scan_dir(s, path, 0, err);
	return ll_ncclscan_file(s, path, err);
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

const struct ll_nccl_verdict *ll_ncclscan_result(struct ll_ncclscan *s)
{
	struct ll_nccl_verdict *v = &s->verdict;
	bool any_t = false, any_on = false;

	hosts_release(s);
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
