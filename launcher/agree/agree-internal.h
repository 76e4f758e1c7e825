/* Between the agreement entry (agree-run.c) and its backends (agree-pmix.c,
 * agree-slurm.c). Not a public interface. */
#ifndef LLMLAUNCH_AGREE_INTERNAL_H
#define LLMLAUNCH_AGREE_INTERNAL_H

#include "llmlaunch/agree-pmix.h"
#include "llmlaunch/agree.h"

/* PMIx: publish, fence, decide, prove (llmlaunch/agree-pmix.h). Fills ret (nnodes,
 * node_rank, master, socket_ifname, subnet, notes, checked). Loads the PMIx module on
 * first use. */
int agree_pmix_run(const struct ll_agree_pmix_args *a, struct ll_cluster *ret, struct ll_error *err);

/* This node for the agreement without PMIx: its summary and record (built as for
 * PMIx, agree-run.c); both NULL: no check, the proof alone. */
struct agree_env_self {
	const struct ll_summary *summary;
	const struct ll_agree_node *rec;
	enum ll_leave_out leave_out; /* hints in the engine's terms */
};

/* Slurm environment alone: node rank, count, first host, port from the job id (or
 * port_asked > 0, the command line's or a profile's), the interface of the route to
 * the first host; the proof when o->prove (proof_ifname: the user's interface for the
 * job, NULL: the route's). */
int agree_slurm_run(const struct ll_agree_options *o, const struct agree_env_self *me, const char *proof_ifname,
		    int port_asked, struct ll_cluster *ret, struct ll_error *err);

/* The backends without PMIx (Slurm's environment, the engines' contracts) share the
 * proof, which is also their check-in (agree-slurm.c). */
struct agree_env_world {
	const char *id;             /* the job's identity, the same text on every node (the token) */
	size_t nnodes, rank;
	char *const *names;         /* names[rank]; NULL: "node K" */
	const char *port_why;       /* where the master port came from, for "in use" */
	const char *port_hint;      /* what to do then */
	const char *unreach_hint;   /* what to do when a node cannot reach node 0, in the engine's terms */
	const struct agree_env_self *me;
	const char *user_ifname;    /* the user's interface for the job, which the proof uses; NULL: none */
};
/* Node 0 listens on ret->master_port. With w->me's record, every node checks in with
 * it (the others at `master`, numeric), node 0 gathers the summaries the decision
 * reads, decides as the PMIx path does and tells each node its rank, the master and
 * the subnet (or FAIL, the same message on every node); each node takes its
 * interface from its own summary (or its route to the master when routed) and ret
 * gets the decision. Then the proof: every node connects to the master through its
 * interface (`ifname`, the user's, overrides). Sets ret->proved, and without a
 * decision on node 0 its address and interface as the others reached them. */
int agree_env_prove(const struct ll_agree_options *o, const struct agree_env_world *w, const char *master,
		    const char *ifname, double t0, struct ll_cluster *ret, struct ll_error *err);
/* The first address `host` resolves to, IPv4 before IPv6 (torchrun's store and gloo
 * prefer it), never a loopback one when another is there (*ret_loopback: the best
 * was). NULL when it does not resolve (*ret_gai, may be NULL: getaddrinfo's code). */
char *agree_resolve(const char *host, bool *ret_loopback, int *ret_gai);
/* agree_resolve() until `until` (ll_now_s() scale; 0: once), pausing 0.1 s doubling up
 * to 2 s between tries: names that appear late (a headless service's record once its
 * pod exists). NULL with *ret_why (malloc'ed: the resolver's last error) at the end. */
char *agree_resolve_until(const char *host, double until, bool *ret_loopback, char **ret_why);
/* The interface that holds `addr` on this node, if it is one of its own; else NULL. */
char *agree_local_ifname(const char *addr);

/* The engines' contracts (agree-contract-run.c): the contract's world, node 0
 * resolved with backoff until the agreement's deadline, the interface of the route
 * to it, the proof when o->prove. */
int agree_contract_run(const struct ll_agree_options *o, const struct agree_env_self *me, const char *proof_ifname,
		       int port_asked, struct ll_cluster *ret, struct ll_error *err);

/* The port the Slurm fallback derives from a job and step id (20000-32767, below
 * Linux's ephemeral range, so a kernel-chosen port never takes it first). */
int agree_slurm_port(unsigned long job_id, unsigned long step_id);

/* NVLink cliques (agree-clique.c): what orders a node, its clique (READY, BLOCK)
 * before its leaf switch; the key and its length. */
size_t agree_order_key(const struct ll_agree_node *n, const char **ret);
/* The cluster-wide part of the decision: LLMLAUNCH_NVLINK_DOMAIN from the cliques, and
 * soft verdicts (into res->warnings; -EPROTO under in->strict) on nodes whose fabric
 * state differs and on cliques only partly in the job. */
int agree_cliques_decide(const struct ll_agree_input *in, struct ll_agree_result *res, struct ll_error *err);

#endif
