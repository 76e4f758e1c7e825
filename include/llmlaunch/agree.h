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
	struct ll_summary_port *ports;
	size_t n_ports;
	int gid_index;              /* planned NCCL_IB_GID_INDEX, -1 unset */
	enum ll_tristate gdr_ready;
	char *net;                  /* chosen transport: "IB", "Socket" or NCCL_NET's value */
	char *ib_hca;               /* planned NCCL_IB_HCA, NULL unset */
	struct ll_summary_if *ifs;
	size_t n_ifs;
};

void ll_summary_free(struct ll_summary *s);
static inline void ll_summary_freep(struct ll_summary **s) { if (*s) { ll_summary_free(*s); *s = NULL; } }

/* Compact JSON (one line, short keys; about 100 bytes plus 60 per port and address). */
char *ll_summary_serialize(const struct ll_summary *s);
/* -EINVAL with a message naming `who` (a node name) when the text is not a summary. */
int ll_summary_parse(const char *text, const char *who, struct ll_summary **ret, struct ll_error *err);

/* Digest of everything the homogeneity check compares (equal digests: nothing to report). */
uint64_t ll_summary_hw_digest(const struct ll_summary *s);
/* Digest of the set of non-loopback subnets (equal digests: same subnets, whatever the addresses). */
uint64_t ll_summary_net_digest(const struct ll_summary *s);
int ll_summary_active_ports(const struct ll_summary *s);

/* "10.0.0.0/24" for an address and prefix; NULL when addr is not numeric. */
char *ll_subnet_of(int family, const char *addr, unsigned prefixlen);

/* ---- the small per-node record every node publishes ---- */

struct ll_agree_node {
	char *name;                 /* the launcher's name for the node (PMIX_HOSTNAME, Slurm node) */
	char *topology_addr;        /* SLURM_TOPOLOGY_ADDR ("s1.s7.n12"), NULL */
	uint64_t hw_digest, net_digest;
	uint64_t host_key;          /* same value: same host and network namespace (loopback reaches) */
	int port;                   /* a TCP port this node found free: the master port if it is node 0 */
};

/* "HW NET HOST PORT TOPO" in one short line; name is not part of it. */
char *ll_agree_node_format(const struct ll_agree_node *n);
int ll_agree_node_parse(const char *text, const char *who, struct ll_agree_node *ret, struct ll_error *err);
void ll_agree_node_release(struct ll_agree_node *n);

/* ---- the pure decision (launcher/agree/agree.c) ---- */

/* Give the full summary of nodes[i]; it stays owned by the fetcher until the
 * decision returns. */
typedef int (*ll_summary_fetch_fn)(void *data, size_t i, const struct ll_summary **ret, struct ll_error *err);

struct ll_agree_input {
	const struct ll_agree_node *nodes; /* in the launcher's order */
	size_t n_nodes;
	size_t self;                /* this node's index in nodes */
	bool strict;                /* soft differences are errors too */
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
	char **warnings;            /* soft differences, each naming nodes */
	size_t n_warnings;
	size_t n_fetched;           /* full summaries fetched: 1 + one per odd digest */
};

void ll_agree_result_release(struct ll_agree_result *r);

/* Decide ranks, master, interface and the homogeneity verdict. Every node runs this
 * on the same records and so reaches the same answer and the same error message.
 * -EPROTO on a hard difference (message names the nodes and the difference),
 * -ENETUNREACH when no subnet is shared, errors of `fetch` as they come. */
int ll_agree_decide(const struct ll_agree_input *in, struct ll_agree_result *ret, struct ll_error *err);

/* The switch above a node in a SLURM_TOPOLOGY_ADDR ("s1.s7.n12" -> "s1.s7"); "" for none. */
size_t ll_topology_leaf_len(const char *addr);

/* ---- the entry point (launcher/agree/agree-run.c) ---- */

enum ll_agree_backend { LL_AGREE_AUTO = 0, LL_AGREE_PMIX, LL_AGREE_SLURM, LL_AGREE_SINGLE };
const char *ll_agree_backend_name(enum ll_agree_backend b);

struct ll_agree_options {
	enum ll_agree_backend backend; /* AUTO: PMIx when its variables are set, else Slurm, else single */
	double timeout_s;           /* fence timeout; <= 0: LL_AGREE_DEFAULT_TIMEOUT */
	bool strict;
	char *const *environ;       /* environment to detect launchers in; NULL: the process's */
	/* The user's own rendezvous flags for torchrun (`run`: --nnodes, --node_rank,
	 * --master_addr, --master_port, --rdzv_endpoint, --standalone). With any of them
	 * but --node_rank and --master_port the user runs the rendezvous by hand: no
	 * launcher is asked, and the single-node backend keeps what they said. */
	bool rendezvous_by_hand;
	int nnodes;                 /* 0: not given; -1: given but no fixed count ("1:4") */
	const char *nnodes_text;    /* the value as given, for messages */
	int node_rank;              /* 0 unless given */
	const char *master_addr;    /* NULL: not given */
	int master_port;            /* 0: not given */
	bool own_endpoint;          /* --rdzv_endpoint or --standalone: torchrun finds its port */
	/* env/explain: agree only under a launcher; alone, leave the plan untouched
	 * (ret->backend = LL_AGREE_SINGLE, nnodes 1). */
	bool launcher_only;
};

/* --agree-timeout and --strict for the commands that agree (run, env, explain). */
enum { LL_OPT_AGREE_TIMEOUT = 0x1200, LL_OPT_STRICT };
#define LL_AGREE_LONG_OPTIONS                                                    \
	{ "agree-timeout", required_argument, NULL, LL_OPT_AGREE_TIMEOUT },      \
	{ "strict", no_argument, NULL, LL_OPT_STRICT }
#define LL_AGREE_HELP                                                                        \
	"  --agree-timeout S  under srun --mpi=pmix or mpirun: wait at most S seconds for every\n" \
	"                    node to arrive (default 600)\n"                                     \
	"  --strict          soft differences between nodes (a port down, another rate) are errors\n"
/* Handle one of the options above: 1 handled, 0 not one of them, -EINVAL (err set). */
int ll_agree_cmd_option(struct ll_agree_options *o, int opt, const char *arg, struct ll_error *err);

/* Large jobs take a while for the last node to start: ten minutes before giving up. */
#define LL_AGREE_DEFAULT_TIMEOUT 600.0

struct ll_cluster {
	enum ll_agree_backend backend;
	int nnodes;
	int node_rank;
	char *master_addr;
	int master_port;
	char *socket_ifname;        /* NULL: leave the node plan's choice */
	char *subnet;
	bool checked;               /* a homogeneity check ran (PMIx only) */
	char **notes;               /* warnings and notes for the command to print */
	size_t n_notes;
	double seconds;             /* time spent agreeing */
	size_t n_fetched;
};

void ll_cluster_release(struct ll_cluster *c);
/* Add a note (a warning or remark for the command to print). */
void ll_cluster_note(struct ll_cluster *c, const char *fmt, ...) LL_PRINTF(2, 3);

/* Agree with the other nodes and write the cluster-wide values into `plan`
 * (nnodes, node_rank, master_addr, master_port, NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME,
 * source LL_SOURCE_CLUSTER; values the user set in the environment or on the command
 * line are left alone). Fills `ret` on success. */
int ll_agree(struct ll_plan *plan, const struct ll_facts *facts, const struct ll_agree_options *o,
	     struct ll_cluster *ret, struct ll_error *err);

/* Write the cluster values of `c` into `plan` as ll_agree() does, each with its
 * source and reason; `o` (NULL: none) says which the user gave on the command line.
 * For callers that know the cluster without agreeing (the TaskProlog). */
void ll_cluster_apply(struct ll_plan *plan, const struct ll_cluster *c, const struct ll_agree_options *o);

/* Which backend the environment calls for (no PMIx call is made). */
enum ll_agree_backend ll_agree_detect(char *const *environ);

/* Build this node's summary from facts and plan. */
int ll_summary_build(const struct ll_facts *facts, const struct ll_plan *plan, struct ll_summary **ret,
		     struct ll_error *err);

#endif
