/* The Slurm backend without PMIx (srun --mpi=none, a batch script): everything comes
 * from the job's environment, so no node learns anything about the others and no
 * homogeneity check is possible. */
#include "agree-internal.h"

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "llmlaunch/hostlist.h"
#include "llmlaunch/port.h"
#include "llmlaunch/slurm.h"

int agree_slurm_port(unsigned long job_id, unsigned long step_id)
{
	/* Jobs sharing a node have different ids; steps of one job different step ids. */
	return 20000 + (int)((job_id * 8 + step_id % 8) % 12768);
}

int agree_slurm_run(const struct ll_agree_options *o, struct ll_cluster *ret, struct ll_error *err)
{
	struct ll_slurm_job job;
	char *first = NULL;
	struct addrinfo *ai = NULL;
	long step;
	int r;

	r = ll_slurm_job_read(o->environ, &job, err);
	if (r < 0)
		return r;
	if (!job.nodelist || job.job_id < 0)
		return ll_error_set(err, -EINVAL, "SLURM_JOB_ID and SLURM_JOB_NODELIST are not both set: not inside a "
						  "Slurm job");
	if (job.in_step && job.step_tasks > job.nnodes) {
		r = ll_error_set(err, -EINVAL,
				 "%ld llmlaunch processes on %ld node%s: llmlaunch runs once per node and starts that "
				 "node's workers itself",
				 job.step_tasks, job.nnodes, job.nnodes == 1 ? "" : "s");
		ll_error_hint(err, "srun -N %ld --ntasks-per-node=1 ...", job.nnodes);
		return r;
	}

	r = ll_hostlist_first(job.nodelist, &first, err);
	if (r < 0)
		return r;

	step = job.step_id >= 0 ? job.step_id : 0;
	ret->backend = LL_AGREE_SLURM;
	ret->nnodes = (int)job.nnodes;
	ret->node_rank = (int)job.node_id;
	ret->master_addr = first;
	ret->master_port = agree_slurm_port((unsigned long)job.job_id, (unsigned long)step);
	ret->checked = false;

	if (job.nnodes > 1)
		ll_cluster_note(ret, "no homogeneity check without PMIx: run 'srun --mpi=pmix' to have every node "
				     "compare GPUs, RDMA ports and addresses before launching");
	if (!job.in_step && job.nnodes > 1)
		ll_cluster_note(ret, "running in the batch script, on the first node only: start one llmlaunch per node "
				     "with 'srun --ntasks-per-node=1 llmlaunch ...'");
	if (getaddrinfo(first, NULL, NULL, &ai) != 0)
		ll_cluster_note(ret, "the master host '%s' (first of %s) does not resolve here", first, job.nodelist);
	else
		freeaddrinfo(ai);
	/* Only node 0 listens on the port: only it can check that the port is free. */
	if (job.node_id == 0 && ll_port_in_use(ret->master_port)) {
		r = ll_error_set(err, -EADDRINUSE, "master port %d (derived from job %ld step %ld) is in use on this node",
				 ret->master_port, job.job_id, step);
		ll_error_hint(err, "pass --master-port PORT (the same on every node), or use srun --mpi=pmix, "
				   "where node 0 picks a free port");
		return r;
	}
	return 0;
}
