/* What an NCCL message says: the recognisers for the kinds of INFO line that tell the
 * network story (nccl-scan.c picks which one a line needs), WARN records and their
 * classes, the NCCL version, communicators, and device lists wrapped onto continuation
 * lines. Which line proves what, in which NCCL versions, is the grammar in docs/logs.md;
 * the rows are named (G1...) where they are read. */
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

static void set_once(char **dst, const char *s, size_t n)
{
	if (!*dst && n > 0)
		*dst = ll_strndup(s, n);
}

static bool name_is_ib(const char *s, size_t n)
{
	return n >= 2 && s[0] == 'I' && s[1] == 'B';
}

/* Remember the first line of a kind that proved something about `r`. */
static void proof(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, enum proof_kind k, const char *m, size_t n)
{
	struct ll_nccl_proof *p = &rank_state_of(r)->proofs[k];

	if (p->line)
		return;
	p->file = st->file;
	p->line = st->lineno;
	p->text = ll_strndup(m, n > LL_NCCL_PROOF_TEXT ? LL_NCCL_PROOF_TEXT : n);
}

int ncclscan_version_code(const char *v, size_t n)
{
	size_t i = 0;
	long major = parse_num(v, n, &i), minor = -1, patch = 0;

	if (major < 0 || i >= n || v[i] != '.')
		return 0;
	i++;
	minor = parse_num(v, n, &i);
	if (minor < 0 || minor > 99)
		return 0;
	if (i < n && v[i] == '.') {
		i++;
		patch = parse_num(v, n, &i);
		if (patch < 0 || patch > 99)
			patch = 0;
	}
	return major > 9 ? 0 : (int)(major * 10000 + minor * 100 + patch);
}

/* ---- communicators -------------------------------------------------------------- */

static struct tid_comm *tid_slot(struct rank_state *rs, long tid)
{
	for (size_t i = 0; i < rs->n_tids; i++)
		if (rs->tids[i].tid == tid)
			return &rs->tids[i];
	return NULL;
}

static void tid_bind(struct rank_state *rs, long tid, int comm)
{
	struct tid_comm *t = tid_slot(rs, tid);

	if (!t) {
		if (rs->n_tids < RANK_TIDS) {
			t = &rs->tids[rs->n_tids++];
		} else {
			t = &rs->tids[rs->tid_next];
			rs->tid_next = (rs->tid_next + 1) % RANK_TIDS;
		}
		t->tid = tid;
	}
	t->comm = comm;
}

static int comm_new(struct ll_nccl_rank *r)
{
	struct ll_nccl_comm *c;

	if (r->n_comms >= RANK_MAX_COMMS)
		return (int)r->n_comms - 1;
	c = ll_array_push(&r->comms, &r->n_comms, sizeof(*c));
	c->rank = c->nranks = c->nnodes = -1;
	c->gdr = -1;
	return (int)r->n_comms - 1;
}

static void comm_release(struct ll_nccl_comm *c)
{
	free(c->id);
	free(c->ptr);
	free(c->network);
	free(c->channel_net);
}

/* The communicator the record being read belongs to: the one its thread works on, or a
 * new one that a later communicator line of that thread names. */
static struct ll_nccl_comm *comm_cur(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r)
{
	struct rank_state *rs = rank_state_of(r);
	struct tid_comm *t = rs->n_tids && rs->tids[rs->last_tid_slot].tid == st->tid ? &rs->tids[rs->last_tid_slot]
										      : tid_slot(rs, st->tid);
	int c;

	if (t && t->comm >= 0) {
		rs->last_tid_slot = (size_t)(t - rs->tids);
		return &r->comms[t->comm];
	}
	c = comm_new(r);
	tid_bind(rs, st->tid, c);
	return &r->comms[c];
}

/* Fold the unnamed communicator `from` into `into` and drop it. */
static void comm_merge(struct ll_nccl_rank *r, int into, int from)
{
	struct rank_state *rs = rank_state_of(r);
	struct ll_nccl_comm *a = &r->comms[into], *b = &r->comms[from];

	a->net_channels += b->net_channels;
	a->gdr_channels += b->gdr_channels;
	a->socket_channels += b->socket_channels;
	a->p2p_channels += b->p2p_channels;
	a->shm_channels += b->shm_channels;
	a->collnet_channels += b->collnet_channels;
	a->nvls_channels += b->nvls_channels;
	if (!a->network) {
		a->network = b->network;
		b->network = NULL;
	}
	if (!a->channel_net) {
		a->channel_net = b->channel_net;
		b->channel_net = NULL;
	}
	comm_release(b);
	memmove(b, b + 1, (r->n_comms - (size_t)from - 1) * sizeof(*b));
	r->n_comms--;
	for (size_t i = 0; i < rs->n_tids; i++) {
		if (rs->tids[i].comm == from)
			rs->tids[i].comm = into > from ? into - 1 : into;
		else if (rs->tids[i].comm > from)
			rs->tids[i].comm--;
	}
}

static bool str_is(const char *a, const char *s, size_t n)
{
	return a && strlen(a) == n && memcmp(a, s, n) == 0;
}

/* A hex word "0x..." at s[i]; its length, 0 when there is none. */
static size_t hex_word(const char *s, size_t n, size_t i)
{
	size_t e = i + 2;

	if (i + 2 >= n || s[i] != '0' || s[i + 1] != 'x')
		return 0;
	while (e < n && (is_digit(s[e]) || (s[e] >= 'a' && s[e] <= 'f') || (s[e] >= 'A' && s[e] <= 'F')))
		e++;
	return e > i + 2 ? e - i : 0;
}

static long num_after(const char *m, size_t n, const char *key, size_t nkey)
{
	const char *p = find(m, n, key, nkey);
	size_t i;

	if (!p)
		return -1;
	i = (size_t)(p - m) + nkey;
	return parse_num(m, n, &i);
}

/* G23: "ncclCommInitRank comm 0x.. rank 6 nranks 16 cudaDev 6 ... commId 0x.. - Init START|COMPLETE"
 * (also ncclCommInitRankConfig, ncclCommSplit, "[Rank N] ..."), NCCL 2.5-2.17's
 * "comm 0x.. rank R nranks N cudaDev D busId B - Init COMPLETE", 2.4's
 * "comm 0x.. rank R nranks N cudaDev D nvmlDev D", 2.19's "comm 0x.. rank R nRanks N nNodes K ...". */
void ncclscan_msg_comm(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n)
{
	struct rank_state *rs = rank_state_of(r);
	const char *ptr = NULL, *idp = NULL;
	size_t nptr = 0, nid = 0, i = 0;
	long rank = -1, nranks = -1, nnodes = -1;
	bool complete = false, start = false;
	struct tid_comm *t;
	int c = -1, cur;

	/* "comm 0x.. rank R nranks|nRanks N[ nNodes K]" in that order in every version, the
	 * commId (2.16+) just before the end "- Init START|COMPLETE". */
	{
		const char *p = FIND(m, n, "comm 0x"), *e = m + n;
		size_t k;

		if (!p)
			return;
		i = (size_t)(p - m) + 5;
		if (!(nptr = hex_word(m, n, i)))
			return;
		ptr = m + i;
		i += nptr;
		if (!HAS(m + i, n - i, " rank "))
			return;
		i += 6;
		rank = parse_num(m, n, &i);
		if (HAS(m + i, n - i, " nranks ") || HAS(m + i, n - i, " nRanks ")) {
			i += 8;
			nranks = parse_num(m, n, &i);
			if (HAS(m + i, n - i, " nNodes ")) {
				i += 8;
				nnodes = parse_num(m, n, &i);
			}
		}
		complete = n >= 13 && memcmp(e - 13, "Init COMPLETE", 13) == 0;
		start = n >= 10 && memcmp(e - 10, "Init START", 10) == 0;
		/* "... commId 0x<hex> - Init X": the word before " - Init". */
		k = n - (complete ? 13 : start ? 10 : 0);
		if ((complete || start) && k > i + 3 && memcmp(m + k - 3, " - ", 3) == 0) {
			size_t h = k - 3;
			while (h > i && m[h - 1] != ' ')
				h--;
			if (h >= i + 7 && memcmp(m + h - 7, "commId ", 7) == 0 && (nid = hex_word(m, n, h)))
				idp = m + h;
		}
	}
	if (!ptr || rank < 0)
		return;
	if (start || nnodes >= 0)
		r->modern = true;
	if (r->nranks < 0 && nranks >= 0) {
		r->rank = (int)rank;
		r->nranks = (int)nranks;
	}
	if (complete)
		r->init_complete = true;

	for (size_t k = 0; k < r->n_comms && c < 0; k++)
		if (str_is(r->comms[k].ptr, ptr, nptr))
			c = (int)k;
	t = tid_slot(rs, st->tid);
	cur = t ? t->comm : -1;
	if (c < 0) {
		if (cur >= 0 && !r->comms[cur].ptr && !r->comms[cur].id)
			c = cur;
		else
			c = comm_new(r);
	} else if (cur >= 0 && cur != c && !r->comms[cur].ptr && !r->comms[cur].id) {
		comm_merge(r, c, cur);
		if (cur < c)
			c--;
	}
	{
		struct ll_nccl_comm *cm = &r->comms[c];
		set_once(&cm->ptr, ptr, nptr);
		if (nid)
			set_once(&cm->id, idp, nid);
		if (cm->rank < 0)
			cm->rank = (int)rank;
		if (cm->nranks < 0 && nranks >= 0)
			cm->nranks = (int)nranks;
		if (nnodes >= 0)
			cm->nnodes = (int)nnodes;
		if (complete)
			cm->init_complete = true;
	}
	/* After Init COMPLETE the thread's next lines start another communicator. */
	tid_bind(rs, st->tid, complete ? -1 : c);
}

/* ---- warning classes ---------------------------------------------------------- */

static const char *const warn_class_names[] = {
	[LL_NCCL_WARN_IB_COMPLETION] = "ib-completion", [LL_NCCL_WARN_IB_VERBS_CALL] = "ib-verbs-call",
	[LL_NCCL_WARN_SOCKET] = "socket",               [LL_NCCL_WARN_NO_INTERFACE] = "no-interface",
	[LL_NCCL_WARN_PLUGIN_MISSING] = "plugin-missing", [LL_NCCL_WARN_NO_NETWORK] = "no-network",
	[LL_NCCL_WARN_OTHER] = "other",
};

const char *ll_nccl_warn_class_name(enum ll_nccl_warn_class c)
{
	return (unsigned)c < LL_ARRAY_SIZE(warn_class_names) ? warn_class_names[c] : "other";
}

bool ll_nccl_warn_class_is_error(enum ll_nccl_warn_class c)
{
	return c == LL_NCCL_WARN_IB_COMPLETION || c == LL_NCCL_WARN_IB_VERBS_CALL ||
	       c == LL_NCCL_WARN_SOCKET || c == LL_NCCL_WARN_NO_INTERFACE || c == LL_NCCL_WARN_NO_NETWORK;
}

/* ASCII lower case of (s, n) into buf (at least n bytes). */
static void lower_ascii(char *buf, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] + 32) : s[i];
}

/* Whether `lit` (lower case) occurs in (s, n) with ASCII case ignored. One lower-case
 * copy and a memchr-driven search: a strncasecmp at every byte cost more than all the
 * rest of a WARN record's work. */
static bool contains_ci(const char *s, size_t n, const char *lit)
{
	char stack[256];
	char *low = n <= sizeof(stack) ? stack : ll_malloc(n);
	bool found;

	lower_ascii(low, s, n);
	found = find(low, n, lit, strlen(lit)) != NULL;
	if (low != stack)
		free(low);
	return found;
}

enum ll_nccl_warn_class ll_nccl_warn_classify(const char *t, size_t n)
{
	char stack[512];
	char *low = n <= sizeof(stack) ? stack : ll_malloc(n);
	enum ll_nccl_warn_class c = LL_NCCL_WARN_OTHER;

	/* The case-insensitive patterns are looked for in one lower-case copy. */
	lower_ascii(low, t, n);
	if (FIND(t, n, "Got completion") || FIND_ON(low, n, "completion with error", 'w') ||
	    (FIND_ON(t, n, "NET/IB", '/') && FIND(t, n, "vendor err")))
		c = LL_NCCL_WARN_IB_COMPLETION;
	else if ((HAS(t, n, "Error: network ") && FIND_ON(t, n, " not found", 'f')) ||
		 FIND_ON(low, n, "failed to initialize any net plugin", 'z'))
		c = LL_NCCL_WARN_NO_NETWORK;
	else if (FIND_ON(t, n, "libibverbs", 'v') || FIND_ON(low, n, "failed to open libnccl-net", '-') || FIND_ON(t, n, "NET/Plugin", '/'))
		c = LL_NCCL_WARN_PLUGIN_MISSING;
	else if (FIND_ON(t, n, "ibv_", '_') || FIND_ON(t, n, "wrap_ibv", '_'))
		c = LL_NCCL_WARN_IB_VERBS_CALL;
	else if (FIND_ON(low, n, "no interface", 'f') || FIND_ON(low, n, "no socket interface", 'k') ||
		 FIND_ON(low, n, "no usable listening interface", 'b'))
		c = LL_NCCL_WARN_NO_INTERFACE; /* "no interface found" is "no interface" */
	else if (FIND_ON(low, n, "socket", 'k') || FIND_ON(low, n, "connection closed", 'd') || FIND_ON(low, n, "connection reset", 'r') ||
		 FIND_ON(low, n, "connection refused", 'f') || FIND_ON(low, n, "broken pipe", 'k'))
		c = LL_NCCL_WARN_SOCKET;
	if (low != stack)
		free(low);
	return c;
}

int ncclscan_warn_class(struct ll_ncclscan *s, const char *m, size_t n)
{
	uint64_t h;
	struct warn_class_slot *e;

	if (n > LL_WARN_CLASS_TEXT)
		return (int)ll_nccl_warn_classify(m, n);
	if (!s->warn_classes)
		s->warn_classes = ll_calloc(LL_WARN_CLASS_SLOTS, sizeof(*s->warn_classes));
	h = ncclscan_hash(m, n, 0x7761726e);
	/* Two ways: two texts of one slot would otherwise push each other out. */
	e = &s->warn_classes[h & (LL_WARN_CLASS_SLOTS - 2)];
	for (int k = 0; k < 2; k++)
		if (e[k].text && e[k].hash == h && e[k].len == n && memcmp(e[k].text, m, n) == 0)
			return e[k].cls;
	free(e[1].text);
	e[1] = e[0];
	e->text = ll_strndup(m, n);
	e->hash = h;
	e->len = n;
	e->cls = (int)ll_nccl_warn_classify(m, n);
	return e->cls;
}

/* Free the WARN classes kept in `s`. */
void ncclscan_warn_classes_free(struct ll_ncclscan *s)
{
	if (!s->warn_classes)
		return;
	for (size_t i = 0; i < LL_WARN_CLASS_SLOTS; i++)
		free(s->warn_classes[i].text);
	free(s->warn_classes);
	s->warn_classes = NULL;
}

/* ---- device and interface lists --------------------------------------------------- */

/* One device of a list at s[*ip], added to `r` (at most 64 are kept) unless `r` is
 * NULL; *ip is moved past it either way, so where a list ends does not depend on what
 * was kept. */
static struct ll_nccl_device *device_add(struct ll_nccl_rank *r, const char *s, size_t n, size_t *ip)
{
	size_t i = *ip, start = i;
	struct ll_nccl_device dev = { .port = -1, .kind = LL_NCCL_DEV_OTHER }, *d = NULL;

	while (i < n && s[i] != ':' && s[i] != '/' && !is_blank(s[i]) && s[i] != ';' && s[i] != ',' && s[i] != '}')
		i++;
	*ip = i;
	if (i == start)
		return NULL;
	if (i < n && s[i] == ':') {
		i++;
		dev.port = (int)parse_num(s, n, &i);
		/* NCCL 2.28+: ":rail:plane" after the port ("mlx5_0:1:0:1/IB", "mlx5_0:1::1/IB"). */
		while (i < n && (s[i] == ':' || is_digit(s[i])))
			i++;
	}
	while (i < n && s[i] == '/') {
		size_t seg = ++i;
		while (i < n && s[i] != '/' && !is_blank(s[i]) && s[i] != ';' && s[i] != ',' && s[i] != '}')
			i++;
		if (i - seg == 2 && memcmp(s + seg, "IB", 2) == 0)
			dev.kind = LL_NCCL_DEV_IB;
		else if (i - seg == 4 && strncasecmp(s + seg, "RoCE", 4) == 0)
			dev.kind = LL_NCCL_DEV_ROCE;
		else if (i - seg == 5 && memcmp(s + seg, "SHARP", 5) == 0)
			dev.sharp = true;
	}
	if (r && r->n_devices < 64) {
		d = ll_array_push(&r->devices, &r->n_devices, sizeof(*d));
		*d = dev;
		d->name = ll_strndup(s + start, *ip - start);
	}
	*ip = i;
	return d;
}

/* `[0]mlx5_0:1/IB/SHARP [1]mlx5_1:1/RoCE [RO]; OOB ib0:...` and NCCL 2.21's merged NICs
 * `[0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE}`, added to `r` (NULL: only read). Returns
 * true when the list ended (";" or "OOB" seen), false when the line stopped inside it
 * (wrapped): that depends on the text alone. */
static bool parse_devices(struct ll_nccl_rank *r, const char *s, size_t n)
{
	size_t i = 0;

	for (;;) {
		while (i < n && (is_blank(s[i]) || s[i] == ',' || s[i] == '}'))
			i++;
		if (i >= n)
			return false;
		if (s[i] == ';' || HAS(s + i, n - i, "OOB"))
			return true;
		if (HAS(s + i, n - i, "[RO]")) {
			if (r)
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
		i++;
		if (i + 1 < n && s[i] == '=' && s[i + 1] == '{') {
			i += 2;
			continue; /* the merged list's members follow as "[k] name:port/kind" */
		}
		while (i < n && is_blank(s[i]))
			i++;
		device_add(r, s, n, &i);
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

/* ---- messages ----------------------------------------------------------------- */

/* G16, G24: "GPU Direct RDMA Disabled|Enabled ...". "Enabled for GPU" (NCCL < 2.18) is NCCL's
 * decision for that GPU and NIC; 2.18+'s "Enabled for HCA" only says the NIC can. */
static void gdr_words(struct ll_nccl_rank *r, const char *g, size_t n)
{
	if (contains_ci(g, n, "disabled"))
		r->gdr_disabled_line = true;
	else if (contains_ci(g, n, "enabled for gpu"))
		r->gdr_enabled_line = true;
}

/* G32: the error text of a plugin that exists but did not load. A missing plugin prints
 * "libnccl-net.so: cannot open shared object file: No such file or directory" (its own
 * name) or "No plugin found" / "Could not find"; anything else failed to load it. */
static bool plugin_load_failed(const char *m, size_t n)
{
	const char *c = FIND(m, n, "cannot open shared object file");

	if (FIND(m, n, "No plugin found") || FIND(m, n, "Could not find"))
		return false;
	if (FIND(m, n, "undefined symbol") || FIND(m, n, "not found (required by") || FIND(m, n, "wrong ELF class") ||
	    FIND(m, n, "invalid ELF header") || FIND(m, n, "Failed to find ncclNetPlugin symbol"))
		return true;
	if (c) {
		/* Which library is missing: the word before ": cannot open". */
		const char *e = c, *b;
		while (e > m && (e[-1] == ' ' || e[-1] == ':'))
			e--;
		b = e;
		while (b > m && b[-1] != ' ' && b[-1] != ':' && b[-1] != '/')
			b--;
		return !(e - b >= 11 && memcmp(b, "libnccl-net", 11) == 0);
	}
	return false;
}

/* G6, G25, G26: what the aws-ofi-nccl net plugin prints itself, "NET/OFI <text>" (its
 * include/nccl_ofi_log.h puts "NET/OFI " before every INFO and WARN). */
static void ofi_info(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n,
		     const char *t, size_t nt)
{
	const char *p;

	r->ofi = true;
	/* "Initializing aws-ofi-nccl 1.11.0-aws" (1.9+), "Using aws-ofi-nccl 1.3.0aws" (1.3-1.8):
	 * its PACKAGE_STRING. */
	if ((p = FIND(t, nt, "aws-ofi-nccl ")) && (HAS(t, nt, "Initializing ") || HAS(t, nt, "Using "))) {
		size_t i = (size_t)(p - t) + 13, e = i;
		while (e < nt && !is_blank(t[e]))
			e++;
		if (e > i)
			set_str(&r->ofi_version, t + i, e - i);
	} else if (HAS(t, nt, "Selected Provider is ") || HAS(t, nt, "Selected provider is ")) {
		/* "Selected Provider is efa" (1.0-1.6), "... is efa (found 4 nics)" (1.7-1.13),
		 * "Selected provider is efa, fabric is efa-direct (found 4 nics)" (1.14+): the
		 * plugin's init found NICs of that provider. */
		size_t i = 21, e = i;
		while (e < nt && !is_blank(t[e]) && t[e] != ',')
			e++;
		if (e > i) {
			set_str(&r->ofi_provider, t + i, e - i);
			proof(st, r, PF_RDMA_LISTED, m, n);
		}
		if ((p = FIND(t, nt, "(found "))) {
			size_t k = (size_t)(p - t) + 7;
			long nics = parse_num(t, nt, &k);
			if (nics >= 0)
				r->ofi_nics = (int)nics;
		}
	} else if (HAS(t, nt, "Could not disable CUDA API usage for HMEM, disabling GDR")) {
		/* 1.8.0-aws+ (1.7 printed it at TRACE level only): GPUDirect RDMA is off for
		 * this plugin, whatever the NIC could do. */
		r->gdr_disabled_line = true;
	}
}

/* "NET/<name> : ..." */
void ncclscan_msg_net(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n)
{
	size_t i = 4, name_start = 4, name_len;
	const char *rest, *g = FIND_ON(m, n, " : GPU Direct RDMA ", 'G');
	size_t nrest;

	if (g) {
		/* G16: "NET/X : GPU Direct RDMA ..." names the network in use (2.4-2.6 for GPU, 2.18+
		 * for HCA, 2.5-2.17 NET/IB's own "(no module)"); X may hold blanks. */
		size_t nx = (size_t)(g - m) - 4;
		gdr_words(r, g + 3, n - (size_t)(g + 3 - m));
		if (nx > 0) {
			set_once(&r->net_named, m + 4, nx);
			if (nx == 6 && memcmp(m + 4, "Socket", 6) == 0)
				proof(st, r, PF_NAMED_SOCKET, m, n);
		}
		return;
	}
	while (i < n && m[i] != ' ' && m[i] != ':')
		i++;
	name_len = i - name_start;
	while (i < n && (m[i] == ' ' || m[i] == ':'))
		i++;
	rest = m + i;
	nrest = n - i;
	if (name_len >= 2 && memcmp(m + name_start, "IB", 2) == 0) {
		if (HAS(rest, nrest, "Using [") || HAS(rest, nrest, "Using\t[")) {
			/* G18: the IB transport initialised these ports. The same list again (a
			 * process that initialises more than once) is not parsed again. */
			struct rank_state *rs = rank_state_of(r);
			r->ib_tried = r->ib_listed = true;
			proof(st, r, PF_RDMA_LISTED, m, n);
			if (r->n_devices > 0 && nrest == rs->n_devices_text && memcmp(rest, rs->devices_text, nrest) == 0) {
				st->cont_skip = true; /* its wrapped rest, if any, was read the first time */
				return;
			}
			free(rs->devices_text);
			rs->devices_text = ll_strndup(rest, nrest);
			rs->n_devices_text = nrest;
			clear_devices(r);
			parse_devices(r, rest + 6, nrest - 6);
			st->cont_skip = false;
		} else if (HAS(rest, nrest, "No device found")) {
			/* G30 */
			r->ib_no_device = r->ib_tried = true;
			proof(st, r, PF_NO_DEVICE, m, n);
		} else if (nrest > 1 && rest[0] == '[' && is_digit(rest[1])) {
			/* G18, NCCL 2.3: one "NET/IB: [0] mlx5_0:1/IB" line per port. */
			size_t k = 1;
			while (k < nrest && rest[k] != ']')
				k++;
			k++;
			while (k < nrest && is_blank(rest[k]))
				k++;
			r->ib_tried = r->ib_listed = true;
			proof(st, r, PF_RDMA_LISTED, m, n);
			device_add(r, rest, nrest, &k);
		}
	} else if (name_len == 6 && memcmp(m + name_start, "Socket", 6) == 0) {
		struct rank_state *rs = rank_state_of(r);

		if (HAS(rest, nrest, "Using [")) {
			/* G2 (NCCL < 2.4.8: printed at init) or G14 (>= 2.4.8: sockets chosen). */
			r->socket_line = true;
			if (r->ib_tried)
				r->socket_line_late = true;
			proof(st, r, PF_SOCKET_LINE, m, n);
			/* The same list again, with nothing added by a continuation since: as
			 * parsed already (each process prints it per communicator). */
			if (!(rs->ifs_from_text && nrest == rs->n_ifs_text && memcmp(rest, rs->ifs_text, nrest) == 0)) {
				free(rs->ifs_text);
				rs->ifs_text = ll_strndup(rest, nrest);
				rs->n_ifs_text = nrest;
				clear_ifs(r);
				parse_ifs(r, rest + 6, nrest - 6);
				rs->ifs_from_text = true;
			}
			st->cont_skip = false;
		} else if (HAS(rest, nrest, "Using ") && nrest > 6 && is_digit(rest[6])) {
			/* G15: "NET/Socket: Using 2 threads and 8 sockets per thread" (2.4.8+). */
			r->socket_threads = r->modern = true;
			proof(st, r, PF_SOCKET_THREADS, m, n);
		} else if (nrest > 0 && is_digit(rest[0]) && FIND(rest, nrest, "interfaces found")) {
			r->socket_line = true; /* G2, NCCL 2.3 */
		}
	} else if (name_len == 3 && memcmp(m + name_start, "OFI", 3) == 0) {
		ofi_info(st, r, m, n, rest, nrest);
	} else if (name_len == 6 && memcmp(m + name_start, "Plugin", 6) == 0) {
		const char *p = HAS(rest, nrest, "No plugin found") ? NULL : FIND(rest, nrest, "Loaded net plugin ");
		if (HAS(rest, nrest, "No plugin found")) {
			r->modern |= FIND(rest, nrest, "using internal implementation") != NULL;
		} else if (p) {
			size_t off = (size_t)(p - rest) + 18, e = off;
			const char *v = FIND(rest + off, nrest - off, " (v");
			e = v ? (size_t)(v - rest) : nrest;
			if (e > off) {
				set_str(&r->plugin_loaded, rest + off, e - off);
				proof(st, r, PF_RDMA_PLUGIN, m, n);
			}
		} else if (plugin_load_failed(rest, nrest)) {
			r->plugin_failed = true;
			proof(st, r, PF_PLUGIN_FAILED, m, n);
		} else if (FIND(rest, nrest, "using internal implementation") || FIND(rest, nrest, "Could not find")) {
			r->modern = true;
		}
	}
}

/* G12, G13, G20, G21: "Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA", "Ring 00 : 1 -> 0
 * via NET/Socket/0", "... via P2P/IPC", "... via SHM/direct/direct", "... via direct shared
 * memory", "CollNet 00/0 : 0 [send] via COLLNET/SHARP/0". */
void ncclscan_msg_channel(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n,
			  const char *via)
{
	const char *v = via + 5;
	size_t nv = n - (size_t)(v - m), i;
	struct ll_nccl_comm *c;

	if (m[0] == 'C' && m[1] == 'h')
		r->modern = true; /* "Channel .. via" is 2.7+ (2.4-2.6 print "Ring") */
	if (HAS(v, nv, "NET/")) {
		v += 4;
		nv -= 4;
		/* The name runs to the next '/' (plugin names may contain blanks: "AWS Libfabric"). */
		for (i = 0; i < nv && v[i] != '/'; i++)
			;
		c = comm_cur(st, r);
		if (i == 6 && memcmp(v, "Socket", 6) == 0) {
			r->socket_channels++;
			c->socket_channels++;
			proof(st, r, PF_SOCKET_CHANNEL, m, n);
			return;
		}
		r->net_channels++;
		c->net_channels++;
		if (FIND(v + i, nv - i, "/GDRDMA")) {
			r->gdr_channels++;
			c->gdr_channels++;
		}
		if (i > 0) {
			set_once(&r->channel_net, v, i);
			set_once(&c->channel_net, v, i);
		}
	} else if (HAS(v, nv, "P2P/")) {
		comm_cur(st, r)->p2p_channels++;
	} else if (HAS(v, nv, "SHM/") || HAS(v, nv, "direct shared memory")) {
		comm_cur(st, r)->shm_channels++;
	} else if (HAS(v, nv, "COLLNET/")) {
		comm_cur(st, r)->collnet_channels++;
	}
}

/* G10, G11: the network a communicator uses. */
void ncclscan_msg_network(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n,
			  const char *name, size_t nname)
{
	struct ll_nccl_comm *c;

	if (nname == 0)
		return;
	r->modern |= m[0] != 'U' || m[6] != 'i'; /* not NCCL 2.3's "Using internal Network" */
	set_once(&r->network, name, nname);
	c = comm_cur(st, r);
	set_once(&c->network, name, nname);
	if (nname == 6 && memcmp(name, "Socket", 6) == 0)
		proof(st, r, PF_NETWORK_SOCKET, m, n);
}

/* G1: "Bootstrap : Using eth0:10.0.0.1<0>", 2.30's "Bootstrap: Using ...". */
void ncclscan_msg_bootstrap(struct ll_nccl_rank *r, const char *m, size_t n)
{
	const char *u = FIND(m, n, "Using ");
	size_t i, e;

	if (!u || u - m > 16)
		return;
	r->modern = true; /* bootstrap has its own socket code, and this line, from 2.4.8 */
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
	if (r && !r->version) {
		r->version = ll_strndup(v, e);
		rank_state_of(r)->version_code = ncclscan_version_code(v, e);
	}
}

/* G5: "P2P plugin IBext_v8": the HPC-X net plugin loaded. */
void ncclscan_msg_p2p_plugin(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n)
{
	size_t e = 11;

	while (e < n && !is_blank(m[e]))
		e++;
	if (e > 11) {
		set_str(&r->plugin_loaded, m + 11, e - 11);
		proof(st, r, PF_RDMA_PLUGIN, m, n);
	}
}

/* "NCCL_IB_DISABLE set by environment to 1." (G33) and its HPC-X twin NCCL_IBEXT_DISABLE. */
static void env_disable(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n, size_t at,
			bool ext)
{
	if (n <= at || m[at] == '0')
		return;
	if (ext) {
		r->ibext_disabled = true;
	} else {
		r->ib_disabled = r->ib_tried = true;
		proof(st, r, PF_IB_DISABLED, m, n);
	}
}

static void verbs_missing(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n)
{
	r->verbs_missing = r->ib_tried = true;
	proof(st, r, PF_VERBS_MISSING, m, n);
}

/* ---- error traces ---------------------------------------------------------------- */

/* A trace's parts: FILE:LINE, the result R. NCCL prints one for each function an error
 * returns through (include/checks.h: NCCLCHECK and friends; group.cc's async jobs add
 * " [Async thread]", the proxy " [Proxy Thread]", SYSCHECK " (strerror)"), so an error
 * reads, top to bottom, from where it began to the call that returned it to the user. */
struct trace {
	const char *file;
	size_t nfile;
	long res;
};

static bool parse_trace(const char *m, size_t n, struct trace *t)
{
	size_t e = n, d;

	if (!trace_tail(m, e, e, &d, &e))
		return false;
	{
		size_t k = d;
		t->res = parse_num(m, e, &k);
	}
	e = d - 4;
	/* NCCL 2.30.7+ (include/debug.h INFO_LOC): the function, "(name)". */
	if (e > 0 && m[e - 1] == ')') {
		while (e > 0 && m[e - 1] != '(')
			e--;
		if (e < 2 || m[e - 2] != ' ')
			return false;
		e -= 2;
	}
	d = e;
	while (d > 0 && is_digit(m[d - 1]))
		d--;
	if (d == e || d < 2 || m[d - 1] != ':')
		return false;
	if (memchr(m, ' ', d - 1) || memchr(m, '\t', d - 1))
		return false; /* a path has no blanks */
	t->file = m;
	t->nfile = d - 1;
	return true;
}

/* Whether the path `f` names file `base` ("init.cc", "src/init.cc", a bazel path). */
static bool path_is(const char *f, size_t n, const char *base)
{
	size_t b = strlen(base);

	return n >= b && memcmp(f + n - b, base, b) == 0 && (n == b || f[n - b - 1] == '/');
}

bool ncclscan_msg_trace(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n)
{
	struct rank_state *rs = rank_state_of(r);
	struct trace t;

	if (!parse_trace(m, n, &t))
		return false;
	/* G17: the socket transport's own code was connecting. */
	if (path_is(t.file, t.nfile, "transport/net_socket.cc")) {
		r->socket_trace = true;
		proof(st, r, PF_SOCKET_TRACE, m, n);
	}
	if (t.res == 0)
		return true;
	proof(st, r, PF_FIRST_TRACE, m, n);
	/* G42: the error returned through init.cc (init.cu up to 2.4), where NCCL sets a
	 * communicator up, before the process had any communicator up: its init failed.
	 * init.cc also tears communicators down, which after an Init COMPLETE is no init. */
	if (!r->init_complete && !r->init_failed &&
	    (path_is(t.file, t.nfile, "init.cc") || path_is(t.file, t.nfile, "init.cu"))) {
		r->init_failed = true;
		proof(st, r, PF_INIT_TRACE, m, n);
		/* Why: the first WARN it printed (NCCL WARNs where an error begins), else
		 * where the error began, in NCCL's words for its result (ncclGetErrorString). */
		if (rs->proofs[PF_FIRST_WARN].line) {
			rs->init_cause = PF_FIRST_WARN;
			rs->init_failure = ll_strdup(rs->proofs[PF_FIRST_WARN].text);
		} else {
			const struct ll_nccl_proof *f = &rs->proofs[PF_FIRST_TRACE];
			struct trace ft;
			static const char *const words[] = {
				[1] = "unhandled cuda error", [2] = "unhandled system error", [3] = "internal error",
				[4] = "invalid argument", [5] = "invalid usage",
				[6] = "remote process exited or there was a network error",
				[7] = "NCCL operation in progress",
			};
			size_t nf = strlen(f->text);

			rs->init_cause = PF_FIRST_TRACE;
			if (parse_trace(f->text, nf, &ft)) {
				size_t e = (size_t)(ft.file - f->text) + ft.nfile + 1;
				while (e < nf && is_digit(f->text[e]))
					e++;
				rs->init_failure = ft.res > 0 && ft.res < (long)LL_ARRAY_SIZE(words)
							   ? ll_asprintf("NCCL error %ld (%s) at %.*s", ft.res, words[ft.res],
									 (int)e, f->text)
							   : ll_asprintf("NCCL error %ld at %.*s", ft.res, (int)e, f->text);
			} else {
				/* A trace longer than a proof keeps: its first words. */
				rs->init_failure = ll_asprintf("NCCL error at %s", f->text);
			}
		}
	}
	return true;
}

void ncclscan_msg_other(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, struct ll_nccl_rank *r,
			const char *m, size_t n)
{
	(void)s;
	switch (m[0]) {
	case 'A':
		/* G11, NCCL 2.27+: "Assigned NET plugin X to comm". */
		if (HAS(m, n, "Assigned NET plugin ") && n > 28 && HAS(m + n - 8, 8, " to comm"))
			ncclscan_msg_network(st, r, m, n, m + 20, n - 28);
		break;
	case 'C':
		if (HAS(m, n, "CUDA Dev ")) {
			/* G16, NCCL 2.4: "CUDA Dev 0[0], Socket NIC distance :  PHB" names the network. */
			const char *c = FIND(m, n, ", "), *d = FIND(m, n, " NIC distance");
			if (c && d && d > c + 2) {
				set_once(&r->net_named, c + 2, (size_t)(d - c - 2));
				if (d - c - 2 == 6 && memcmp(c + 2, "Socket", 6) == 0)
					proof(st, r, PF_NAMED_SOCKET, m, n);
			}
		} else if (HAS(m, n, "Connected all rings, use ring PXN ")) {
			/* G24, NCCL 2.24+: "... GDR 0|1". */
			long g = num_after(m, n, " GDR ", 5);
			if (g >= 0)
				r->gdr_ring = g > 0;
		} else if (HAS(m, n, "Connected NVLS tree")) {
			comm_cur(st, r)->nvls_channels += 1; /* G22 */
		} else if (HAS(m, n, "Count not open libibverbs.so.1") && n == 30) {
			verbs_missing(st, r, m, n); /* G31, NCCL 2.30+: the last library it tries */
		}
		break;
	case 'F':
		if (HAS(m, n, "Failed to open libibverbs"))
			verbs_missing(st, r, m, n); /* G31, an INFO line from 2.11 */
		break;
	case 'G':
		if (HAS(m, n, "GPU Direct RDMA "))
			gdr_words(r, m, n); /* G24, NCCL 2.7-2.17 */
		break;
	case 'I':
		/* G18, NCCL 2.27+: "Initialized NET plugin IB" (the IB plugin found ports). */
		if (HAS(m, n, "Initialized NET plugin ") && name_is_ib(m + 23, n - 23)) {
			r->ib_listed = r->ib_tried = true;
			proof(st, r, PF_RDMA_LISTED, m, n);
		}
		break;
	case 'N':
		if (HAS(m, n, "NCCL_IB_DISABLE set by environment to "))
			env_disable(st, r, m, n, 38, false);
		else if (HAS(m, n, "NCCL_IBEXT_DISABLE set by environment to "))
			env_disable(st, r, m, n, 41, true);
		else if (HAS(m, n, "NVLS comm 0x"))
			comm_cur(st, r)->nvls_channels += 1; /* G22 */
		break;
	case '[':
		/* NCCL 2.30: "[Rank 5] ncclCommInitRankConfig comm ..." */
		if (HAS(m, n, "[Rank ")) {
			const char *e = memchr(m, ']', n);
			if (e && e + 2 < m + n && HAS(e + 2, n - (size_t)(e + 2 - m), "nccl"))
				ncclscan_msg_comm(st, r, e + 2, n - (size_t)(e + 2 - m));
		}
		break;
	default:
		if (is_digit(m[0])) {
			/* G22: "24 coll channels, 24 collnet channels, 16 nvls channels, ..." */
			long nv = -1;
			const char *p = FIND(m, n, " nvls channels");
			if (p) {
				const char *b = p;
				while (b > m && is_digit(b[-1]))
					b--;
				if (b < p) {
					size_t k = (size_t)(b - m);
					nv = parse_num(m, (size_t)(p - m), &k);
				}
			}
			if (nv > 0)
				comm_cur(st, r)->nvls_channels += (unsigned long)nv;
		}
		break;
	}
}

void ncclscan_msg_warn(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, struct ll_nccl_rank *r,
		       const char *m, size_t n, int cls)
{
	enum ll_nccl_warn_class c = cls >= 0 ? (enum ll_nccl_warn_class)cls : ll_nccl_warn_classify(m, n);

	s->warnings_total++;
	s->by_class[c]++;
	if (r) {
		r->warn_mask |= 1u << c;
		r->n_warnings++;
		proof(st, r, PF_FIRST_WARN, m, n);
		if (HAS(m, n, "NET/OFI ")) {
			r->ofi = true; /* G6 */
			/* G26: aws-ofi-nccl 1.8.0-aws+ on an instance that needs GDR without it. */
			if (HAS(m + 8, n - 8, "GDR disabled on GDR-supported instance type"))
				r->gdr_disabled_line = true;
		}
		if (c == LL_NCCL_WARN_IB_COMPLETION || c == LL_NCCL_WARN_IB_VERBS_CALL) {
			r->ib_used = r->ib_tried = true; /* G19: IB verbs ran a connection */
		} else if (c == LL_NCCL_WARN_NO_NETWORK) {
			r->no_network = true; /* G40 */
			proof(st, r, PF_NO_NETWORK, m, n);
		} else if (c == LL_NCCL_WARN_NO_INTERFACE) {
			proof(st, r, PF_NO_NETWORK, m, n); /* G41 */
		} else if (HAS(m, n, "Failed to open libibverbs")) {
			verbs_missing(st, r, m, n); /* G31, a WARN up to 2.10 */
		} else if (HAS(m, n, "NET/IB : ") && FIND(m, n, "async") && FIND(m, n, " event")) {
			/* G18: "Got async event" (<= 2.22), "mlx5_0:1 Got async error event" (2.23+):
			 * the IB transport opened its ports. */
			r->ib_listed = r->ib_tried = true;
			proof(st, r, PF_RDMA_LISTED, m, n);
		}
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

/* ---- continuation and stripped lines ---------------------------------------------- */

static bool list_ends(struct ll_ncclscan *s, const char *t, size_t n)
{
	uint64_t h = ncclscan_hash(t, n, 0x6c697374);
	struct list_end *e;

	if (!s->list_ends)
		s->list_ends = ll_calloc(LL_LIST_END_SLOTS, sizeof(*s->list_ends));
	e = &s->list_ends[h & (LL_LIST_END_SLOTS - 1)];
	if (e->text && e->hash == h && e->len == n && memcmp(e->text, t, n) == 0)
		return e->ended;
	free(e->text);
	e->text = ll_strndup(t, n);
	e->hash = h;
	e->len = n;
	e->ended = parse_devices(NULL, t, n);
	return e->ended;
}

enum cont_kind ncclscan_msg_cont(struct ll_ncclscan *s, const char *m, size_t n)
{
	size_t i = 4, name_len;
	const char *rest;
	size_t nrest;
	enum cont_kind k = CONT_NONE;

	/* Only NET/IB... and NET/Socket lines start a list. */
	if (n < 6 || !((m[4] == 'I' && m[5] == 'B') || (n >= 10 && memcmp(m + 4, "Socket", 6) == 0)))
		return CONT_NONE;
	/* The same reading of "NET/<name> : <rest>" as ncclscan_msg_net(). */
	while (i < n && m[i] != ' ' && m[i] != ':')
		i++;
	name_len = i - 4;
	while (i < n && (m[i] == ' ' || m[i] == ':'))
		i++;
	rest = m + i;
	nrest = n - i;
	if (name_len >= 2 && memcmp(m + 4, "IB", 2) == 0 && (HAS(rest, nrest, "Using [") || HAS(rest, nrest, "Using\t[")))
		k = CONT_IB_DEVICES;
	else if (name_len == 6 && memcmp(m + 4, "Socket", 6) == 0 && HAS(rest, nrest, "Using ["))
		k = CONT_SOCKET_IFS;
	/* A GPU Direct RDMA line is one whatever else it holds. */
	if (k == CONT_NONE || FIND_ON(m, n, " : GPU Direct RDMA ", 'G'))
		return CONT_NONE;
	if (k == CONT_IB_DEVICES && list_ends(s, rest + 6, nrest - 6))
		return CONT_NONE;
	return k;
}

bool ncclscan_continues(const char *l, size_t n)
{
	return starts_with_index(l, n);
}

bool ncclscan_msg_continuation(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, enum cont_kind k,
			       const char *l, size_t n)
{
	bool add = r && !st->cont_skip;

	if (k == CONT_IB_DEVICES)
		return parse_devices(add ? r : NULL, l, n);
	if (add) {
		rank_state_of(r)->ifs_from_text = false;
		parse_ifs(r, l, n);
	}
	return false;
}

bool ncclscan_stripped_message(const char *l, size_t n, size_t *ret)
{
	static const struct { const char *s; size_t n; } starts[] = {
#define S(x) { x, sizeof(x) - 1 }
		S("NET/IB : "), S("NET/Socket : "), S("NET/Plugin"), S("Using network "), S("Using internal Network "),
		S("P2P plugin "), S("Bootstrap"), S("ncclCommInit"), S("ncclCommSplit"), S("NCCL_IB_DISABLE set "),
		S("NCCL_IBEXT_DISABLE set "), S("Failed to open libibverbs"), S("Initialized NET plugin "),
		S("Assigned NET plugin "), S("Channel "), S("CollNet "), S("NVLS comm "),
#undef S
	};
	size_t skip = ncclscan_continuation_prefix(l, n);

	if (skip >= n)
		return false;
	for (size_t i = 0; i < LL_ARRAY_SIZE(starts); i++)
		if (has_prefix(l + skip, n - skip, starts[i].s, starts[i].n)) {
			*ret = skip;
			return true;
		}
	return false;
}

void ncclscan_rank_clear_lists(struct ll_nccl_rank *r)
{
	clear_devices(r);
	clear_ifs(r);
	rank_state_of(r)->ifs_from_text = false;
}

void ncclscan_rank_clear_state(struct ll_nccl_rank *r)
{
	struct rank_state *rs = rank_state_of(r);

	for (size_t i = 0; i < r->n_comms; i++)
		comm_release(&r->comms[i]);
	free(r->comms);
	r->comms = NULL;
	r->n_comms = 0;
	for (int k = 0; k < PF_COUNT; k++)
		free(rs->proofs[k].text);
	free(rs->devices_text);
	rs->devices_text = NULL;
	free(rs->ifs_text);
	rs->ifs_text = NULL;
	rs->n_ifs_text = 0;
	free(rs->init_failure);
	rs->init_failure = NULL;
	rs->ifs_from_text = false;
	memset(rs->proofs, 0, sizeof(rs->proofs));
}
