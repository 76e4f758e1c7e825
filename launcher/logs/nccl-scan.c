/* NCCL debug-log scanner (see include/llmlaunch/nccl-scan.h and docs/logs.md): the
 * scanner and its streams, cutting input into lines and lines into records.
 *
 * Hot path: one memchr per line for its end, one memmem per line for "NCCL ", then a
 * dispatch on the first byte of the message. Only the few kinds of line that matter
 * resolve their process (prefix parse + hash lookup, cached per stream), and nothing
 * is allocated per line. nccl-scan-internal.h says where the other stages live. */
#include "nccl-scan-internal.h"

#include <stdlib.h>
#include <string.h>

#define SCAN_MAX_PARTIAL (64u << 10)

/* ---- lines -------------------------------------------------------------------- */

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

/* Which recogniser the text after "NCCL INFO " needs, if any: most lines need none,
 * so this stays next to scan_line (one call per line is measurable) and the
 * recognisers live in nccl-scan-msg.c. */
static void msg_info(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, struct ll_nccl_rank *r,
		     const char *m, size_t n)
{
	const char *via;

	if (n < 4)
		return;
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
		size_t skip;
		if (st->cont != CONT_NONE && n > 0) {
			skip = ncclscan_continuation_prefix(l, n);
			ncclscan_msg_continuation(st, l + skip, n - skip);
		} else if (!st->marked && n > 0 && ncclscan_stripped_message(l, n, &skip)) {
			/* A log whose NCCL prefixes and markers were removed: read it as long as
			 * no marked record says the file is a normal one. */
			msg_info(s, st, ncclscan_record_rank(s, st, l, 0, false), l + skip, n - skip);
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
			/* Every process that printed counts, even with only lines that say
			 * nothing about the network; the prefix cache keeps that cheap. */
			struct ll_nccl_rank *r = ncclscan_record_rank(s, st, rec, (size_t)(m - rec), false);
			st->marked = true;
			msg_info(s, st, r, msg, nmsg);
		} else if (kind == MARK_WARN) {
			st->marked = true;
			ncclscan_msg_warn(s, st, rec, (size_t)(m - rec), msg, nmsg);
		}
		else
			ncclscan_msg_version(s, ncclscan_prefixed_rank(s, st, rec, (size_t)(m - rec), false),
					     msg, nmsg);
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
	ncclscan_hosts_release(s);
	free(s);
}

struct ll_ncclscan_stream *ll_ncclscan_stream_new(struct ll_ncclscan *s, const char *file)
{
	struct ll_ncclscan_stream *st = ll_calloc(1, sizeof(*st));

	st->file = ll_strdup(file ? file : "-");
	st->last_tid = st->tid = -1;
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
