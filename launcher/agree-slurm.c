/* The Slurm backend without PMIx (srun --mpi=none, a batch script): everything comes
 * from the job's environment, so no node learns anything about the others and no
 * homogeneity check is possible. */
#include "agree-internal.h"

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "llmlaunch/hostlist.h"

int agree_slurm_port(unsigned long job_id, unsigned long step_id)
{
	/* Jobs sharing a node have different ids; steps of one job different step ids. */
	return 20000 + (int)((job_id * 8 + step_id % 8) % 12768);
}

static int parse_count(const char *name, const char *s, long *ret, struct ll_error *err)
{
	char *end;
	long v;

	errno = 0;
	v = s ? strtol(s, &end, 10) : -1;
	if (!s || errno || end == s || (*end && *end != '(') || v < 0)
		return ll_error_set(err, -EINVAL, "%s='%s' is not a number", name, s ? s : "");
	*ret = v;
	return 0;
}

int agree_slurm_run(const struct ll_agree_options *o, struct ll_cluster *ret, struct ll_error *err)
{
	char *const *env = o->environ;
	const char *nodelist, *nnodes_s, *nnodes_name = "SLURM_STEP_NUM_NODES", *nodeid_s, *tasks_s, *job_s, *step_s;
	long nnodes = 0, nodeid = 0, tasks = -1, job = 0, step = 0;
	char *first = NULL;
	struct addrinfo *ai = NULL;
	bool in_step;
	int r;

	/* In a step, the step's own nodes; in a batch script, the job's. */
	in_step = agree_getenv(env, "SLURM_STEP_ID") != NULL;
	nodelist = agree_getenv(env, "SLURM_STEP_NODELIST");
	if (!nodelist)
		nodelist = agree_getenv(env, "SLURM_JOB_NODELIST");
	nnodes_s = agree_getenv(env, "SLURM_STEP_NUM_NODES");
	if (!nnodes_s) {
		nnodes_s = agree_getenv(env, "SLURM_NNODES");
		nnodes_name = "SLURM_NNODES";
	}
	nodeid_s = agree_getenv(env, "SLURM_NODEID");
	tasks_s = agree_getenv(env, "SLURM_STEP_NUM_TASKS");
	job_s = agree_getenv(env, "SLURM_JOB_ID");
	step_s = agree_getenv(env, "SLURM_STEP_ID");

	if (!nodelist)
		return ll_error_set(err, -EINVAL, "SLURM_JOB_NODELIST is not set: not inside a Slurm job");
	if ((r = parse_count(nnodes_name, nnodes_s, &nnodes, err)) < 0 ||
	    (r = parse_count("SLURM_NODEID", nodeid_s ? nodeid_s : "0", &nodeid, err)) < 0 ||
	    (r = parse_count("SLURM_JOB_ID", job_s, &job, err)) < 0)
		return r;
	if (step_s && parse_count("SLURM_STEP_ID", step_s, &step, NULL) < 0)
		step = 0; /* "batch", "extern": not a number, and not a step of ours */
	if (tasks_s && parse_count("SLURM_STEP_NUM_TASKS", tasks_s, &tasks, err) < 0)
		return -EINVAL;
	if (nnodes < 1 || nodeid >= nnodes)
		return ll_error_set(err, -EINVAL, "SLURM_NODEID=%ld is outside the job's %ld nodes", nodeid, nnodes);
	if (in_step && tasks > nnodes) {
		r = ll_error_set(err, -EINVAL,
				 "%ld llmlaunch processes on %ld node%s: llmlaunch runs once per node and starts that "
				 "node's workers itself",
				 tasks, nnodes, nnodes == 1 ? "" : "s");
		ll_error_hint(err, "srun -N %ld --ntasks-per-node=1 ...", nnodes);
		return r;
	}

	r = ll_hostlist_first(nodelist, &first, err);
	if (r < 0)
		return r;

	ret->backend = LL_AGREE_SLURM;
	ret->nnodes = (int)nnodes;
	ret->node_rank = (int)nodeid;
	ret->master_addr = first;
	ret->master_port = agree_slurm_port((unsigned long)job, (unsigned long)step);
	ret->checked = false;

	if (nnodes > 1)
		agree_note(ret, "no homogeneity check without PMIx: run 'srun --mpi=pmix' to have every node "
				"compare GPUs, RDMA ports and addresses before launching");
	if (!in_step && nnodes > 1)
		agree_note(ret, "running in the batch script, on the first node only: start one llmlaunch per node "
				"with 'srun --ntasks-per-node=1 llmlaunch ...'");
	if (getaddrinfo(first, NULL, NULL, &ai) != 0)
		agree_note(ret, "the master host '%s' (first of %s) does not resolve here", first, nodelist);
	else
		freeaddrinfo(ai);
	/* Only node 0 listens on the port: only it can check that the port is free. */
	if (nodeid == 0) {
		int port = ret->master_port;
		int fd = -1;
		struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
		char service[16];

		snprintf(service, sizeof(service), "%d", port);
		if (getaddrinfo(NULL, service, &hints, &ai) == 0) {
			bool busy = false;
			for (struct addrinfo *a = ai; a; a = a->ai_next) {
				int one = 1;
				fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
				if (fd < 0)
					continue;
				setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
				if (bind(fd, a->ai_addr, a->ai_addrlen) < 0 && errno == EADDRINUSE)
					busy = true;
				close(fd);
			}
			freeaddrinfo(ai);
			if (busy) {
				r = ll_error_set(err, -EADDRINUSE,
						 "master port %d (derived from job %ld step %ld) is in use on this node", port,
						 job, step);
				ll_error_hint(err, "pass --master-port PORT (the same on every node), or use srun --mpi=pmix, "
						   "where node 0 picks a free port");
				return r;
			}
		}
	}
	return 0;
}
