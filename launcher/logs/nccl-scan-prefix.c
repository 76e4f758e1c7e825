/* What stands before an NCCL record: NCCL's `host:pid:tid [dev]`, a launcher's own
 * `[1,4]<stdout>:` or `[default0]:`, timestamps on continuation lines; and the table of
 * processes those prefixes name (see nccl-scan-internal.h). */
#include "nccl-scan-internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
	struct rank_state *rs = ll_calloc(1, sizeof(*rs));
	struct ll_nccl_rank *r = &rs->pub;

	r->host = host ? ll_strndup(host, n) : NULL;
	r->pid = pid;
	r->cuda_dev = r->rank = r->nranks = -1;
	r->gdr = -1;
	r->gdr_ring = -1;
	r->ofi_nics = -1;
	r->file = ll_strdup(st->file);
	rs->fill_rank = -1;
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

struct nccl_prefix {
	const char *host;
	size_t n_host;
	long pid;
	long tid;
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

static bool digits(const char *p, size_t n, size_t at, size_t count)
{
	for (size_t k = 0; k < count; k++)
		if (at + k >= n || !is_digit(p[at + k]))
			return false;
	return true;
}

/* Length of an RFC 3339 timestamp at p (2025-05-16T16:39:51.208-07:00, ...Z, or none),
 * 0 when p does not start with one. */
static size_t rfc3339_len(const char *p, size_t n)
{
	size_t i = 19;

	if (!digits(p, n, 0, 4) || p[4] != '-' || !digits(p, n, 5, 2) || p[7] != '-' || !digits(p, n, 8, 2) ||
	    (p[10] != 'T' && p[10] != ' ') || !digits(p, n, 11, 2) || p[13] != ':' || !digits(p, n, 14, 2) ||
	    p[16] != ':' || !digits(p, n, 17, 2))
		return 0;
	if (i < n && (p[i] == '.' || p[i] == ',')) {
		i++;
		while (i < n && is_digit(p[i]))
			i++;
	}
	if (i < n && p[i] == 'Z')
		return i + 1;
	if (i + 5 < n && (p[i] == '+' || p[i] == '-') && digits(p, n, i + 1, 2) && p[i + 3] == ':' &&
	    digits(p, n, i + 4, 2))
		return i + 6;
	return i;
}

/* Parse `host:pid:tid [dev]` (and for WARN a `file.cc:NN` after it) at the end of the
 * bytes before "NCCL ". Returns false when they do not end that way. */
static bool parse_prefix_end(const char *p, size_t n, bool warn, struct nccl_prefix *ret)
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
	if (i > 0 && p[i - 1] == ':') {
		/* A log shipper's timestamp glued to the host: "...16:39:51.208-07:00ip-10-36-29-253". */
		size_t t = i - 1, ts;
		while (t > 0 && !is_blank(p[t - 1]) && p[t - 1] != '|')
			t--;
		ts = rfc3339_len(p + t, end - t);
		if (ts > 0 && t + ts > i && t + ts < end)
			i = t + ts;
	}
	if (i == end || tid < 0)
		return false;
	ret->host = p + i;
	ret->n_host = end - i;
	ret->pid = pid;
	ret->tid = tid;
	ret->cuda_dev = (int)dev;
	ret->launcher_rank = i > 0 ? parse_launcher_rank(p, i) : -1;
	return true;
}

/* A WARN's prefix ends in `file.cc:NN` (debug.cc), 2.30.7+'s in `file.cc:NN (func)`, and
 * a net plugin's in what it passes as the file: aws-ofi-nccl passes __PRETTY_FUNCTION__,
 * which in C++ holds blanks ("int f(int, char*):12"). Where the last word is not the file,
 * NCCL's own `host:pid:tid [dev] ` is looked for from the left. */
static bool parse_prefix(const char *p, size_t n, bool warn, struct nccl_prefix *ret)
{
	if (parse_prefix_end(p, n, warn, ret))
		return true;
	if (!warn)
		return false;
	for (size_t k = 1; k + 3 < n; k++) {
		size_t j = k + 1;

		if (p[k] != '[' || !is_blank(p[k - 1]) || !is_digit(p[j]))
			continue;
		while (j < n && is_digit(p[j]))
			j++;
		if (j + 1 < n && p[j] == ']' && is_blank(p[j + 1]) && parse_prefix_end(p, j + 1, false, ret))
			return true;
	}
	return false;
}

/* ---- the prefix cache ---------------------------------------------------------- */

/* A log interleaves a few threads of a few processes, each printing the same prefix
 * over and over: what a prefix names is remembered by its bytes (and whether it ends a
 * WARN's `file:NN`), so that it is parsed once, not once per line. What parsing gives
 * depends on the bytes alone (a prefix that does not parse is kept as such), and a hit
 * does what parsing them again would: the cache changes no verdict. The lookup is
 * ncclscan_prefix_lookup() (nccl-scan-internal.h); a miss comes here. */

/* Remember what `pre` parsed as (`px` NULL: it did not parse). */
static struct prefix_slot *cache_put(struct ll_ncclscan *s, const char *pre, size_t npre, bool warn, uint64_t hash,
				     struct ll_nccl_rank *r, const struct nccl_prefix *px)
{
	struct prefix_slot *e = &s->prefix_scratch; /* too long to keep: read at once, never kept */

	if (npre <= LL_PREFIX_CACHE_BYTES) {
		if (!s->prefix_cache)
			s->prefix_cache = ll_calloc(LL_PREFIX_CACHE_SLOTS, sizeof(*s->prefix_cache));
		e = &s->prefix_cache[hash & (LL_PREFIX_CACHE_SLOTS - 2)];
		e[1] = e[0];
		e->hash = hash;
		e->len = (uint8_t)npre;
		e->warn = warn;
		memcpy(e->bytes, pre, npre);
	}
	e->rank = r;
	e->tid = px ? px->tid : -1;
	e->cuda_dev = px ? px->cuda_dev : -1;
	e->launcher_rank = px ? px->launcher_rank : -1;
	return e;
}

const struct prefix_slot *ncclscan_prefix_miss(struct ll_ncclscan *s, struct ll_ncclscan_stream *st,
					       const char *pre, size_t npre, bool warn, uint64_t hash)
{
	struct nccl_prefix px;
	struct prefix_slot *e;

	if (!parse_prefix(pre, npre, warn, &px))
		e = cache_put(s, pre, npre, warn, hash, NULL, NULL);
	else
		e = cache_put(s, pre, npre, warn, hash, rank_get(s, st, px.host, px.n_host, px.pid), &px);
	st->last_slot = e == &s->prefix_scratch ? NULL : e;
	return e;
}

struct ll_nccl_rank *ncclscan_anonymous(struct ll_ncclscan *s, struct ll_ncclscan_stream *st)
{
	if (!s->anonymous)
		s->anonymous = rank_new(s, NULL, 0, -1, st);
	return s->anonymous;
}

struct ll_nccl_rank *ncclscan_prefixed_rank(struct ll_ncclscan *s, struct ll_ncclscan_stream *st,
					    const char *pre, size_t npre, bool warn)
{
	const struct prefix_slot *e = ncclscan_prefix_slot(s, st, pre, npre, warn);

	return e->rank ? ncclscan_record(s, st, e) : NULL;
}

void ncclscan_rank_free(struct ll_nccl_rank *r)
{
	ncclscan_rank_clear_lists(r);
	ncclscan_rank_clear_state(r);
	free(r->host);
	free(r->file);
	free(r->version);
	free(r->network);
	free(r->channel_net);
	free(r->plugin_loaded);
	free(r->net_named);
	free(r->bootstrap);
	free(r->ofi_version);
	free(r->ofi_provider);
	free(rank_state_of(r));
}

/* ---- record boundaries -------------------------------------------------------- */

/* Where the record whose marker is at `m` begins: back over `host:pid:tid [dev] ` (and
 * a WARN's `file:NN `). Returns m itself when no prefix precedes it. */
const char *ncclscan_record_start(const char *from, const char *m, enum marker kind)
{
	struct nccl_prefix px;
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
size_t ncclscan_continuation_prefix(const char *l, size_t n)
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
