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
#include <string.h>

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
	enum cont_kind cont;            /* what a wrapped continuation line would extend */
	struct ll_nccl_rank *cont_rank;
	bool in_long_line;              /* the current line was too long and is being scanned in pieces */
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
	char **skipped;                 /* "PATH: why", entries of a directory that were not read */
	size_t n_skipped;
	unsigned long skipped_total;
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

static inline const char *find(const char *s, size_t n, const char *lit, size_t nlit)
{
	return memmem(s, n, lit, nlit);
}
#define FIND(s, n, lit) find((s), (n), lit, sizeof(lit) - 1)

/* " via NET/" in a channel line, or NULL: a memchr for 'v' finds "via" at once. */
static inline const char *find_via_net(const char *m, size_t n)
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

/* ---- nccl-scan-prefix.c --------------------------------------------------------- */

/* The process the record whose prefix is the `npre` bytes at `pre` belongs to, and
 * count the line for it. Prefix-less records go to the stream's last process (an
 * NCCL_DEBUG_FILE holds one process), else to one anonymous process. `warn`: a WARN
 * record, whose prefix ends in `file.cc:NN`. */
struct ll_nccl_rank *ncclscan_record_rank(struct ll_ncclscan *s, struct ll_ncclscan_stream *st,
					  const char *pre, size_t npre, bool warn);
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

/* Recognisers for the text after "NCCL INFO " (`m`, `n` bytes) of a record of process
 * `r`, each called for the kind of line its name says. */
void ncclscan_msg_net(struct ll_ncclscan_stream *st, struct ll_nccl_rank *r, const char *m, size_t n);
void ncclscan_msg_channel(struct ll_nccl_rank *r, const char *m, size_t n);
void ncclscan_msg_using_network(struct ll_nccl_rank *r, const char *m, size_t n);
void ncclscan_msg_bootstrap(struct ll_nccl_rank *r, const char *m, size_t n);
void ncclscan_msg_comm(struct ll_nccl_rank *r, const char *m, size_t n);
void ncclscan_msg_p2p_plugin(struct ll_nccl_rank *r, const char *m, size_t n);
/* The text after "NCCL WARN "; `pre` is what stood before the marker. */
void ncclscan_msg_warn(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const char *pre, size_t npre,
		       const char *m, size_t n);
/* The version after "NCCL version "; `r` may be NULL (a line without a prefix). */
void ncclscan_msg_version(struct ll_ncclscan *s, struct ll_nccl_rank *r, const char *v, size_t n);
/* A marker-less line, launcher prefix skipped, while st->cont says a list may go on. */
void ncclscan_msg_continuation(struct ll_ncclscan_stream *st, const char *l, size_t n);
/* Free and forget the NET/IB device list and the socket interface names of `r`. */
void ncclscan_rank_clear_lists(struct ll_nccl_rank *r);

/* ---- nccl-scan-verdict.c -------------------------------------------------------- */

/* Drop the per-host grouping the last ll_ncclscan_result() built. */
void ncclscan_hosts_release(struct ll_ncclscan *s);

#endif
