/* Stage 3: agreement. Turns one node's plan into a cluster plan: node rank, node
 * count, master address and port, this node's socket interface in a subnet every
 * node shares, and a homogeneity check before anything launches.
 *
 * Backends: PMIx (srun --mpi=pmix, mpirun), the Slurm environment alone, or a
 * single node. They share the pure decision in ll_agree_decide(), which sees every
 * node only through a small record (digests of what must match, a candidate port,
 * the switch address) and fetches a node's full summary only where its digest
 * differs: the cost per node stays flat as the job grows (DESIGN.md, stage 3). */
#ifndef LLMLAUNCH_AGREE_H
#define LLMLAUNCH_AGREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "llmlaunch/agree-contract.h"
#include "llmlaunch/facts.h"
#include "llmlaunch/plan.h"
#include "llmlaunch/util.h"

/* ---- node summary (launcher/agree/agree-summary.c) ---- */

/* The interface's role (llmlaunch/facts.h), as every node classifies it. */
enum ll_summary_if_kind {
	LL_SUMMARY_IF_PHYSICAL = LL_NETIF_ROLE_PHYSICAL,
	LL_SUMMARY_IF_IPOIB = LL_NETIF_ROLE_IPOIB,
	LL_SUMMARY_IF_VIRTUAL = LL_NETIF_ROLE_VIRTUAL,
	LL_SUMMARY_IF_CONTAINER = LL_NETIF_ROLE_CONTAINER,
	LL_SUMMARY_IF_LOOPBACK = LL_NETIF_ROLE_LOOPBACK,
};

/* One address of one interface (an interface with two addresses gives two rows). */
struct ll_summary_if {
	char *name;
	enum ll_summary_if_kind kind;
	int family;                 /* AF_INET or AF_INET6 */
	char *addr;                 /* numeric text */
	unsigned prefixlen;
};

struct ll_summary_port {
	char *device;               /* "mlx5_0" */
	unsigned port;
	enum ll_port_state state;
	enum ll_link_layer link_layer;
	double rate_gbps;           /* -1 unknown */
	enum ll_rdma_class rdma_class; /* what drives the device (a node with EFA and one with
					* ConnectX differ even with equal ports) */
};

/* What one node tells the others: facts that must match, chosen values, addresses. */
struct ll_summary {
	char *host;                 /* facts' hostname, NULL unknown */
	int n_gpus;
	char *gpu_model;            /* model of the first GPU, NULL unknown or none */
	int nproc_per_node;
	int master_port;            /* the master port this node's command line or profile asked for, 0 none */
	struct ll_summary_port *ports;
	size_t n_ports;
	int gid_index;              /* planned NCCL_IB_GID_INDEX, -1 unset */
	enum ll_tristate gdr_ready;
	char *net;                  /* chosen transport: "IB", "Socket" or NCCL_NET's value */
	char *ib_hca;               /* planned NCCL_IB_HCA, NULL unset */
	/* The RoCE QoS of the active Ethernet ports and the planned class, one text
	 * ("class 106; forced none, trust dscp, PFC 3, ECN 3, RoCE MTU 4096"), NULL
	 * without RoCE ports (docs/roce.md). */
	char *qos;
	struct ll_summary_if *ifs;
	size_t n_ifs;
};

void ll_summary_free(struct ll_summary *s);
static inline void ll_summary_freep(struct ll_summary **s) { if (*s) { ll_summary_free(*s); *s = NULL; } }

/* The QoS text of ll_summary's qos for facts and a plan; NULL without RoCE ports. */
char *ll_summary_qos_text(const struct ll_facts *f, const struct ll_plan *plan);

/* Compact JSON (one line, short keys; about 100 bytes plus 60 per port and address). */
char *ll_summary_serialize(const struct ll_summary *s);
/* -EINVAL with a message naming `who` (a node name) when the text is not a summary. */
int ll_summary_parse(const char *text, const char *who, struct ll_summary **ret, struct ll_error *err);

/* Digest of everything the homogeneity check compares (equal digests: nothing to report). */
uint64_t ll_summary_hw_digest(const struct ll_summary *s);
/* Digest of the set of subnets that could join nodes: not loopback, not container bridges,
 * not host prefixes (/32, /128), which no two nodes share (equal digests: same subnets,
 * whatever the addresses). */
uint64_t ll_summary_net_digest(const struct ll_summary *s);
int ll_summary_active_ports(const struct ll_summary *s);

/* "10.0.0.0/24" for an address and prefix; NULL when addr is not numeric. */
char *ll_subnet_of(int family, const char *addr, unsigned prefixlen);

/* ---- NVLink cliques (launcher/agree/agree-clique.c) ---- */

/* Where a node stands in a multi-node NVLink fabric (GB200 NVL72: a clique of up to
 * 18 nodes shares one NVLink domain), as every node publishes it. */
enum ll_clique_state {
	LL_CLIQUE_NONE = 0,         /* no fabric information (no NVML fabric, not supported) */
	LL_CLIQUE_READY,            /* every GPU registered: key is "CLUSTER-UUID/CLIQUE-ID" */
	LL_CLIQUE_PENDING,          /* some GPU's registration has not completed */
	LL_CLIQUE_FAILED,           /* some GPU's registration completed with an error */
	LL_CLIQUE_BLOCK,            /* no NVML fabric, but Slurm's topology/block: key is the block */
};

struct ll_agree_clique {
	enum ll_clique_state state;
	int gpus;                   /* GPUs this node's workers use, -1 unknown */
	char *key;                  /* READY, BLOCK: what nodes of one clique share; else NULL */
};

/* This node's clique from its facts (NVML fabric info of the workers' GPUs), else the
 * Slurm block from SLURM_TOPOLOGY_ADDR when SLURM_TOPOLOGY_ADDR_PATTERN is "block.node"
 * (topology/block). Pure. */
void ll_agree_clique_of(const struct ll_facts *f, const struct ll_plan *plan, char *const *env,
			struct ll_agree_clique *ret);
/* "R:8:UUID/3", "B:8:b1", "P:8:-", "-" for LL_CLIQUE_NONE; parse accepts what format writes. */
char *ll_agree_clique_format(const struct ll_agree_clique *c);
int ll_agree_clique_parse(const char *text, struct ll_agree_clique *ret);
void ll_agree_clique_release(struct ll_agree_clique *c);

/* ---- the small per-node record every node publishes ---- */

struct ll_agree_node {
	char *name;                 /* the launcher's name for the node (PMIX_HOSTNAME, Slurm node) */
	char *topology_addr;        /* SLURM_TOPOLOGY_ADDR ("s1.s7.n12"), NULL */
	struct ll_agree_clique clique; /* NVLink clique: ranks of one clique are consecutive */
	uint64_t hw_digest, net_digest;
	uint64_t host_key;          /* same value: same host and network namespace (loopback reaches) */
	int port;                   /* a TCP port this node found free: the master port if it is node 0 */
};

/* "HW NET HOST PORT TOPO CLIQUE" in one short line; name is not part of it (records
 * without CLIQUE, from older llmlaunch, read as LL_CLIQUE_NONE). */
char *ll_agree_node_format(const struct ll_agree_node *n);
int ll_agree_node_parse(const char *text, const char *who, struct ll_agree_node *ret, struct ll_error *err);
void ll_agree_node_release(struct ll_agree_node *n);

/* ---- the pure decision (launcher/agree/agree.c) ---- */

/* Give the full summary of nodes[i]; it stays owned by the fetcher until the
 * decision returns. */
typedef int (*ll_summary_fetch_fn)(void *data, size_t i, const struct ll_summary **ret, struct ll_error *err);

/* Who starts the nodes, so who can leave one out: a hint is said in its terms. */
enum ll_leave_out {
	LL_LEAVE_OUT_SRUN,          /* srun --exclude */
	LL_LEAVE_OUT_MPIRUN,        /* mpirun's --host or --hostfile */
	LL_LEAVE_OUT_PODS,          /* a Kubernetes job's pods (TrainJob, PyTorchJob, JobSet, LWS) */
	LL_LEAVE_OUT_SKYPILOT,      /* a SkyPilot cluster */
	LL_LEAVE_OUT_MANUAL,        /* whoever set MASTER_ADDR, NNODES and NODE_RANK */
};

struct ll_agree_input {
	const struct ll_agree_node *nodes; /* in the launcher's order */
	size_t n_nodes;
	size_t self;                /* this node's index in nodes */
	bool strict;                /* soft differences are errors too */
	bool routed;                /* no subnet shared: node 0's preferred address, each node's interface
				     * the route to it (the caller asks the kernel; the proof tells);
				     * false: that is an error, -ENETUNREACH */
	enum ll_leave_out leave_out; /* whose terms the hint to leave nodes out speaks
				      * (ll_agree_leave_out) */
	ll_summary_fetch_fn fetch;
	void *fetch_data;
	/* Optional: true when fetch(i) costs no message to another node. */
	bool (*have)(void *data, size_t i);
};

struct ll_agree_result {
	size_t *order;              /* order[rank] = index into nodes */
	size_t n_nodes;
	int node_rank;              /* this node's */
	char *master_addr;
	int master_port;
	char *subnet;               /* the common subnet, "192.0.2.0/24" */
	char *socket_ifname;        /* this node's interface in it */
	bool loopback_only;         /* all nodes are one host: the subnet is loopback */
	bool routed;                /* no subnet is shared (input routed): subnet and socket_ifname NULL,
				     * master_addr node 0's preferred address, reached by each node's route */
	char **warnings;            /* soft differences, each naming nodes */
	size_t n_warnings;
	size_t n_fetched;           /* full summaries fetched: 1 + one per odd digest */
	/* Multi-node NVLink: GPUs of the smallest NVLink clique in the job, when every
	 * node is in one (0: not decided, the node's own domain stands), and why. */
	int nvlink_domain;
	char *nvlink_domain_reason;
	bool clique_order;          /* nodes were ordered by clique */
};

void ll_agree_result_release(struct ll_agree_result *r);

/* Decide ranks, master, interface and the homogeneity verdict. Every node runs this
 * on the same records and so reaches the same answer and the same error message.
 * -EPROTO on a hard difference (message names the nodes and the difference),
 * -ENETUNREACH when no subnet is shared, errors of `fetch` as they come. */
int ll_agree_decide(const struct ll_agree_input *in, struct ll_agree_result *ret, struct ll_error *err);

/* How to leave nodes out of the job, in the launcher's terms: "srun --exclude=NAMES"
 * under Slurm, else "drop them from mpirun's --host or --hostfile: NAMES". Malloc'ed. */
char *ll_agree_leave_out(enum ll_leave_out who, const char *names);

/* The switch above a node in a SLURM_TOPOLOGY_ADDR ("s1.s7.n12" -> "s1.s7"); "" for none. */
size_t ll_topology_leaf_len(const char *addr);

/* The interface of summary s with an address in `subnet` (as ll_agree_decide chooses
 * it for this node; loopback: loopback interfaces count), NULL when none. */
const char *ll_agree_ifname_in(const struct ll_summary *s, const char *subnet, bool loopback);

/* Whether nodes[i] publishes its full summary when digests differ: it is the first node
 * (lowest index) of its hardware digest or of its network digest, or node 0. Those are
 * the members ll_agree_decide() reads for a group it is not in, so one collective
 * exchange of them gives every node all it reads (no read of a peer on demand). */
bool ll_agree_publishes_summary(const struct ll_agree_node *nodes, size_t n, size_t i);

/* Rank 0's digests of the records that checked in (launcher/agree/agree-digests.c):
 * ll_agree_digests_add() is true when node `index` is the first to bring its hardware
 * or its network digest, so its full summary is the one the decision reads for its
 * group (ll_agree_input's `have`). O(1) per node: a hash table, no rescan. Add node 0
 * first, then the others in the order they arrive. */
struct ll_agree_digests;
struct ll_agree_digests *ll_agree_digests_new(void);
bool ll_agree_digests_add(struct ll_agree_digests *d, const struct ll_agree_node *n, size_t index);
/* Distinct hardware (net false) or network digests seen so far. */
size_t ll_agree_digests_groups(const struct ll_agree_digests *d, bool net);
void ll_agree_digests_free(struct ll_agree_digests *d);
static inline void ll_agree_digests_freep(struct ll_agree_digests **d) { if (*d) { ll_agree_digests_free(*d); *d = NULL; } }

/* "n1, n3, n2, n4": the nodes in rank order (order[rank] indexes nodes), the first
 * LL_AGREE_NAMES_SHOWN of them, then how many more. Malloc'ed. */
char *ll_agree_order_text(const struct ll_agree_node *nodes, const size_t *order, size_t n);

/* Append names[index[i]] for the first of n_index nodes to b, then how many of n_total
 * are not shown, as every message names nodes: "n4", "n3, n4", "n1, ..., n8 and 992 more". */
#define LL_AGREE_NAMES_SHOWN 8
void ll_agree_add_names(struct ll_buf *b, char *const *names, const size_t *index, size_t n_index, size_t n_total);

/* ---- deadlines (launcher/agree/agree.c) ---- */

/* Every wait of a multi-node start scales with the job: more nodes take longer to
 * start, to check in, and to connect to rank 0. */
struct ll_agree_deadlines {
	double agree_s;             /* every node arrives and the decision is made */
	double reach_s;             /* every node reaches the master after the decision */
	double rdzv_s;              /* torchrun's own static rendezvous (--rdzv_conf timeout=) */
	bool agree_given;           /* agree_s is the user's --agree-timeout */
};
#define LL_AGREE_BASE_S 120.0
#define LL_AGREE_PER_NODE_S 0.05
#define LL_REACH_BASE_S 10.0
#define LL_REACH_PER_NODE_S 0.002
#define LL_RDZV_BASE_S 60.0
#define LL_RDZV_PER_NODE_S 0.05

/* The deadlines for a job of `nnodes` nodes; agree_timeout > 0 is the user's own
 * --agree-timeout, which also bounds the reachability wait. Pure. */
void ll_agree_deadlines(size_t nnodes, double agree_timeout, struct ll_agree_deadlines *ret);
/* "120 s + 50 ms a node" style reason for one deadline, for explain (malloc'ed). */
char *ll_agree_deadline_reason(double base_s, double per_node_s, size_t nnodes);

/* ---- waiting for nodes ---- */

enum ll_agree_wait { LL_AGREE_WAIT_ARRIVE, LL_AGREE_WAIT_REACH };

/* What a node waits for, for a status line ("waiting for 3 of 64 nodes: n17, n42, n63"). */
struct ll_agree_progress {
	enum ll_agree_wait what;
	double waited_s;
	size_t n_missing, n_nodes;
	const char *names;          /* the first missing nodes, ll_agree_add_names() style */
	bool done;                  /* the wait is over: the last call, after at least one other */
	bool ok;                    /* done: everyone came (else an error follows) */
};
typedef void ll_agree_progress_fn(void *data, const struct ll_agree_progress *p);

/* ---- the check-in and the rendezvous proof (launcher/agree/agree-rdzv.c) ---- */

/* Rank 0 listens from the start of the agreement on the port that becomes torchrun's
 * master port. The other nodes connect to it to check in while the agreement waits
 * (rank 0 then knows who is missing without waiting for the full fence and tells
 * them), and after the decision to prove they reach the master address and port
 * through their interface (rank 0 tells all of them the verdict). One connection a
 * node each time: rank 0's work grows with the job, every other node's does not. */
struct ll_rdzv;

struct ll_rdzv_job {
	const char *id;             /* the same text on every node of the job ("slurm 123.0", a PMIx namespace) */
	size_t nnodes, rank;
	char *const *names;         /* names[rank], nnodes of them (copied) */
	ll_agree_progress_fn *progress; /* NULL: no status */
	void *progress_data;
	/* Backends without PMIx: this node's record (ll_agree_node_format) goes with the
	 * check-in, and its summary (ll_summary_serialize) when rank 0 asks for it. */
	const char *record, *summary;
};

/* The line node job->rank sends rank 0 ("CHECKIN" or "REACH"), for simulators of
 * many nodes (bench/rdzv-reach.c); the nodes themselves send it in ll_rdzv_checkin()
 * and ll_rdzv_prove(). Malloc'ed, '\n'-terminated. */
char *ll_rdzv_hello(const struct ll_rdzv_job *job, const char *kind);

#define LL_RDZV_PORTS 8
/* The ports rank 0 tries, the same on every node: LL_RDZV_PORTS consecutive ports
 * from `base` within 20000-32767 (below Linux's ephemeral range). */
void ll_rdzv_ports(int base, int ret[LL_RDZV_PORTS]);

/* Rank 0: listen on the wildcard address at the first of `ports` free there (none
 * free, or n_ports 0: a port the kernel picks). */
int ll_rdzv_listen(const struct ll_rdzv_job *job, const int *ports, size_t n_ports, struct ll_rdzv **ret,
		   struct ll_error *err);
int ll_rdzv_port(const struct ll_rdzv *r);

/* Other nodes: start checking in with rank 0 at `host` (a name or an address) on the
 * first of `ports` where rank 0 of this job answers. Non-blocking: ll_rdzv_run()
 * does the work. -ENOENT (message set) when `host` does not resolve. */
int ll_rdzv_checkin(const struct ll_rdzv_job *job, const char *host, const int *ports, size_t n_ports,
		    struct ll_rdzv **ret, struct ll_error *err);

/* Serve (rank 0) or follow (others) until `wake_fd` (-1: none) is readable, the
 * verdict arrived, or `until` (ll_now_s() scale) passes; reports progress. */
void ll_rdzv_run(struct ll_rdzv *r, int wake_fd, double until);

/* What is known of the nodes not here: rank 0 counts itself, the others repeat rank
 * 0's last status. ret_names (may be NULL) gets ll_agree_add_names() text. False when
 * nothing is known (a node that could not check in); *ret_why then says why. */
bool ll_rdzv_missing(struct ll_rdzv *r, size_t *ret_n, char **ret_names, char **ret_why);
/* Rank 0 only: every node not here, in Slurm's hostlist syntax ("n[3-4],gpu7"), for
 * a file a resubmission excludes; NULL on the other ranks or when none is missing. */
char *ll_rdzv_missing_hostlist(const struct ll_rdzv *r);
/* Rank 0's verdict, once a node received it (FAIL's message), else NULL. */
const char *ll_rdzv_verdict(const struct ll_rdzv *r);

/* Backends without PMIx, rank 0: wait until every node checked in with its record
 * and sent the summaries the decision reads (the first of each digest,
 * ll_agree_digests_add), or `until`. self: rank 0's own record and summary (kept by
 * the caller). 0, or -ETIMEDOUT with the message naming the nodes missing. */
int ll_rdzv_gather(struct ll_rdzv *r, const struct ll_agree_node *self, const struct ll_summary *self_summary,
		   double until, struct ll_error *err);
/* After ll_rdzv_gather: every node's record (index: launcher rank), and the summary of
 * node i where it was sent (NULL: not asked for). */
const struct ll_agree_node *ll_rdzv_nodes(const struct ll_rdzv *r);
const struct ll_summary *ll_rdzv_summary(const struct ll_rdzv *r, size_t i);
/* Rank 0: send each checked-in node the decision (its node rank, the master, the
 * subnet or routed, the notes) or, res NULL, the failure (message and hint). The
 * nodes close their check-in connection on it; a failure closes them all. */
void ll_rdzv_send_decision(struct ll_rdzv *r, const struct ll_agree_result *res, const char *fail_message,
			   const char *fail_hint);

/* What rank 0 decided, as one node receives it (DECIDED and the lines before it). */
struct ll_rdzv_decision {
	int node_rank;
	char *master_addr;
	int master_port;
	char *subnet;               /* NULL: routed, or loopback_only's 127.0.0.0/8 */
	bool routed, loopback_only;
	char **notes;               /* the decision's warnings */
	size_t n_notes;
	int nvlink_domain;
	char *nvlink_domain_reason;
	char *node_order;
};
/* A node: the decision once received (check-in with a record), else NULL; and the
 * failure's hint that came with FAIL (NULL: none). */
const struct ll_rdzv_decision *ll_rdzv_decision(const struct ll_rdzv *r);
const char *ll_rdzv_verdict_hint(const struct ll_rdzv *r);
/* A node: whether rank 0 ever answered its check-in (HELLO). */
bool ll_rdzv_checked_in(const struct ll_rdzv *r);
/* The lines rank 0 sends the node of `node_rank` for a decision (order_text: the
 * node order when it moved nodes, else NULL), for tests and simulators: malloc'ed,
 * each '\n'-terminated. */
char *ll_rdzv_decision_lines(const struct ll_agree_result *res, int node_rank, const char *order_text);
/* Parse what ll_rdzv_decision_lines() wrote, one line at a time: 1 when `line` was
 * DECIDED (the decision is complete), 0 for a line before it, -EPROTO otherwise. */
int ll_rdzv_decision_line(struct ll_rdzv_decision *d, const char *line);
void ll_rdzv_decision_release(struct ll_rdzv_decision *d);

/* Rank 0: send every connected node the verdict (NULL: OK, else FAIL with the
 * message), wait briefly for them to close first, close them. */
void ll_rdzv_send_verdict(struct ll_rdzv *r, const char *fail_message);

/* Tell the user the wait is over, `ok`: everyone came (a status line shown is cleared). */
void ll_rdzv_progress_done(struct ll_rdzv *r, bool ok);

void ll_rdzv_close(struct ll_rdzv *r);
static inline void ll_rdzv_closep(struct ll_rdzv **r) { if (*r) { ll_rdzv_close(*r); *r = NULL; } }

struct ll_rdzv_proof {
	const char *master_addr;    /* numeric */
	int master_port;
	const char *ifname;         /* this node's interface for the job; NULL: the route's */
	double deadline;            /* give up on an unreachable master (ll_now_s() scale) */
	double arrive_deadline;     /* keep trying while nothing listens yet (>= deadline) */
};

struct ll_rdzv_outcome {
	bool self_failed;           /* this node could not reach the master */
	char *detail;               /* then: "n3 cannot reach the master A:P through eth0 (S): ..." */
	char *verdict;              /* rank 0's FAIL message, when one was received or sent */
	char *arrival_ifname;       /* rank 0: its interface the others came in on, */
	char *arrival_addr;         /* and its address there (NULL: nobody came) */
};
void ll_rdzv_outcome_release(struct ll_rdzv_outcome *o);

/* The proof. Rank 0 (server: its listener): wait until every node reached it or the
 * arrive deadline, then send the verdict. Others (server NULL): connect to the master
 * through the interface, tell rank 0, wait for the verdict. 0 when every node reached
 * rank 0; -EHOSTUNREACH when one did not (message: this node's failure, else rank 0's
 * verdict); -ETIMEDOUT / -EIO when rank 0 gave no verdict. */
int ll_rdzv_prove(const struct ll_rdzv_job *job, struct ll_rdzv *server, const struct ll_rdzv_proof *p,
		  struct ll_rdzv_outcome *out, struct ll_error *err);

/* "n3 cannot reach the master A:P through eth0 (198.51.100.3): Connection timed out":
 * one node's failure, as it reports it and as every other node repeats it. */
char *ll_rdzv_failure_text(const char *node, const char *master_addr, int master_port, const char *ifname,
			   const char *source, const char *why);

/* The interface the kernel would use to reach `addr` (numeric) and this node's address on
 * it: ret_ifname, ret_source malloc'ed. -ENETUNREACH (message set) without a route. */
int ll_route_to(const char *addr, char **ret_ifname, char **ret_source, struct ll_error *err);

/* ---- the entry point (launcher/agree/agree-run.c) ---- */

/* CONTRACT: an engine's variables (Kubernetes operators, SkyPilot, the manual form;
 * llmlaunch/agree-contract.h), the engine named by the plan's "agreement". */
enum ll_agree_backend { LL_AGREE_AUTO = 0, LL_AGREE_PMIX, LL_AGREE_SLURM, LL_AGREE_SINGLE, LL_AGREE_CONTRACT };
const char *ll_agree_backend_name(enum ll_agree_backend b);

struct ll_agree_options {
	enum ll_agree_backend backend; /* AUTO: the plan's "agreement" (ll_agree_launcher() when planned) */
	double timeout_s;           /* the agreement's; <= 0: scaled with the job (ll_agree_deadlines) */
	bool strict;
	char *const *environ;       /* environment to detect launchers in; NULL: the process's */
	/* env/explain: agree only under a launcher; alone, leave the plan untouched
	 * (ret->backend = LL_AGREE_SINGLE, nnodes 1). */
	bool launcher_only;
	/* run: after the decision, every node proves it reaches the master address and
	 * port through its interface (ll_rdzv_prove); a node that cannot fails them all. */
	bool prove;
	ll_agree_progress_fn *progress; /* status while waiting for nodes; NULL: none */
	void *progress_data;
	/* check --on-slow exclude: when the agreement times out, node 0 stores here the
	 * nodes that did not arrive (ll_rdzv_missing_hostlist, the caller frees); left
	 * alone otherwise. NULL: not wanted. */
	char **missing_out;
};

/* --agree-timeout and --strict for the commands that agree (run, env, explain). */
enum { LL_OPT_AGREE_TIMEOUT = 0x1200, LL_OPT_STRICT };
#define LL_AGREE_LONG_OPTIONS                                                    \
	{ "agree-timeout", required_argument, NULL, LL_OPT_AGREE_TIMEOUT },      \
	{ "strict", no_argument, NULL, LL_OPT_STRICT }
#define LL_AGREE_HELP                                                                        \
	"  --agree-timeout S  under srun or mpirun: wait at most S seconds for every node to\n"  \
	"                    arrive (default 120 s + 50 ms a node)\n"                           \
	"  --strict          soft differences between nodes (a port down, another rate) are errors\n"
/* Handle one of the options above: 1 handled, 0 not one of them, -EINVAL (err set). */
int ll_agree_cmd_option(struct ll_agree_options *o, int opt, const char *arg, struct ll_error *err);

struct ll_cluster {
	enum ll_agree_backend backend;
	int nnodes;
	int node_rank;
	char *master_addr;
	int master_port;
	char *socket_ifname;        /* NULL: leave the node plan's choice */
	char *subnet;
	bool checked;               /* the homogeneity check ran (PMIx, or node 0's check-in under run) */
	char **notes;               /* warnings and notes for the command to print */
	size_t n_notes;
	double seconds;             /* time spent agreeing */
	size_t n_fetched;
	struct ll_agree_deadlines deadlines; /* for a job of nnodes (not single) */
	bool proved;                /* every node reached the master (options' prove) */
	double prove_seconds;       /* of which the proof */
	int nvlink_domain;          /* GPUs of the job's smallest NVLink clique, 0: not decided */
	char *nvlink_domain_reason;
	char *node_order;           /* "n1, n3, n2, n4" when nodes were ordered by NVLink clique */
	bool routed;                /* pmix: no subnet shared, each node's interface is its route to the master */
	struct ll_contract *contract; /* CONTRACT: what the engine's variables said (owned) */
};

void ll_cluster_release(struct ll_cluster *c);
/* Add a note (a warning or remark for the command to print). */
void ll_cluster_note(struct ll_cluster *c, const char *fmt, ...) LL_PRINTF(2, 3);

/* Agree with the other nodes and write the cluster-wide values into `plan`
 * (torchrun.nnodes, .node_rank, .master_addr, .master_port, NCCL_SOCKET_IFNAME,
 * GLOO_SOCKET_IFNAME, source LL_SOURCE_CLUSTER; values the user set in the environment
 * or on the command line are left alone). The backend is the plan's "agreement"
 * (o->backend overrides it); without one, the single node keeps the world values the
 * plan holds from the command line or a local profile (a rendezvous by hand). A
 * master port the plan holds from them is the one the agreement uses and proves.
 * Fills `ret` on success. */
int ll_agree(struct ll_plan *plan, const struct ll_facts *facts, const struct ll_agree_options *o,
	     struct ll_cluster *ret, struct ll_error *err);

/* Write the cluster values of `c` into `plan` as ll_agree() does, each with its
 * source and reason. For callers that know the cluster without agreeing (the
 * TaskProlog). */
void ll_cluster_apply(struct ll_plan *plan, const struct ll_cluster *c);

/* Which backend the environment calls for (no PMIx call is made): PMIx, then Slurm,
 * then an engine's contract, else the single node. */
enum ll_agree_backend ll_agree_detect(char *const *environ);
/* The launcher whose agreement the environment calls for, as ll_agree_launcher(), but
 * an engine's contract given in part or two contracts that disagree are a usage error
 * (-EINVAL, err->usage), said before anything is planned. */
int ll_agree_launcher_read(char *const *environ, const char **ret_name, const char **ret_why, struct ll_error *err);
/* The launcher whose agreement the environment calls for, as the planner names it
 * ("pmix", "slurm"; NULL: none), and what showed it (static text). */
const char *ll_agree_launcher(char *const *environ, const char **ret_why);

/* Build this node's summary from facts and plan. */
int ll_summary_build(const struct ll_facts *facts, const struct ll_plan *plan, struct ll_summary **ret,
		     struct ll_error *err);

#endif
