/* The seam between the agreement (launcher/agree/agree-pmix.c) and the PMIx module
 * (launcher/modules/pmix.c, built as llmlaunch-pmix.so against libpmix): the one
 * entry the module exports. The module exchanges the records and summaries and
 * calls back into the pure decision, the check-in and the rendezvous proof
 * (llmlaunch/agree.h), which the binary exports. */
#ifndef LLMLAUNCH_AGREE_PMIX_H
#define LLMLAUNCH_AGREE_PMIX_H

#include "llmlaunch/agree.h"

struct ll_agree_pmix_args {
	const struct ll_summary *self;
	const struct ll_agree_node *rec;  /* its port is set by the module (rank 0's listener) */
	const struct ll_agree_options *o;
	const char *proof_ifname;         /* the interface the user set for the job; NULL: the agreed one */
	int port_base;                    /* the job's first candidate master port (ll_rdzv_ports) */
	int port_asked;                   /* > 0: the only master port (the command line's or a profile's,
					   * the same on every node: the summaries prove it) */
	bool not_slurm;                   /* mpirun, not srun: hints in its terms (read before PMIx_Init,
					   * whose setenv may move the process's environment) */
	const char *self_name;            /* this node's name as the launcher names it to the other nodes
					   * (srun: SLURMD_NODENAME), NULL: PMIx's PMIX_HOSTNAME for it */
};

/* Publish the record and summary under PMIx, check in with rank 0 while waiting,
 * read the summaries the decision needs, decide, prove the rendezvous when
 * o->prove, and fill `ret`. */
typedef int ll_pmix_module_run_fn(const struct ll_agree_pmix_args *a, struct ll_cluster *ret, struct ll_error *err);
ll_pmix_module_run_fn ll_pmix_module_run;

#endif
