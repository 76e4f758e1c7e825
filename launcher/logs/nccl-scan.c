/* NCCL debug-log scanner (see include/llmlaunch/nccl-scan.h and docs/logs.md): the
 * scanner and its streams, cutting input into lines and lines into records.
 *
 * Hot path: one pass over each 64-byte block makes two bit masks, of its newlines and
 * of its 'N' bytes followed by a 'C' (SSE2, the x86-64 baseline; elsewhere memchr does
 * the same job a line at a time). A marker can only start at such a pair, so a line
 * without one is counted and skipped, and a line with one pair that starts "NCCL INFO "
 * holds one INFO record and nothing else: no search for a second. Its process comes
 * from its prefix's bytes through two caches (the stream's last prefix, and a table of
 * recent ones), so a prefix is parsed once, not once per line. Then a check of the
 * first four bytes of the message: only the few kinds of line that matter go on to a
 * recogniser, and nothing is allocated per line.
 * nccl-scan-internal.h says where the other stages live. */
#include "nccl-scan-internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SCAN_HAVE_AVX2 1
#endif

/* How far ahead of the mask pass to prefetch (bytes). */
#ifndef SCAN_PREFETCH
#define SCAN_PREFETCH 1024
#endif

/* ---- lines -------------------------------------------------------------------- */

/* Whether a marker starts at the 'N' at q. */
static const char *marker_at(const char *q, const char *end, enum marker *kind)
{
	size_t rest = (size_t)(end - q);

	if (rest < 9 || q[1] != 'C' || q[2] != 'C' || q[3] != 'L' || q[4] != ' ')
		return NULL;
	if (memcmp(q + 5, "INFO", 4) == 0)
		*kind = MARK_INFO;
	else if (memcmp(q + 5, "WARN", 4) == 0)
		*kind = MARK_WARN;
	else if (rest >= 13 && memcmp(q + 5, "version ", 8) == 0)
		*kind = MARK_VERSION;
	else
		return NULL;
	return q;
}

/* The next "NCCL INFO ", "NCCL WARN " or "NCCL version " at or after `from`: memchr
 * for the 'N' (vectorised in libc). */
static const char *find_marker(const char *l, size_t n, size_t from, enum marker *kind)
{
	const char *p = l + from, *end = l + n;

	while (p < end) {
		const char *q = memchr(p, 'N', (size_t)(end - p));

		if (!q)
			return NULL;
		if (marker_at(q, end, kind))
			return q;
		p = q + 1;
	}
	return NULL;
}

/* The first four bytes of every message start some recogniser below reads (the digits
 * of "24 coll channels, ..." are checked apart). A message whose first four bytes are
 * not one of them is done after one multiply and one load, and that well-predicted
 * branch spares most lines the switch, whose jump a random mix of messages
 * mispredicts. A collision of two prefixes overwrites a slot: -Woverride-init says so. */
#define K4(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define K4_SLOT(k) ((uint32_t)((k) * 0xd037cdffu) >> 26)
#define K4_ENTRY(a, b, c, d) [K4_SLOT(K4(a, b, c, d))] = K4(a, b, c, d)
static const uint32_t msg_starts[64] = {
	K4_ENTRY('C', 'h', 'a', 'n'), K4_ENTRY('C', 'o', 'l', 'l'), K4_ENTRY('C', 'U', 'D', 'A'),
	K4_ENTRY('C', 'o', 'n', 'n'), K4_ENTRY('C', 'o', 'u', 'n'), K4_ENTRY('R', 'i', 'n', 'g'),
	K4_ENTRY('N', 'E', 'T', '/'), K4_ENTRY('N', 'C', 'C', 'L'), K4_ENTRY('N', 'V', 'L', 'S'),
	K4_ENTRY('U', 's', 'i', 'n'), K4_ENTRY('B', 'o', 'o', 't'), K4_ENTRY('n', 'c', 'c', 'l'),
	K4_ENTRY('c', 'o', 'm', 'm'), K4_ENTRY('c', 'u', 'd', 'a'), K4_ENTRY('P', '2', 'P', ' '),
	K4_ENTRY('A', 's', 's', 'i'), K4_ENTRY('F', 'a', 'i', 'l'), K4_ENTRY('G', 'P', 'U', ' '),
	K4_ENTRY('I', 'n', 'i', 't'), K4_ENTRY('t', 'r', 'a', 'n'), K4_ENTRY('[', 'R', 'a', 'n'),
};

/* Whether the message ends as a return trace does: " -> R", maybe a group after it
 * ("[Async thread]", "(strerror)"), trailing blanks left out. A result of 0 is no error
 * (NCCL traces only errors) and is read only on the socket transport's own lines (G17). */
static inline bool ends_like_trace(const char *m, size_t n)
{
	size_t e = n, d;

	while (e > 0 && (m[e - 1] == ' ' || m[e - 1] == '\t' || m[e - 1] == '\r'))
		e--;
	if (!trace_tail(m, e, 64, &d, &e))
		return false;
	return !(e - d == 1 && m[d] == '0') || (n > 24 && memcmp(m, "transport/net_socket.cc:", 24) == 0);
}

/* What a message's first four bytes say: nothing a recogniser reads, a message for the
 * dispatch below, or maybe a return trace (G17, G42, G43). A trace starts with the path
 * of one of NCCL's files, none of which starts like the messages the dispatch reads,
 * and is told by how it ends. */
enum msg_kind { MSG_NONE = 0, MSG_READ, MSG_TRACE };

static inline enum msg_kind msg_may_matter(const char *m, size_t n)
{
	const unsigned char *u = (const unsigned char *)m;
	uint32_t k = K4(u[0], u[1], u[2], u[3]);

	if (msg_starts[K4_SLOT(k)] != k)
		return ends_like_trace(m, n) ? MSG_TRACE : is_digit(m[0]) ? MSG_READ : MSG_NONE;
	if (k == K4('t', 'r', 'a', 'n'))
		return ends_like_trace(m, n) ? MSG_TRACE : MSG_NONE;
	return MSG_READ;
}

/* Which recogniser the text after "NCCL INFO " needs, if any: most lines need none,
 * so this stays next to scan_line (one call per line is measurable) and the
 * recognisers live in nccl-scan-msg.c. */
static void msg_dispatch(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, struct ll_nccl_rank *r,
			 const char *m, size_t n)
{
	const char *via;

	switch (m[0]) {
	case 'C':
		if ((HAS(m, n, "Channel ") || HAS(m, n, "CollNet ")) && (via = find_via(m, n)))
			ncclscan_msg_channel(st, r, m, n, via);
		else
			ncclscan_msg_other(s, st, r, m, n);
		break;
	case 'R':
		if (HAS(m, n, "Ring ") && (via = find_via(m, n)))
			ncclscan_msg_channel(st, r, m, n, via);
		break;
	case 'N':
		if (HAS(m, n, "NET/"))
			ncclscan_msg_net(st, r, m, n);
		else if (HAS(m, n, "NCCL version "))
			ncclscan_msg_version(s, r, m + 13, n - 13);
		else
			ncclscan_msg_other(s, st, r, m, n);
		break;
	case 'U':
		if (HAS(m, n, "Using network "))
			ncclscan_msg_network(st, r, m, n, m + 14, n - 14);
		else if (HAS(m, n, "Using internal Network "))
			ncclscan_msg_network(st, r, m, n, m + 23, n - 23);
		break;
	case 'B':
		if (HAS(m, n, "Bootstrap"))
			ncclscan_msg_bootstrap(r, m, n);
		break;
	case 'n':
		if (HAS(m, n, "nccl"))
			ncclscan_msg_comm(st, r, m, n);
		break;
	case 'c':
		if (HAS(m, n, "comm 0x"))
			ncclscan_msg_comm(st, r, m, n);
		else if (HAS(m, n, "cudaDriverVersion"))
			r->modern = true;
		break;
	case 'P':
		if (HAS(m, n, "P2P plugin "))
			ncclscan_msg_p2p_plugin(st, r, m, n);
		break;
	case 'A': case 'F': case 'G': case 'I': case 't': case '[':
	case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
		ncclscan_msg_other(s, st, r, m, n);
		break;
	default:
		break;
	}
}

static inline void apply(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const struct hand *h)
{
	struct ll_nccl_rank *r;

	switch (h->kind) {
	case HAND_INFO:
	case HAND_TRACE:
	case HAND_COUNT:
		/* Every process that printed counts, even with only lines that say nothing
		 * about the network; the prefix cache keeps that cheap. */
		r = ncclscan_record_rank(s, st, h->pre, h->npre, false);
		r->n_lines += h->repeat;
		if (h->cont != CONT_NONE)
			st->cont_rank = r;
		if (h->kind == HAND_INFO || (h->kind == HAND_TRACE && !ncclscan_msg_trace(st, r, h->m, h->n)))
			msg_dispatch(s, st, r, h->m, h->n);
		break;
	case HAND_WARN:
		ncclscan_msg_warn(s, st, ncclscan_prefixed_rank(s, st, h->pre, h->npre, true), h->m, h->n,
				  h->warn_class);
		break;
	case HAND_VERSION:
		ncclscan_msg_version(s, ncclscan_prefixed_rank(s, st, h->pre, h->npre, false), h->m, h->n);
		break;
	case HAND_CONT:
		ncclscan_msg_continuation(st, st->cont_rank, (enum cont_kind)h->cont, h->m, h->n);
		break;
	}
}

__attribute__((noinline)) void ncclscan_apply(struct ll_ncclscan *s, struct ll_ncclscan_stream *st,
					      const struct hand *h)
{
	apply(s, st, h);
}

void ncclscan_apply_recs(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const struct pipe_rec *recs, size_t n,
			 unsigned long line_offset)
{
	for (size_t k = 0; k < n; k++) {
		const struct pipe_rec *rec = &recs[k];
		struct hand h = { .kind = (enum hand_kind)rec->kind, .cont = (enum cont_kind)rec->cont, .pre = rec->pre,
				  .npre = rec->npre, .m = rec->m, .n = rec->n, .repeat = rec->repeat,
				  .warn_class = rec->kind == HAND_WARN ? rec->warn_class : -1 };

		st->lineno = rec->lineno + line_offset;
		apply(s, st, &h);
	}
}

/* A record for the recognisers: read now, or queued for the other thread. Inline in
 * the scanner's loop, with the recognisers' side out of it: the compiler would
 * otherwise weigh the whole of apply() and may keep this call out of the loop. */
static inline __attribute__((always_inline)) void hand(struct ll_ncclscan *s, struct ll_ncclscan_stream *st,
						       enum hand_kind k, enum cont_kind c, const char *pre,
						       size_t npre, const char *m, size_t n)
{
	struct hand h = { .kind = k, .cont = c, .pre = pre, .npre = npre, .m = m, .n = n, .warn_class = -1 };

	if (s->pipe) {
		/* A WARN's class comes from its text alone: told here, where pieces are cut
		 * side by side, not by the one thread that reads them in order. */
		if (k == HAND_WARN)
			h.warn_class = ncclscan_warn_class(s, m, n);
		ncclscan_pipe_push(&s->pipe_fill, s->pipe, st, &h);
	} else
		ncclscan_apply(s, st, &h);
}

/* An INFO record (its prefix is `pre`): whether its message starts a list that may go
 * on, wrapped, on the next lines (that decides how those lines are read, so the scanner
 * says it from the text), and whether its first bytes say a recogniser reads it. */
static inline enum msg_kind msg_kind_of(const char *m, size_t n)
{
	return n < 4 ? MSG_NONE : msg_may_matter(m, n);
}

/* msg_info() for a message whose msg_kind_of() the caller knows. */
static inline void msg_info_as(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const char *pre, size_t npre,
			       const char *m, size_t n, enum msg_kind mk)
{
	enum cont_kind k = CONT_NONE;

	if (mk == MSG_NONE) {
		hand(s, st, HAND_COUNT, CONT_NONE, pre, npre, NULL, 0);
		return;
	}
	if (memcmp(m, "NET/", 4) == 0 && (k = ncclscan_msg_cont(s, m, n)) != CONT_NONE)
		st->cont = k;
	hand(s, st, mk == MSG_TRACE ? HAND_TRACE : HAND_INFO, k, pre, npre, m, n);
}

static inline void msg_info(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const char *pre, size_t npre,
			    const char *m, size_t n)
{
	msg_info_as(s, st, pre, npre, m, n, msg_kind_of(m, n));
}


/* A marker-less line while a list may go on: true when it did. */
static bool continuation(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const char *l, size_t n)
{
	size_t skip = ncclscan_continuation_prefix(l, n);
	enum cont_kind k = st->cont;

	l += skip;
	n -= skip;
	if (!ncclscan_continues(l, n)) {
		st->cont = CONT_NONE;
		return false;
	}
	/* A device list ends at its ";" or "OOB", interfaces at the first other line. */
	if (k == CONT_IB_DEVICES && ncclscan_msg_continuation(NULL, NULL, k, l, n))
		st->cont = CONT_NONE;
	hand(s, st, HAND_CONT, k, NULL, 0, l, n);
	return true;
}

/* One line (without its newline). */
static void scan_line(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const char *l, size_t n)
{
	const char *m, *rec = l;
	enum marker kind;

	/* The pieces of one overlong line are one line (partial_add). */
	if (!st->in_long_line) {
		st->lineno++;
		s->lines++;
	}
	while (n > 0 && (l[n - 1] == '\r' || l[n - 1] == ' ' || l[n - 1] == '\t'))
		n--;
	m = find_marker(l, n, 0, &kind);
	if (!m) {
		size_t skip;
		if (st->cont != CONT_NONE && n > 0 && continuation(s, st, l, n))
			return;
		if (!st->marked && st->lineno <= SCAN_STRIPPED_LINES && n > 0 &&
		    ncclscan_stripped_message(l, n, &skip)) {
			/* A log whose NCCL prefixes and markers were removed: read it as long as
			 * no marked record says the file is a normal one. */
			msg_info(s, st, l, 0, l + skip, n - skip);
		}
		return;
	}
	st->cont = CONT_NONE;
	while (m) {
		enum marker next_kind = kind;
		size_t hdr = kind == MARK_VERSION ? 13 : 10;
		const char *msg = m + hdr <= l + n ? m + hdr : l + n;
		/* +1: an INFO message may itself start with "NCCL version ". */
		const char *next = find_marker(l, n, (size_t)(msg - l) + 1, &next_kind);
		const char *end = next ? ncclscan_record_start(msg, next, next_kind) : l + n;
		size_t nmsg;

		while (end > msg && is_blank(end[-1]))
			end--;
		nmsg = (size_t)(end - msg);
		if (kind == MARK_INFO) {
			st->marked = true;
			msg_info(s, st, rec, (size_t)(m - rec), msg, nmsg);
		} else if (kind == MARK_WARN) {
			st->marked = true;
			hand(s, st, HAND_WARN, CONT_NONE, rec, (size_t)(m - rec), msg, nmsg);
		} else {
			hand(s, st, HAND_VERSION, CONT_NONE, rec, (size_t)(m - rec), msg, nmsg);
		}
		if (!next)
			break;
		rec = end;
		m = next;
		kind = next_kind;
	}
}

/* ---- scanner and streams ------------------------------------------------------ */

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

void ll_ncclscan_free(struct ll_ncclscan *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_ranks; i++)
		ncclscan_rank_free(s->ranks[i]);
	free(s->ranks);
	free(s->table);
	free(s->prefix_cache);
	if (s->list_ends)
		for (size_t i = 0; i < LL_LIST_END_SLOTS; i++)
			free(s->list_ends[i].text);
	free(s->list_ends);
	ncclscan_warn_classes_free(s);
	for (size_t i = 0; i < s->n_warnings; i++) {
		free(s->warnings[i].file);
		free(s->warnings[i].text);
		free(s->warnings[i].host);
	}
	free(s->warnings);
	free(s->version);
	ll_strv_free(s->skipped, s->n_skipped);
	while (s->streams) {
		struct ll_ncclscan_stream *st = s->streams;
		s->streams = st->next;
		free(st->file);
		free(st->partial);
		free(st);
	}
	ncclscan_hosts_release(s);
	free(s);
}

struct ll_ncclscan_stream *ll_ncclscan_stream_new(struct ll_ncclscan *s, const char *file)
{
	struct ll_ncclscan_stream *st = ll_calloc(1, sizeof(*st));

	st->file = ll_strdup(file ? file : "-");
	st->tid = -1;
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
		/* An endless line: scan what we have, as a piece of the same line. */
		scan_line(s, st, st->partial, st->n_partial);
		st->in_long_line = true;
		st->n_partial = 0;
		if (n > SCAN_MAX_PARTIAL)
			n = SCAN_MAX_PARTIAL;
	}
	memcpy(st->partial + st->n_partial, d, n);
	st->n_partial += n;
}

/* Length of the message [m, e) without trailing blanks and CR. Most lines end in a
 * byte above the blank, which is neither: one compare for them. */
static inline size_t trim_end(const char *m, const char *e)
{
	if (e > m && (unsigned char)e[-1] > ' ')
		return (size_t)(e - m);
	while (e > m && (e[-1] == '\r' || is_blank(e[-1])))
		e--;
	return (size_t)(e - m);
}

/* Whether "NCCL INFO " starts at p (10 bytes there): two loads, not a memcmp call. */
static inline bool is_info_marker(const char *p)
{
	uint64_t w;
	uint16_t t;

	memcpy(&w, p, 8);
	memcpy(&t, p + 8, 2);
	return w == ((uint64_t)K4('N', 'C', 'C', 'L') | (uint64_t)K4(' ', 'I', 'N', 'F') << 32) &&
	       t == (uint16_t)('O' | ' ' << 8);
}

/* Whether "NCCL WARN " starts at p (10 bytes there). */
static inline bool is_warn_marker(const char *p)
{
	uint64_t w;
	uint16_t t;

	memcpy(&w, p, 8);
	memcpy(&t, p + 8, 2);
	return w == ((uint64_t)K4('N', 'C', 'C', 'L') | (uint64_t)K4(' ', 'W', 'A', 'R') << 32) &&
	       t == (uint16_t)('N' | ' ' << 8);
}

/* A complete line [l, e) whose first "NC" byte pair is at `first` and last at `last`
 * (NULL: none). A marker starts "NCCL ", so a line without such a pair cannot hold one:
 * only a wrapped list or a stripped log (nccl-scan-msg.c) reads it. When the first
 * pair starts "NCCL INFO " and is the only one, the line is the common one: one INFO
 * record, no other record after it. Its prefix names its process through the prefix
 * caches (nccl-scan-prefix.c), and its message goes straight to its recogniser.
 * Everything else takes scan_line, which does the same for such a line. */
static inline void line_done(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const char *l, const char *e,
			     const char *first, const char *last, unsigned long *pending)
{
	enum marker kind;

	/* `pending`: lines counted but not yet added to st->lineno and s->lines; added before
	 * anything that reads them (a proof, a warning's line number) runs. */
	if (st->cont == CONT_NONE) {
		if (!first) {
			if (st->marked || st->lineno + *pending >= SCAN_STRIPPED_LINES) {
				(*pending)++;
				return;
			}
		} else if (e - first >= 14 && is_info_marker(first) &&
			   (last == first || !find_marker(first + 10, (size_t)(e - first - 10), 1, &kind))) {
			/* A second "NC" may start a second record ("... NCCL INFO ..." run
			 * together): then scan_line splits the line. */
			const char *msg = first + 10;
			size_t nmsg = trim_end(msg, e);
			enum msg_kind mk = msg_kind_of(msg, nmsg);

			(*pending)++;
			st->marked = true;
			/* Most messages start with nothing a recogniser reads: they only count. */
			if (mk == MSG_NONE) {
				hand(s, st, HAND_COUNT, CONT_NONE, l, (size_t)(first - l), NULL, 0);
				return;
			}
			st->lineno += *pending;
			s->lines += *pending;
			*pending = 0;
			msg_info_as(s, st, l, (size_t)(first - l), msg, nmsg, mk);
			return;
		} else if (last == first && e - first >= 14 && is_warn_marker(first)) {
			/* A WARN record and nothing else (the only "NC" pair): what scan_line
			 * hands for it, without looking for a second marker. */
			(*pending)++;
			st->lineno += *pending;
			s->lines += *pending;
			*pending = 0;
			st->marked = true;
			hand(s, st, HAND_WARN, CONT_NONE, l, (size_t)(first - l), first + 10, trim_end(first + 10, e));
			return;
		}
	}
	st->lineno += *pending;
	s->lines += *pending;
	*pending = 0;
	scan_line(s, st, l, (size_t)(e - l));
}

#if defined(__SSE2__)
/* Bits of the 64 bytes at p equal to '\n', and of the 'N' bytes followed by a 'C'
 * (p[64] is read: the caller makes sure it is there). */
static inline __attribute__((always_inline)) void block_masks_sse2(const char *p, uint64_t *nl, uint64_t *nn)
{
	const __m128i cn = _mm_set1_epi8('\n'), cN = _mm_set1_epi8('N'), cC = _mm_set1_epi8('C');
	uint64_t a = 0, b = 0;

	for (int k = 0; k < 4; k++) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k));
		__m128i w = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k + 1));
		a |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, cn)) << (16 * k);
		b |= (uint64_t)(unsigned)_mm_movemask_epi8(
			     _mm_and_si128(_mm_cmpeq_epi8(v, cN), _mm_cmpeq_epi8(w, cC)))
		     << (16 * k);
	}
	*nl = a;
	*nn = b;
}

#ifdef SCAN_HAVE_AVX2
__attribute__((target("avx2"), always_inline)) static inline void block_masks_avx2(const char *p, uint64_t *nl,
										  uint64_t *nn)
{
	const __m256i cn = _mm256_set1_epi8('\n'), cN = _mm256_set1_epi8('N'), cC = _mm256_set1_epi8('C');
	__m256i a = _mm256_loadu_si256((const __m256i *)(const void *)p);
	__m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
	__m256i a1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 1));
	__m256i b1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 33));

	*nl = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, cn)) |
	      (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, cn)) << 32;
	*nn = (uint64_t)(uint32_t)_mm256_movemask_epi8(
		      _mm256_and_si256(_mm256_cmpeq_epi8(a, cN), _mm256_cmpeq_epi8(a1, cC))) |
	      (uint64_t)(uint32_t)_mm256_movemask_epi8(
		      _mm256_and_si256(_mm256_cmpeq_epi8(b, cN), _mm256_cmpeq_epi8(b1, cC)))
		      << 32;
}
#endif

/* Keep where a line's first and last "NC" pairs are. */
static inline __attribute__((always_inline)) void ns_add(const char **first, const char **last, const char *base,
							 uint64_t bits)
{
	if (!bits)
		return;
	if (!*first)
		*first = base + __builtin_ctzll(bits);
	*last = base + 63 - __builtin_clzll(bits);
}

/* Scan the complete lines of [p, end); returns where the unterminated rest starts. One
 * body, made twice below: with SSE2 and, where the CPU has it, AVX2. */
static inline __attribute__((always_inline)) const char *scan_lines_body(struct ll_ncclscan *s,
									  struct ll_ncclscan_stream *st,
									  const char *p, const char *end,
									  void (*block_masks)(const char *, uint64_t *,
											      uint64_t *))
{
	const char *ls = p, *c = p, *first = NULL, *last = NULL;
	unsigned long pending = 0;

	while (c < end) {
		uint64_t nl, nn;
		size_t len = (size_t)(end - c);
		const char *blk = c;
		char tail[80];

		if (len <= 64) {
			/* The last block, copied: the pair mask reads one byte past it. */
			memset(tail, 0, sizeof(tail));
			memcpy(tail, c, len);
			blk = tail;
		} else {
			/* Page-cache pages are scattered: prefetch across the 4 KiB boundaries the
			 * hardware prefetcher stops at. */
			_mm_prefetch(c + SCAN_PREFETCH, _MM_HINT_T0);
		}
		block_masks(blk, &nl, &nn);
		if (len < 64) {
			nl &= (1ULL << len) - 1;
			nn &= (1ULL << len) - 1;
		}
		if (!nn && !first && nl && st->cont == CONT_NONE &&
		    (st->marked || st->lineno + pending >= SCAN_STRIPPED_LINES)) {
			/* No "NC" in the block and none pending: its lines hold no marker; count them. */
			pending += (unsigned)__builtin_popcountll(nl);
			ls = c + 64 - __builtin_clzll(nl);
			nl = 0;
		}
		while (nl) {
			unsigned b = (unsigned)__builtin_ctzll(nl);
			uint64_t before = nn & ((1ULL << b) - 1);

			ns_add(&first, &last, c, before);
			nn &= ~before;
			line_done(s, st, ls, c + b, first, last, &pending);
			ls = c + b + 1;
			first = last = NULL;
			nl &= nl - 1;
		}
		ns_add(&first, &last, c, nn);
		c += len >= 64 ? 64 : len;
	}
	st->lineno += pending;
	s->lines += pending;
	return ls;
}

static const char *scan_lines_sse2(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const char *p,
				   const char *end)
{
	return scan_lines_body(s, st, p, end, block_masks_sse2);
}

#ifdef SCAN_HAVE_AVX2
__attribute__((target("avx2,popcnt"))) static const char *scan_lines_avx2(struct ll_ncclscan *s,
								     struct ll_ncclscan_stream *st, const char *p,
								     const char *end)
{
	return scan_lines_body(s, st, p, end, block_masks_avx2);
}
#endif

static const char *scan_lines(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const char *p, const char *end)
{
#ifdef SCAN_HAVE_AVX2
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt"))
		return scan_lines_avx2(s, st, p, end);
#endif
	return scan_lines_sse2(s, st, p, end);
}
#else
static const char *scan_lines(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const char *p, const char *end)
{
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break;
		scan_line(s, st, p, (size_t)(nl - p));
		p = nl + 1;
	}
	return p;
}
#endif

void ll_ncclscan_feed(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const char *data, size_t n)
{
	const char *p = data, *end = data + n;

	/* The end of a line begun in an earlier feed, which may have been one too long to
	 * keep whole (its pieces count as one line: partial_add). */
	if (st->n_partial || st->in_long_line) {
		const char *nl = memchr(p, '\n', n);

		if (!nl) {
			partial_add(s, st, p, n);
			return;
		}
		partial_add(s, st, p, (size_t)(nl - p));
		scan_line(s, st, st->partial, st->n_partial);
		st->n_partial = 0;
		st->in_long_line = false;
		p = nl + 1;
	}
	p = scan_lines(s, st, p, end);
	if (p < end)
		partial_add(s, st, p, (size_t)(end - p));
}

void ll_ncclscan_flush(struct ll_ncclscan *s, struct ll_ncclscan_stream *st)
{
	if (st->n_partial) {
		scan_line(s, st, st->partial, st->n_partial);
		st->n_partial = 0;
	}
	st->in_long_line = false;
}
