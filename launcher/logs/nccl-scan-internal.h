/* Internal to the NCCL log scanner (include/llmlaunch/nccl-scan.h), split by stage:
 *   nccl-scan.c          the scanner and its streams: lines, markers, which recogniser (the hot path)
 *   nccl-scan-prefix.c   what stands before a record: NCCL and launcher prefixes, the process table
 *   nccl-scan-msg.c      what a message says: the per-kind recognisers, warning classes
 *   nccl-scan-files.c    files and directories fed to streams
 *   nccl-scan-verdict.c  transport, GDR and fallback per process, host and job; words for people */
#ifndef LLMLAUNCH_NCCL_SCAN_INTERNAL_H
#define LLMLAUNCH_NCCL_SCAN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "llmlaunch/nccl-scan.h"

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
	long last_tid;                  /* the thread of that prefix, -1 none */
	long tid;                       /* the thread of the record being read, -1 none */
	bool marked;                    /* an INFO or WARN marker was seen: stripped lines are not read */
	enum cont_kind cont;            /* what a wrapped continuation line would extend */
	struct ll_nccl_rank *cont_rank;
	bool in_long_line;              /* the current line was too long and is being scanned in pieces */
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
	char *devices_text;             /* the last NET/IB device list as printed: not parsed again */
	size_t n_devices_text;
};

static inline struct rank_state *rank_state_of(struct ll_nccl_rank *r)
{
	return (struct rank_state *)((char *)r - offsetof(struct rank_state, pub));
}

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
 * on every call, which costs more than the search itself on a 100-byte line. */
static inline const char *find(const char *s, size_t n, const char *lit, size_t nlit)
{
	size_t k = 0;
	const char *p, *last;

	if (nlit == 0 || n < nlit)
		return NULL;
	/* Look for the needle's first non-blank byte: blanks are everywhere in a line. */
	while (k + 1 < nlit && lit[k] == ' ')
		k++;
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

/* a[0..n) == b[0..n) for the short prefixes of the prefix cache, without a libc call. */
static inline bool same_bytes(const char *a, const char *b, size_t n)
{
	size_t i = 0;
	uint64_t x, y;

#if defined(__SSE2__)
	if (n >= 16 && n <= 32) {
		/* Two 16-byte compares, the second ending at n (they may overlap). */
		__m128i a0 = _mm_loadu_si128((const __m128i *)(const void *)a);
		__m128i b0 = _mm_loadu_si128((const __m128i *)(const void *)b);
		__m128i a1 = _mm_loadu_si128((const __m128i *)(const void *)(a + n - 16));
		__m128i b1 = _mm_loadu_si128((const __m128i *)(const void *)(b + n - 16));
		return _mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a0, b0), _mm_cmpeq_epi8(a1, b1))) == 0xffff;
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

/* " via " in a channel line (the blank before it), or NULL: a memchr for 'v' finds it at once. */
static inline const char *find_via(const char *m, size_t n)
{
	const char *p = m, *end = m + n;

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

/* ---- nccl-scan-prefix.c --------------------------------------------------------- */

/* The process the record whose prefix is the `npre` bytes at `pre` belongs to, and
 * count the line for it. Prefix-less records go to the stream's last process (an
 * NCCL_DEBUG_FILE holds one process), else to one anonymous process. `warn`: a WARN
 * record, whose prefix ends in `file.cc:NN`. */
struct ll_nccl_rank *ncclscan_record_rank(struct ll_ncclscan *s, struct ll_ncclscan_stream *st,
					  const char *pre, size_t npre, bool warn);
/* The record's process when its prefix is byte for byte the stream's last one, else NULL
 * (then ncclscan_record_rank decides). Counts the line. */
static inline struct ll_nccl_rank *ncclscan_cached_rank(struct ll_ncclscan *s, struct ll_ncclscan_stream *st,
							const char *pre, size_t npre)
{
	struct ll_nccl_rank *r = st->last;

	if (!r || npre != st->n_last_pre || npre == 0 || !same_bytes(pre, st->last_pre, npre))
		return NULL;
	r->n_lines++;
	r->last_seen = s->now;
	st->tid = st->last_tid;
	return r;
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
/* The INFO lines that start with something else than the few above (rarer ones: the
 * environment, plugins, libibverbs, GDR, NVLS, error traces): `m[0]` picked the caller. */
void ncclscan_msg_other(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, struct ll_nccl_rank *r,
			const char *m, size_t n);
/* The text after "NCCL WARN "; `pre` is what stood before the marker. */
void ncclscan_msg_warn(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const char *pre, size_t npre,
		       const char *m, size_t n);
/* The version after "NCCL version "; `r` may be NULL (a line without a prefix). */
void ncclscan_msg_version(struct ll_ncclscan *s, struct ll_nccl_rank *r, const char *v, size_t n);
/* A marker-less line, launcher prefix skipped, while st->cont says a list may go on. */
void ncclscan_msg_continuation(struct ll_ncclscan_stream *st, const char *l, size_t n);
/* Whether a marker-less line is an NCCL message whose prefix and marker a poster removed
 * ("NET/IB : Using [0]..."); *skip is then the length of the launcher prefix before it. */
bool ncclscan_stripped_message(const char *l, size_t n, size_t *skip);
/* Free and forget the NET/IB device list and the socket interface names of `r`. */
void ncclscan_rank_clear_lists(struct ll_nccl_rank *r);
/* Free what the communicators and the proofs of `r` hold. */
void ncclscan_rank_clear_state(struct ll_nccl_rank *r);

/* ---- nccl-scan-verdict.c -------------------------------------------------------- */

/* Drop the per-host grouping the last ll_ncclscan_result() built. */
void ncclscan_hosts_release(struct ll_ncclscan *s);

#endif
