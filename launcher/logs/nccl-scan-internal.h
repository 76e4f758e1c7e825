/* Internal to the NCCL log scanner (include/llmlaunch/nccl-scan.h), split by stage:
 *   nccl-scan.c          the scanner and its streams: lines, markers, which recogniser (the hot path)
 *   nccl-scan-prefix.c   what stands before a record: NCCL and launcher prefixes, the process table
 *   nccl-scan-msg.c      what a message says: the per-kind recognisers, warning classes
 *   nccl-scan-files.c    files and directories fed to streams
 *   nccl-scan-parallel.c a large file in pieces cut into records on every CPU, the records
 *                        read in file order by one thread at a time: the same calls in
 *                        the same order (struct hand)
 *   nccl-scan-verdict.c  transport, GDR and fallback per process, host and job; words for people */
#ifndef LLMLAUNCH_NCCL_SCAN_INTERNAL_H
#define LLMLAUNCH_NCCL_SCAN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "llmlaunch/nccl-scan.h"

enum cont_kind { CONT_NONE = 0, CONT_IB_DEVICES, CONT_SOCKET_IFS };

/* A line is kept whole across two feeds up to this length; a longer one is scanned in
 * pieces (nccl-scan.c). */
#define SCAN_MAX_PARTIAL (64u << 10)
/* A log whose NCCL prefixes and markers were removed is a posted excerpt: its stripped
 * messages are looked for in a file's first lines only, until a marker shows up. */
#define SCAN_STRIPPED_LINES 1000
/* Regular files are fed to the scanner a mapped window of this many bytes at a time
 * (nccl-scan-files.c). */
#define SCAN_WINDOW (8u << 20)

/* The prefix cache (nccl-scan-prefix.c): a prefix's bytes and what parsing them gave. */
#define LL_PREFIX_CACHE_SLOTS 4096
#define LL_PREFIX_CACHE_BYTES 96
struct prefix_slot {
	uint64_t hash;
	struct ll_nccl_rank *rank;
	long tid;
	int cuda_dev, launcher_rank;
	uint8_t len;
	bool warn;
	char bytes[LL_PREFIX_CACHE_BYTES];
};


struct ll_ncclscan_stream {
	struct ll_ncclscan_stream *next;
	char *file;
	unsigned long lineno;           /* of the record being read (the recognisers get a copy) */
	/* The scanner's side: lines, records, wrapped lists. */
	char *partial;
	size_t n_partial;
	bool marked;                    /* an INFO or WARN marker was seen: stripped lines are not read */
	enum cont_kind cont;            /* what a wrapped continuation line would extend */
	bool in_long_line;              /* the current line was too long and is being scanned in pieces */
	/* The recognisers' side: processes, and what a list's lines go on. */
	struct ll_nccl_rank *last;      /* last process seen: prefix-less lines belong to it */
	long tid;                       /* the thread of the record being read, -1 none */
	const struct prefix_slot *last_slot; /* the prefix cache slot of the last record, NULL none */
	struct ll_nccl_rank *cont_rank; /* the process whose list a continuation line goes on */
	bool cont_skip;                 /* that list was read already: its rest is not */
};

/* Lines that proved something about a process, the first of each kind. */
enum proof_kind {
	PF_SOCKET_CHANNEL,   /* via NET/Socket */
	PF_NETWORK_SOCKET,   /* Using network Socket, Assigned NET plugin Socket */
	PF_NAMED_SOCKET,     /* NET/Socket : GPU Direct RDMA ..., Socket NIC distance */
	PF_SOCKET_THREADS,   /* NET/Socket: Using N threads */
	PF_SOCKET_TRACE,     /* transport/net_socket.cc:N -> R */
	PF_SOCKET_LINE,      /* NET/Socket : Using [0]... */
	PF_NO_DEVICE,        /* NET/IB : No device found */
	PF_VERBS_MISSING,    /* Failed to open libibverbs.so[.1] */
	PF_PLUGIN_FAILED,    /* a net plugin that could not be loaded */
	PF_IB_DISABLED,      /* NCCL_IB_DISABLE set by environment to 1 */
	PF_RDMA_LISTED,      /* NET/IB : Using [0]..., Initialized NET plugin IB, IB async event */
	PF_RDMA_PLUGIN,      /* P2P plugin IBext_v8, Loaded net plugin */
	PF_NO_NETWORK,       /* Error: network X not found, no interface found */
	PF_FIRST_WARN,       /* the first WARN of the process */
	PF_FIRST_TRACE,      /* its first return trace of an error: FILE:N -> R, R != 0 */
	PF_INIT_TRACE,       /* that trace through init.cc: its communicator's init failed */
	PF_COUNT,
};

/* A thread and the communicator its lines currently belong to. */
struct tid_comm {
	long tid;
	int comm;                       /* index in comms[], -1 none */
};
#define RANK_TIDS 16
#define RANK_MAX_COMMS 256

/* The scanner's state of one process around the public record (ranks[] point at `pub`). */
struct rank_state {
	struct ll_nccl_rank pub;
	struct tid_comm tids[RANK_TIDS];
	size_t n_tids, tid_next;
	size_t last_tid_slot;           /* where the last comm_cur() lookup found its thread */
	struct ll_nccl_proof proofs[PF_COUNT];
	int version_code;               /* 20402 for 2.4.2, 0 unknown */
	int fill_rank;                  /* the launcher's rank from a prefix, -1 none (nccl-scan-prefix.c) */
	char *devices_text;             /* the last NET/IB device list as printed: not parsed again */
	size_t n_devices_text;
	char *init_failure;             /* the words of ll_nccl_rank.init_failure */
	enum proof_kind init_cause;     /* the line that gave them: PF_FIRST_WARN or PF_FIRST_TRACE */
	char *ifs_text;                 /* the last NET/Socket interface list as printed */
	size_t n_ifs_text;
	bool ifs_from_text;             /* socket_ifs is that list, nothing added since */
};

static inline struct rank_state *rank_state_of(struct ll_nccl_rank *r)
{
	return (struct rank_state *)((char *)r - offsetof(struct rank_state, pub));
}

/* The records of one piece of a file (nccl-scan-parallel.c), in blocks: a record
 * points into the file's mapping, which stays until the record has been read. */
struct pipe_rec {
	unsigned long lineno;
	const char *pre, *m;
	uint32_t npre, n;
	uint32_t repeat;          /* INFO records after it with its prefix and nothing to read */
	uint8_t kind, cont;
	int8_t warn_class;        /* a WARN's class (from its text alone, so told by the cutting) */
};
struct pipe_fill {
	struct pipe_rec *data;    /* the block being filled */
	size_t used, size;        /* records in it; room for */
};

/* Whether a NET/IB device list as printed ends on its line (ncclscan_msg_cont()): each
 * process prints the same list for each communicator, and reading it again to its end
 * cost more than the rest of the scanner's work on the line. */
#define LL_LIST_END_SLOTS 256
struct list_end {
	uint64_t hash;
	char *text;
	size_t len;
	bool ended;
};

/* WARN texts and their class (ncclscan_warn_class()): the same warning comes from many
 * processes, and its class takes a dozen searches of its text. */
#define LL_WARN_CLASS_SLOTS 256
#define LL_WARN_CLASS_TEXT 1024   /* longer texts are classified each time */
struct warn_class_slot {
	uint64_t hash;
	char *text;               /* NULL: empty */
	size_t len;
	int cls;
};

struct ll_ncclscan {
	enum ll_net_expect expect;
	/* A large file is cut into records on every CPU (nccl-scan-parallel.c); a thread's
	 * cutting runs on a copy of this struct with `pipe` set, the records go to its
	 * piece, and the one thread reading them in order uses this one. */
	struct ncclscan_pipe *pipe;     /* set on a cutting thread's copy */
	struct pipe_fill pipe_fill;     /* the block of records it fills */
	unsigned threads;               /* ll_ncclscan_set_threads(), when threads_set */
	size_t parallel_min;
	size_t piece_size;              /* ll_ncclscan_set_piece_size(), 0 the default */
	bool threads_set;
	double now;
	struct ll_nccl_rank **ranks;
	size_t n_ranks;
	size_t *table;                  /* open addressing: index + 1, 0 empty */
	size_t table_size;
	struct ll_nccl_rank *anonymous; /* lines without any prefix and no earlier process */
	struct list_end *list_ends;     /* LL_LIST_END_SLOTS: NET/IB device lists and whether they end */
	struct warn_class_slot *warn_classes; /* LL_WARN_CLASS_SLOTS, allocated at the first WARN */
	struct prefix_slot *prefix_cache; /* LL_PREFIX_CACHE_SLOTS, allocated at the first prefix */
	struct prefix_slot prefix_scratch; /* what a prefix too long for the cache parsed as */
	struct ll_nccl_warning *warnings;
	size_t n_warnings;
	unsigned long warnings_total;
	unsigned long by_class[LL_NCCL_WARN_CLASS_COUNT];
	char *version;
	unsigned long files, lines;
	struct ll_ncclscan_stream *streams;
	struct ll_nccl_host *hosts;
	size_t n_hosts;
	char **skipped;                 /* "PATH: why", entries of a directory that were not read */
	size_t n_skipped;
	unsigned long skipped_total;
	struct ll_nccl_job_comm *comms;
	size_t n_comms;
	struct ll_nccl_verdict verdict;
};

/* What starts a record: "NCCL INFO ", "NCCL WARN " or "NCCL version ". */
enum marker { MARK_INFO, MARK_WARN, MARK_VERSION };

/* ---- small helpers on (pointer, length) ---------------------------------------- */

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Parse a decimal number at s[*i]; returns -1 when there is none. */
static inline long parse_num(const char *s, size_t n, size_t *i)
{
	long v = 0;
	size_t start = *i;

	while (*i < n && is_digit(s[*i]) && v < 100000000L)
		v = v * 10 + (s[(*i)++] - '0');
	return *i > start ? v : -1;
}

static inline bool has_prefix(const char *s, size_t n, const char *lit, size_t nlit)
{
	return n >= nlit && memcmp(s, lit, nlit) == 0;
}
#define HAS(s, n, lit) has_prefix((s), (n), lit, sizeof(lit) - 1)

/* memmem for the short needles and lines here: glibc's memmem sets up a general search
 * on every call, which costs more than the search itself on a 100-byte line. memchr
 * looks for the needle's byte at `k`, which the caller picks rare in the lines searched
 * (each false hit costs a compare and another call); the first match is returned
 * whichever byte anchors the search. */
static inline const char *find_at(const char *s, size_t n, const char *lit, size_t nlit, size_t k)
{
	const char *p, *last;

	if (nlit == 0 || n < nlit)
		return NULL;
#if defined(__SSE2__)
	{
		/* The anchor at s[i + k] for each start i <= n - nlit, 16 places at once, inline
		 * (a memchr call costs more than this on the short lines here). */
		const __m128i c = _mm_set1_epi8(lit[k]);
		size_t i, imax = n - nlit;

		for (i = 0; i + k + 16 <= n; i += 16) {
			unsigned bits = (unsigned)_mm_movemask_epi8(
				_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(s + k + i)), c));
			for (; bits; bits &= bits - 1) {
				size_t j = i + (size_t)__builtin_ctz(bits);
				if (j > imax)
					return NULL;
				if (memcmp(s + j, lit, nlit) == 0)
					return s + j;
			}
		}
		for (; i <= imax; i++)
			if (s[i + k] == lit[k] && memcmp(s + i, lit, nlit) == 0)
				return s + i;
		return NULL;
	}
#endif
	p = s + k;
	last = s + (n - nlit) + k; /* the anchor's last possible place */
	while (p <= last) {
		const char *q = memchr(p, lit[k], (size_t)(last - p) + 1);
		if (!q)
			return NULL;
		if (memcmp(q - k, lit, nlit) == 0)
			return q - k;
		p = q + 1;
	}
	return NULL;
}

/* find_at anchored on the needle's first non-blank byte: blanks are everywhere. */
static inline const char *find(const char *s, size_t n, const char *lit, size_t nlit)
{
	size_t k = 0;

	while (k + 1 < nlit && lit[k] == ' ')
		k++;
	return find_at(s, n, lit, nlit, k);
}

/* A hash of (p, n) for the scanner's caches: two chains of multiplies over 8-byte words,
 * the last word ending at n. */
static inline uint64_t ncclscan_hash(const char *p, size_t n, uint64_t seed)
{
	uint64_t a = (uint64_t)n << 1 ^ seed, b = 0, w;
	size_t i = 0;

	if (n < 8) {
		for (; i < n; i++)
			a = (a ^ (unsigned char)p[i]) * 0x100000001b3ULL;
		return a ^ (a >> 29);
	}
	for (; i + 16 <= n; i += 16) {
		memcpy(&w, p + i, 8);
		a = (a ^ w) * 0x9e3779b97f4a7c15ULL;
		memcpy(&w, p + i + 8, 8);
		b = (b ^ w) * 0xff51afd7ed558ccdULL;
	}
	if (i + 8 <= n) {
		memcpy(&w, p + i, 8);
		a = (a ^ w) * 0x9e3779b97f4a7c15ULL;
	}
	memcpy(&w, p + n - 8, 8);
	b = (b ^ w) * 0xc4ceb9fe1a85ec53ULL;
	a ^= b ^ (b >> 32);
	return a ^ (a >> 29);
}

/* a[0..n) == b[0..n) for the short prefixes of the prefix cache, without a libc call. */
static inline bool same_bytes(const char *a, const char *b, size_t n)
{
	size_t i = 0;
	uint64_t x, y;

#if defined(__SSE2__)
	if (n >= 16) {
		/* 16-byte compares, the last one ending at n (it may overlap the one before). */
		__m128i eq = _mm_set1_epi8(-1);

		for (; i + 16 < n; i += 16)
			eq = _mm_and_si128(eq, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(a + i)),
							      _mm_loadu_si128((const __m128i *)(const void *)(b + i))));
		eq = _mm_and_si128(eq, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(a + n - 16)),
						      _mm_loadu_si128((const __m128i *)(const void *)(b + n - 16))));
		return _mm_movemask_epi8(eq) == 0xffff;
	}
#endif
	if (n < 8) {
		for (; i < n; i++)
			if (a[i] != b[i])
				return false;
		return true;
	}
	for (; i + 8 <= n; i += 8) {
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y)
			return false;
	}
	/* The last, partial word: compare the 8 bytes that end at n (they overlap). */
	memcpy(&x, a + n - 8, 8);
	memcpy(&y, b + n - 8, 8);
	return x == y;
}
#define FIND(s, n, lit) find((s), (n), lit, sizeof(lit) - 1)
/* FIND anchored on the byte `c` of the needle (the first one). */
#define FIND_ON(s, n, lit, c) find_at((s), (n), lit, sizeof(lit) - 1, (size_t)(strchr(lit, c) - (lit)))

/* " via " in a channel line (the blank before it), or NULL: the first 'v' mostly starts
 * it. Its 'v' at q: 1 <= q <= n - 5. SSE2 looks at 16 bytes at once, inline: a memchr
 * call costs more than the search on a line of 60 bytes. */
static inline const char *find_via(const char *m, size_t n)
{
	const char *p = m, *end = m + n;

#if defined(__SSE2__)
	if (n >= 5) {
		const __m128i cv = _mm_set1_epi8('v');
		size_t i = 1, qmax = n - 5;

		for (; i + 16 <= n; i += 16) {
			unsigned bits = (unsigned)_mm_movemask_epi8(
				_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(m + i)), cv));
			for (; bits; bits &= bits - 1) {
				size_t q = i + (size_t)__builtin_ctz(bits);
				if (q > qmax)
					return NULL;
				if (m[q - 1] == ' ' && m[q + 1] == 'i' && m[q + 2] == 'a' && m[q + 3] == ' ')
					return m + q - 1;
			}
		}
		for (; i <= qmax; i++)
			if (m[i] == 'v' && m[i - 1] == ' ' && m[i + 1] == 'i' && m[i + 2] == 'a' && m[i + 3] == ' ')
				return m + i - 1;
		return NULL;
	}
#endif

	while (p < end) {
		const char *q = memchr(p, 'v', (size_t)(end - p));
		if (!q || end - q < 5)
			return NULL;
		if (q > m && q[-1] == ' ' && q[1] == 'i' && q[2] == 'a' && q[3] == ' ')
			return q - 1;
		p = q + 1;
	}
	return NULL;
}

/* The end of an NCCL return trace in m[0..e): " -> R", maybe a group after it
 * (" [Async thread]", " (Connection refused)") whose opening is at most `max_group`
 * bytes back. True with the digits of R at m[*digits..*end); the scanner's test and the
 * recogniser's parse read the same shape. */
static inline bool trace_tail(const char *m, size_t e, size_t max_group, size_t *digits, size_t *end)
{
	size_t d;

	if (e > 0 && (m[e - 1] == ']' || m[e - 1] == ')')) {
		char open = m[e - 1] == ']' ? '[' : '(';
		size_t stop = e > max_group ? e - max_group : 0;
		while (e > stop && m[e - 1] != open)
			e--;
		if (e < 2 || m[e - 1] != open || m[e - 2] != ' ')
			return false;
		e -= 2;
	}
	d = e;
	while (d > 0 && is_digit(m[d - 1]))
		d--;
	if (d == e || d < 4 || memcmp(m + d - 4, " -> ", 4) != 0)
		return false;
	*digits = d;
	*end = e;
	return true;
}

/* ---- nccl-scan-prefix.c --------------------------------------------------------- */

/* What a prefix the cache does not hold names: parsed, and put in the cache (`hash`:
 * its ncclscan_hash(), seeded with `warn`). Sets st->last_slot. */
const struct prefix_slot *ncclscan_prefix_miss(struct ll_ncclscan *s, struct ll_ncclscan_stream *st,
					       const char *pre, size_t npre, bool warn, uint64_t hash);
/* The cache slot that says what the prefix `pre` (`npre` bytes) names, parsing it on a
 * miss; `warn`: a WARN record, whose prefix ends in `file.cc:NN`. The slot is valid
 * until the next lookup. Sets st->last_slot. Two slots per hash, the one used last
 * first: a few prefixes that share a slot do not push each other out. A hit is read
 * here, inline: the out-of-line parse would make every call save and restore the
 * registers it needs (a quarter of a hit's cost). */
static inline const struct prefix_slot *ncclscan_prefix_lookup(struct ll_ncclscan *s, struct ll_ncclscan_stream *st,
							       const char *pre, size_t npre, bool warn)
{
	uint64_t hash = 0;

	if (npre <= LL_PREFIX_CACHE_BYTES) {
		hash = ncclscan_hash(pre, npre, warn);
		if (s->prefix_cache) {
			struct prefix_slot *e = &s->prefix_cache[hash & (LL_PREFIX_CACHE_SLOTS - 2)];
			for (int k = 0; k < 2; k++, e++)
				if (e->hash == hash && e->len == npre && e->warn == warn && same_bytes(e->bytes, pre, npre)) {
					st->last_slot = e;
					return e;
				}
		}
	}
	return ncclscan_prefix_miss(s, st, pre, npre, warn, hash);
}
static inline const struct prefix_slot *ncclscan_prefix_slot(struct ll_ncclscan *s, struct ll_ncclscan_stream *st,
							     const char *pre, size_t npre, bool warn)
{
	const struct prefix_slot *e = st->last_slot;

	/* Consecutive records of one thread share their prefix byte for byte. */
	if (e && e->len == npre && e->warn == warn && same_bytes(e->bytes, pre, npre))
		return e;
	return ncclscan_prefix_lookup(s, st, pre, npre, warn);
}
/* The process of prefix-less records when the stream has had none yet. */
struct ll_nccl_rank *ncclscan_anonymous(struct ll_ncclscan *s, struct ll_ncclscan_stream *st);
/* Count a record whose prefix is known for its process, which becomes the stream's last
 * one: the one the prefix names, else the stream's last (an NCCL_DEBUG_FILE holds one
 * process), else the anonymous one. */
static inline struct ll_nccl_rank *ncclscan_record(struct ll_ncclscan *s, struct ll_ncclscan_stream *st,
						   const struct prefix_slot *e)
{
	struct ll_nccl_rank *r = e->rank;

	if (!r) {
		st->tid = -1;
		if (!(r = st->last))
			r = ncclscan_anonymous(s, st);
	} else {
		st->tid = e->tid;
		/* A process met again after another: fill what its first prefix lacked (the
		 * launcher's rank counts where NCCL printed none: ll_ncclscan_result()). */
		if (st->last != r) {
			struct rank_state *rs = rank_state_of(r);
			if (r->cuda_dev < 0)
				r->cuda_dev = e->cuda_dev;
			if (rs->fill_rank < 0 && e->launcher_rank >= 0)
				rs->fill_rank = e->launcher_rank;
		}
	}
	st->last = r;
	r->n_lines++;
	r->last_seen = s->now;
	return r;
}
/* The process the record whose prefix is the `npre` bytes at `pre` belongs to, and
 * count the line for it. */
static inline struct ll_nccl_rank *ncclscan_record_rank(struct ll_ncclscan *s, struct ll_ncclscan_stream *st,
							const char *pre, size_t npre, bool warn)
{
	return ncclscan_record(s, st, ncclscan_prefix_slot(s, st, pre, npre, warn));
}
/* The same for a record that only counts when it names its process: NULL (and
 * nothing counted) when `pre` does not end in an NCCL prefix. */
struct ll_nccl_rank *ncclscan_prefixed_rank(struct ll_ncclscan *s, struct ll_ncclscan_stream *st,
					    const char *pre, size_t npre, bool warn);
/* Where the record whose marker of `kind` is at `m` begins, searching back no further
 * than `from`: m itself when no prefix precedes it. */
const char *ncclscan_record_start(const char *from, const char *m, enum marker kind);
/* Length of what a launcher or log shipper put before a continuation line's text. */
size_t ncclscan_continuation_prefix(const char *l, size_t n);
void ncclscan_rank_free(struct ll_nccl_rank *r);

/* ---- nccl-scan-msg.c ------------------------------------------------------------ */

/* "2.18.3+cuda12.2" -> 21803; 0 when it does not start with a version. */
int ncclscan_version_code(const char *v, size_t n);

/* Recognisers for the text after "NCCL INFO " (`m`, `n` bytes) of a record of process
 * `r`, each called for the kind of line its name says. */
void ncclscan_msg_net(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n);
/* "Channel ..."/"Ring ..."/"CollNet ..." lines with " via " at `via` (the blank before it). */
void ncclscan_msg_channel(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n,
			  const char *via);
/* "Using network X", "Using internal Network X", "Assigned NET plugin X to comm": the network
 * name at `name`. */
void ncclscan_msg_network(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n,
			  const char *name, size_t nname);
void ncclscan_msg_bootstrap(struct ll_nccl_rank *r, const char *m, size_t n);
/* "ncclCommInitRank comm 0x.. rank R nranks N ... commId 0x.. - Init START|COMPLETE" and the
 * other communicator lines. */
void ncclscan_msg_comm(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n);
void ncclscan_msg_p2p_plugin(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n);
/* G42, G43: a return trace "FILE:LINE -> R" (2.30.7+: "FILE:LINE (func) -> R"), with
 * " [Async thread]" or " (strerror)" after it. Returns whether it was one. */
bool ncclscan_msg_trace(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n);
/* The INFO lines that start with something else than the few above (rarer ones: the
 * environment, plugins, libibverbs, GDR, NVLS, error traces): `m[0]` picked the caller. */
void ncclscan_msg_other(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, struct ll_nccl_rank *r,
			const char *m, size_t n);
/* The text after "NCCL WARN " of a record of process `r` (NULL: its prefix names none);
 * `cls`: its ll_nccl_warn_classify(), or -1 to tell it here. */
void ncclscan_msg_warn(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, struct ll_nccl_rank *r,
		       const char *m, size_t n, int cls);
/* ll_nccl_warn_classify() of a WARN's text, through a cache in `s`. */
int ncclscan_warn_class(struct ll_ncclscan *s, const char *m, size_t n);
void ncclscan_warn_classes_free(struct ll_ncclscan *s);
/* The version after "NCCL version "; `r` may be NULL (a line without a prefix). */
void ncclscan_msg_version(struct ll_ncclscan *s, struct ll_nccl_rank *r, const char *v, size_t n);
/* The list an INFO message "NET/..." starts that a log collector may wrap onto the next
 * lines (G18's NET/IB devices, G14's NET/Socket interfaces), from its text alone. */
enum cont_kind ncclscan_msg_cont(struct ll_ncclscan *s, const char *m, size_t n);
/* A marker-less line (launcher prefix skipped) that goes on the list of kind `k`
 * process `r` began: read it, unless its first line was read before. Returns whether
 * the list ended with it (from the text alone). */
bool ncclscan_msg_continuation(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, enum cont_kind k,
			       const char *l, size_t n);
/* Whether a continuation line goes on a list (it starts with "[N]"). */
bool ncclscan_continues(const char *l, size_t n);
/* Whether a marker-less line is an NCCL message whose prefix and marker a poster removed
 * ("NET/IB : Using [0]..."); *skip is then the length of the launcher prefix before it. */
bool ncclscan_stripped_message(const char *l, size_t n, size_t *skip);
/* Free and forget the NET/IB device list and the socket interface names of `r`. */
void ncclscan_rank_clear_lists(struct ll_nccl_rank *r);
/* Free what the communicators and the proofs of `r` hold. */
void ncclscan_rank_clear_state(struct ll_nccl_rank *r);

/* ---- nccl-scan.c: what the scanner hands to the recognisers ------------------------ */

/* A record handed to the recognisers, in file order: read at once (one thread), or
 * kept with its piece (nccl-scan-parallel.c) and read later in order, with every call
 * given the same arguments. The scanner cuts lines and records and follows wrapped lists; the
 * recognisers' side knows the processes (prefix cache, the stream's last process and
 * thread) and reads what the records say. Each side keeps to its own fields of the
 * stream: see struct ll_ncclscan_stream. */
enum hand_kind {
	HAND_INFO,    /* an INFO record a recogniser reads */
	HAND_COUNT,   /* an INFO record that only counts for its process */
	HAND_TRACE,   /* an INFO record that may be a return trace (else as HAND_INFO) */
	HAND_WARN,
	HAND_VERSION, /* "NCCL version " at the start of a record */
	HAND_CONT,    /* a line going on the list of kind `cont` */
};
struct hand {
	enum hand_kind kind;
	enum cont_kind cont;          /* HAND_INFO: the list it starts; HAND_CONT: the list */
	const char *pre, *m;          /* the bytes before the marker; the message */
	size_t npre, n;
	unsigned repeat;              /* HAND_INFO, HAND_COUNT: so many HAND_COUNT after it with its prefix */
	int warn_class;               /* HAND_WARN: its class when told already, else -1 */
};
/* Read a record handed over: `st` says the line number it had. */
void ncclscan_apply(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const struct hand *h);

/* Read records kept by a piece's cutting (nccl-scan-parallel.c): each with the line
 * number it had plus `line_offset` (modulo: it may be "negative"). */
struct pipe_rec;
void ncclscan_apply_recs(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const struct pipe_rec *recs, size_t n,
			 unsigned long line_offset);

/* ---- nccl-scan-parallel.c -------------------------------------------------------- */

/* Read the regular file `fd` of `size` bytes into stream `st` on every CPU: 0, or
 * -errno (-EIO: it shrank while being read). 1: this file is read by one thread (too
 * small, one CPU, a line one thread would cut); nothing was read. */
int ncclscan_parallel_file(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, int fd, off_t size);
/* Make room in the block being filled: put the full one on its piece's list. */
void ncclscan_pipe_room(struct ncclscan_pipe *p);
/* Keep a record for whoever reads the piece, in file order. */
static inline void ncclscan_pipe_push(struct pipe_fill *f, struct ncclscan_pipe *p,
				      const struct ll_ncclscan_stream *st, const struct hand *h)
{
	struct pipe_rec *rec = f->used ? &f->data[f->used - 1] : NULL;

	/* A record that only counts, after one of the same prefix, is one more count of it:
	 * reading that prefix again would do nothing else (ncclscan_record()). */
	if (h->kind == HAND_COUNT && rec && rec->npre == h->npre && rec->kind != HAND_WARN &&
	    rec->kind != HAND_VERSION && rec->kind != HAND_CONT && (h->npre == 0 || same_bytes(rec->pre, h->pre, h->npre))) {
		rec->repeat++;
		return;
	}
	if (f->used == f->size)
		ncclscan_pipe_room(p);
	rec = &f->data[f->used++];
	rec->lineno = st->lineno;
	rec->pre = h->pre;
	rec->m = h->m;
	rec->npre = (uint32_t)h->npre;
	rec->n = (uint32_t)h->n;
	rec->repeat = 0;
	rec->kind = (uint8_t)h->kind;
	rec->cont = (uint8_t)h->cont;
	rec->warn_class = (int8_t)h->warn_class;
}

/* ---- nccl-scan-verdict.c -------------------------------------------------------- */

/* Drop the per-host grouping the last ll_ncclscan_result() built. */
void ncclscan_hosts_release(struct ll_ncclscan *s);

#endif
