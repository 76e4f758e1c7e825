/* NCCL debug-log scanner: reads NCCL_DEBUG=INFO output line by line and says which
 * transport each NCCL process really used, whether GPUDirect RDMA was on, whether
 * that was a fallback, and which warnings it printed.
 *
 * The scanner never holds a whole file: files are streamed through a fixed buffer
 * and every line is looked at once, so memory stays flat in the size of the input
 * (it grows with the number of distinct processes, and stores at most
 * LL_NCCL_MAX_WARNINGS warnings while still counting all of them).
 *
 * Lines may carry what launchers put in front of NCCL's text (`[1,4]<stdout>:`,
 * `[155]`, `3: `, RFC 3339 timestamps, torchrun's `[default0]:`), CRLF endings and
 * trailing blanks; a device list wrapped onto the next line is joined back, and two
 * processes' records run together on one line are split. See docs/logs.md for the
 * rules that turn lines into a verdict. */
#ifndef LLMLAUNCH_NCCLSCAN_H
#define LLMLAUNCH_NCCLSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include "llmlaunch/util.h"

/* Ordered from weakest to strongest: where hosts disagree, the summary reports the
 * weakest known one (a job runs at the speed of its slowest link). */
enum ll_nccl_transport {
	LL_NCCL_TRANSPORT_UNKNOWN = 0, /* the log does not say */
	LL_NCCL_TRANSPORT_NONE,        /* NCCL found no network at all */
	LL_NCCL_TRANSPORT_SOCKET,
	LL_NCCL_TRANSPORT_PLUGIN,      /* an external net plugin that is not IB verbs (AWS Libfabric, gIB) */
	LL_NCCL_TRANSPORT_ROCE,        /* IB verbs over Ethernet: every listed port is RoCE */
	LL_NCCL_TRANSPORT_IB,          /* IB verbs with InfiniBand ports (internal or IBext plugin) */
};
/* "unknown", "none", "Socket", "plugin", "RoCE", "IB" */
const char *ll_nccl_transport_name(enum ll_nccl_transport t);
/* For people: "InfiniBand", "RoCE", "sockets", "no network", "unknown transport";
 * for PLUGIN the plugin's name when given. */
const char *ll_nccl_transport_describe(enum ll_nccl_transport t, const char *plugin);

enum ll_nccl_warn_class {
	LL_NCCL_WARN_IB_COMPLETION = 0, /* NET/IB : Got completion from peer ... error/status */
	LL_NCCL_WARN_IB_VERBS_CALL,     /* Call to ibv_create_qp / ibv_modify_qp / ibv_create_cq ... failed */
	LL_NCCL_WARN_SOCKET,            /* socketProgress, connection closed/reset/refused */
	LL_NCCL_WARN_NO_INTERFACE,      /* no (socket) interface found */
	LL_NCCL_WARN_PLUGIN_MISSING,    /* libibverbs missing, a net plugin that could not be opened */
	LL_NCCL_WARN_NO_NETWORK,        /* Error: network X not found, Failed to initialize any NET plugin */
	LL_NCCL_WARN_OTHER,
	LL_NCCL_WARN_CLASS_COUNT,
};
/* "ib-completion", "ib-verbs-call", "socket", "no-interface", "plugin-missing", "no-network", "other" */
const char *ll_nccl_warn_class_name(enum ll_nccl_warn_class c);
/* Classify the text after "NCCL WARN ". */
enum ll_nccl_warn_class ll_nccl_warn_classify(const char *text, size_t len);
/* Classes that make `llmlaunch logs` fail on their own: a broken fabric or peer, or no
 * network at all. plugin-missing is judged through the fallback rule, other is
 * informational. */
bool ll_nccl_warn_class_is_error(enum ll_nccl_warn_class c);

/* What the caller expected NCCL to use (from the probe, or --expect-net). */
enum ll_net_expect {
	LL_NET_EXPECT_ANY = 0, /* judge fallback from the log alone */
	LL_NET_EXPECT_IB,
	LL_NET_EXPECT_ROCE,
	LL_NET_EXPECT_SOCKET,
};
const char *ll_net_expect_name(enum ll_net_expect e); /* "any", "ib", "roce", "socket" */
int ll_net_expect_parse(const char *s, enum ll_net_expect *ret); /* 0 or -EINVAL */

#define LL_NCCL_MAX_WARNINGS 1000
#define LL_NCCL_MAX_SKIPPED 100

struct ll_nccl_warning {
	char *file;
	unsigned long line;
	enum ll_nccl_warn_class cls;
	char *text;              /* the text after "NCCL WARN ", trimmed */
	char *host;              /* NULL when the line had no NCCL prefix */
	long pid;                /* -1 unknown */
};

enum ll_nccl_dev_kind { LL_NCCL_DEV_IB = 0, LL_NCCL_DEV_ROCE, LL_NCCL_DEV_OTHER };

/* One port from `NET/IB : Using [0]mlx5_0:1/IB/SHARP ...`. */
struct ll_nccl_device {
	char *name;              /* "mlx5_0" */
	int port;                /* -1 if not printed */
	enum ll_nccl_dev_kind kind;
	bool sharp;
};

/* The line that proved something: where it was read and its text (the message after
 * the marker, at most LL_NCCL_PROOF_TEXT bytes). `file` is owned by the scanner. */
#define LL_NCCL_PROOF_TEXT 200
struct ll_nccl_proof {
	const char *file;
	unsigned long line;      /* 0: nothing proved it */
	char *text;
};

/* What carried a communicator's connections (bits of ll_nccl_comm.paths). */
enum ll_nccl_path {
	LL_NCCL_PATH_NET = 0,    /* the network (its name in `transport`) */
	LL_NCCL_PATH_P2P,        /* P2P/IPC, P2P/direct pointer, P2P/CUMEM, P2P/indirect */
	LL_NCCL_PATH_SHM,        /* SHM/direct, direct shared memory */
	LL_NCCL_PATH_NVLS,       /* NVLink SHARP */
	LL_NCCL_PATH_COLLNET,    /* CollNet (SHARP in the switch) */
	LL_NCCL_PATH_COUNT,
};
/* "network", "P2P", "SHM", "NVLS", "CollNet" */
const char *ll_nccl_path_name(enum ll_nccl_path p);

/* One communicator as one process saw it: the lines printed by the thread that set it
 * up, between its first line and Init COMPLETE. */
struct ll_nccl_comm {
	char *id;                /* commId "0xd8289d3e6e217d26" (NCCL 2.18+), NULL when not printed */
	char *ptr;               /* the comm pointer "0x55d900e4a6c0", NULL when not printed */
	int rank, nranks, nnodes; /* -1 unknown */
	char *network;           /* Using network X / Assigned NET plugin X on its thread */
	char *channel_net;       /* net name of its first non-socket `via NET/X/...` channel */
	unsigned long net_channels, gdr_channels, socket_channels;
	unsigned long p2p_channels, shm_channels, collnet_channels, nvls_channels;
	bool init_complete;
	/* Verdict, filled by ll_ncclscan_result(). */
	unsigned paths;          /* 1 << enum ll_nccl_path, from channel lines */
	enum ll_nccl_transport transport; /* of its network */
	const char *plugin;
	int gdr;                 /* 1 on, 0 off, -1 unknown */
};

/* One NCCL process (host:pid), what its lines showed, and what that means. */
struct ll_nccl_rank {
	char *host;              /* NULL when the lines had no NCCL prefix */
	long pid;                /* -1 unknown */
	int cuda_dev;            /* the [N] of the prefix, -1 unknown */
	int rank;                /* from ncclCommInitRank / the launcher's prefix, -1 unknown */
	int nranks;              /* -1 unknown */
	char *file;              /* first file it appeared in */
	char *version;           /* "2.19.3+cuda12.3" when the process printed it */

	/* Evidence, as read. */
	char *network;           /* first "Using network X" / "Assigned NET plugin X to comm" */
	char *channel_net;       /* net name of the first non-socket `via NET/X/...` channel */
	char *plugin_loaded;     /* "P2P plugin IBext_v8", "Loaded net plugin X" */
	char *net_named;         /* a line naming the network in use: "NET/X : GPU Direct RDMA ...",
				  * "CUDA Dev 0[0], X NIC distance" */
	char *bootstrap;         /* first bootstrap interface, "eth0:10.0.0.1<0>" */
	bool ofi;                /* the aws-ofi-nccl net plugin printed lines ("NET/OFI ...") */
	char *ofi_version;       /* "1.11.0-aws" when it printed it */
	char *ofi_provider;      /* the libfabric provider it selected ("efa"), NULL before */
	int ofi_nics;            /* NICs it found with that provider, -1 not printed */
	struct ll_nccl_device *devices;
	size_t n_devices;
	bool relaxed_ordering;   /* [RO] */
	char **socket_ifs;       /* "eth0" from `NET/Socket : Using [0]eth0:...` */
	size_t n_socket_ifs;
	bool socket_line;        /* a `NET/Socket : Using [...]` (or 2.3 `N interfaces found`) line */
	bool socket_line_late;   /* ... printed after NCCL had tried IB: only NCCL >= 2.4.8 does that */
	bool socket_threads;     /* NET/Socket: Using N threads and M sockets per thread */
	bool socket_trace;       /* an error trace through transport/net_socket.cc */
	bool modern;             /* printed a line only NCCL >= 2.4.8 prints (Bootstrap, Using network,
				  * cudaDriverVersion, Init START, Channel ... via) */
	bool ib_tried;           /* NCCL had tried IB (device list, no device, libibverbs, IB disabled) */
	bool ib_no_device;       /* NET/IB : No device found */
	bool ib_listed;          /* IB initialised with ports: device list, Initialized NET plugin IB,
				  * an IB async event */
	bool ib_used;            /* IB verbs ran a connection: completion error, failed verbs call */
	bool verbs_missing;      /* libibverbs could not be opened */
	bool plugin_failed;      /* a net plugin exists but could not be loaded */
	bool ib_disabled;        /* NCCL_IB_DISABLE set by environment to 1 */
	bool ibext_disabled;     /* NCCL_IBEXT_DISABLE set by environment to 1 */
	bool no_network;         /* Error: network X not found / Failed to initialize any NET plugin */
	bool gdr_disabled_line;  /* "GPU Direct RDMA Disabled" */
	bool gdr_enabled_line;   /* "GPU Direct RDMA Enabled for GPU ..." (a decision, NCCL < 2.18) */
	int gdr_ring;            /* "Connected all rings, use ring PXN p GDR g": g, -1 not printed */
	bool init_complete;      /* ncclCommInitRank ... Init COMPLETE */
	bool init_failed;        /* an error returned through init.cc before any Init COMPLETE */
	unsigned long net_channels;    /* `via NET/...` that are not sockets */
	unsigned long gdr_channels;    /* ... of which /GDRDMA */
	unsigned long socket_channels; /* `via NET/Socket` */
	struct ll_nccl_comm *comms;    /* in order of first appearance */
	size_t n_comms;
	unsigned warn_mask;      /* 1 << enum ll_nccl_warn_class */
	unsigned long n_warnings;
	unsigned long n_lines;   /* lines attributed to it */
	double last_seen;        /* caller's clock (ll_ncclscan_set_clock), 0 offline */

	/* Verdict, filled by ll_ncclscan_result(). */
	enum ll_nccl_transport transport;
	const char *plugin;      /* points at network/channel_net when it is a plugin */
	int gdr;                 /* 1 on, 0 off, -1 unknown */
	bool fallback;
	const char *fallback_reason; /* static text, NULL without fallback */
	const struct ll_nccl_proof *fallback_cause; /* the line showing why, NULL when none did */
	const struct ll_nccl_proof *fallback_via;   /* the line proving sockets, NULL when none did */
	/* With init_failed: why, in words (its first WARN, else where the error began:
	 * "NCCL error 2 (unhandled system error) at transport/net_ib.cc:282"), the line
	 * that said it, and the trace through init.cc. */
	const char *init_failure;
	const struct ll_nccl_proof *init_cause, *init_trace;
};

struct ll_nccl_host {
	char *name;              /* NULL for lines without a prefix */
	struct ll_nccl_rank **ranks; /* in order of first appearance */
	size_t n_ranks;
	enum ll_nccl_transport transport;
	const char *plugin;
	int gdr;
	bool fallback;
	const char *fallback_reason;
	bool initialized;        /* some rank printed "Init COMPLETE" */
	bool unknown;            /* neither a transport nor a fallback is proven */
	const struct ll_nccl_proof *fallback_cause, *fallback_via; /* of its first falling-back rank */
	unsigned warn_mask;
	/* Some process's communicator init failed: the verdict is that, not a transport
	 * (the first such process's words and lines). */
	bool init_failed;
	const char *init_failure;
	const struct ll_nccl_proof *init_cause, *init_trace;
};

/* A communicator across the job: the processes' ll_nccl_comm with one commId. */
struct ll_nccl_job_comm {
	const char *id;          /* commId, NULL when NCCL printed none (before 2.18, splits in 2.27+) */
	const char *ptr;         /* without an id: the comm pointer of the one process that printed it */
	int nranks;              /* -1 unknown */
	size_t n_members;        /* processes that printed lines of it */
	size_t n_hosts;
	unsigned paths;          /* union over the members */
	enum ll_nccl_transport transport; /* weakest known network of the members */
	const char *plugin;
	int gdr;
};

struct ll_nccl_verdict {
	enum ll_nccl_transport transport;
	const char *plugin;
	int gdr;
	bool fallback;
	const char *fallback_reason;
	const char *version;     /* first NCCL version seen */
	enum ll_net_expect expect;
	struct ll_nccl_host *hosts;  /* in order of first appearance */
	size_t n_hosts;
	size_t hosts_unknown;    /* hosts with neither a transport, a fallback nor a failed init proven */
	size_t hosts_init_failed; /* hosts where a communicator's init failed */
	struct ll_nccl_job_comm *comms; /* named ones in order of first appearance, then the unnamed */
	size_t n_comms;
	const struct ll_nccl_warning *warnings; /* the first LL_NCCL_MAX_WARNINGS */
	size_t n_warnings;
	unsigned long warnings_total;
	unsigned long warnings_by_class[LL_NCCL_WARN_CLASS_COUNT];
	unsigned long files, lines;
	/* Entries of the directories read that were left out, "PATH: why" (a dangling
	 * link, a link to a directory, a FIFO, an unreadable file); at most
	 * LL_NCCL_MAX_SKIPPED kept, skipped_total counts them all. */
	char *const *skipped;
	size_t n_skipped;
	unsigned long skipped_total;
	bool error;              /* a fallback, a failed init or an error-class warning: `logs` exits 1 */
};

struct ll_ncclscan;

struct ll_ncclscan *ll_ncclscan_new(enum ll_net_expect expect);
void ll_ncclscan_free(struct ll_ncclscan *s);
static inline void ll_ncclscan_freep(struct ll_ncclscan **s) { if (*s) { ll_ncclscan_free(*s); *s = NULL; } }

/* Live use stamps each rank with the time its last line arrived (seconds, any
 * monotonic origin); offline scanning leaves it at 0. */
void ll_ncclscan_set_clock(struct ll_ncclscan *s, double now);

/* One input file's reading state: its name (for warnings), line number, the partial
 * line left over from the last feed, and what a wrapped line continues. Owned by
 * the scanner; valid until ll_ncclscan_free. */
struct ll_ncclscan_stream;
struct ll_ncclscan_stream *ll_ncclscan_stream_new(struct ll_ncclscan *s, const char *file);

/* Feed bytes as they come; complete lines are scanned, a trailing partial line is
 * kept (up to 64 KiB; longer lines are scanned in pieces). */
void ll_ncclscan_feed(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, const char *data, size_t n);
/* End of input for now: scan the kept partial line as if it ended. */
void ll_ncclscan_flush(struct ll_ncclscan *s, struct ll_ncclscan_stream *st);

/* Read regular files of at least `min_bytes` on several threads: each cuts pieces of
 * whole lines into records, and the records are read in file order by one thread at a
 * time, so the verdict is the one a single thread gives. `threads` 1: one thread
 * always; 2 or more: so many; 0: one per CPU this process may run on (at most 8), where
 * it may run on two or more. Without a call: as 0, for files of 16 MiB and more. */
void ll_ncclscan_set_threads(struct ll_ncclscan *s, unsigned threads, size_t min_bytes);
/* Cut such files into pieces of `bytes` (0: the default, up to 960 KiB), for the
 * tests: small pieces put their edges next to every kind of line. */
void ll_ncclscan_set_piece_size(struct ll_ncclscan *s, size_t bytes);

/* Stream one file through a fixed buffer: a regular file, or a pipe read until its
 * writers close it (a FIFO nobody writes reads as empty, it never blocks the open).
 * Devices, sockets and directories are refused. -errno with a message naming it. */
int ll_ncclscan_file(struct ll_ncclscan *s, const char *path, struct ll_error *err);
/* A file, or a directory read recursively: regular files in name order, hidden
 * entries left out, symbolic links to files followed, links to directories not
 * (no loop can form), at most 32 directories deep. Inside a directory nothing stops
 * the walk: what cannot be read (a dangling link, a FIFO, a file without
 * permission) is recorded in the verdict's `skipped` and the rest is read. -errno
 * with a message only when `path` itself cannot be read. */
int ll_ncclscan_path(struct ll_ncclscan *s, const char *path, struct ll_error *err);

/* Compute the verdict from everything fed so far. The result is owned by the scanner
 * and valid until the next feed, flush, result or free. */
const struct ll_nccl_verdict *ll_ncclscan_result(struct ll_ncclscan *s);

/* "mlx5_0..mlx5_7" style list of the host's RDMA device names (or socket interfaces
 * for sockets); appended to `b`. Runs of three or more consecutive numbers with the
 * same stem are shortened. */
void ll_nccl_host_devices(const struct ll_nccl_host *h, struct ll_buf *b);
/* One line for people: "NCCL on n1: InfiniBand over mlx5_0..mlx5_7, GPUDirect RDMA on"
 * (plus ", plugin X" and the fallback reason where they apply). No newline. */
void ll_nccl_host_summary(const struct ll_nccl_host *h, struct ll_buf *b);
/* "communicator 0x1111aaaa2222bbbb (8 ranks, 8 seen on 1 host): P2P, NVLS" (with "comm 0x..."
 * for one known only by its pointer), the network first when it carried channels:
 * "InfiniBand with GPUDirect RDMA on, P2P". No newline. */
void ll_nccl_comm_summary(const struct ll_nccl_job_comm *c, struct ll_buf *b);
/* "FILE:LINE: TEXT" of a proof line, appended to `b`. */
void ll_nccl_proof_describe(const struct ll_nccl_proof *p, struct ll_buf *b);

#endif
