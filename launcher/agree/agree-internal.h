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

/* Slurm environment alone: node rank, count, first host, port from the job id (or
 * port_asked > 0, the command line's or a profile's), the interface of the route to
 * the first host; the proof when o->prove (proof_ifname: the user's interface for the
 * job, NULL: the route's). */
int agree_slurm_run(const struct ll_agree_options *o, const char *proof_ifname, int port_asked,
		    struct ll_cluster *ret, struct ll_error *err);

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
