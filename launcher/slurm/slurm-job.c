/* The Slurm job's own variables, read in one place for every path that needs them
 * (run's Slurm backend, env, explain, the TaskProlog), so that one job never gets two
 * answers. Names and meanings: Slurm's srun(1) and sbatch(1), "OUTPUT ENVIRONMENT
 * VARIABLES": SLURM_STEP_NUM_NODES is the step's node count, SLURM_JOB_NUM_NODES the
 * allocation's, SLURM_NNODES the older name of the latter. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "llmlaunch/env.h"
#include "llmlaunch/slurm.h"

static int parse_number(const char *name, const char *s, long *ret, struct ll_error *err)
{
	char *end;
	long v;

	errno = 0;
	v = s ? strtol(s, &end, 10) : -1;
	/* "4(x2)" is Slurm's compressed count form: the leading number is the count. */
	if (!s || errno || end == s || (*end && *end != '(') || v < 0)
		return ll_error_set(err, -EINVAL, "%s='%s' is not a number", name, s ? s : "");
	*ret = v;
	return 0;
}

bool ll_slurm_in_job(char *const *env)
{
	return ll_env_get_nonempty(env, "SLURM_JOB_ID") && ll_env_get_nonempty(env, "SLURM_JOB_NODELIST");
}

int ll_slurm_job_read(char *const *env, struct ll_slurm_job *ret, struct ll_error *err)
{
	struct ll_slurm_job j = { .job_id = -1, .step_id = -1, .step_tasks = -1 };
	const char *s;
	int r;

	/* In a step, the step's own nodes; in a batch script, the job's. */
	j.in_step = ll_env_get_nonempty(env, "SLURM_STEP_ID") != NULL;
	j.nodelist = ll_env_get_nonempty(env, "SLURM_STEP_NODELIST");
	if (!j.nodelist)
		j.nodelist = ll_env_get_nonempty(env, "SLURM_JOB_NODELIST");

	j.nnodes_name = "SLURM_STEP_NUM_NODES";
	s = ll_env_get_nonempty(env, j.nnodes_name);
	if (!s) {
		j.nnodes_name = "SLURM_JOB_NUM_NODES";
		s = ll_env_get_nonempty(env, j.nnodes_name);
	}
	if (!s) {
		j.nnodes_name = "SLURM_NNODES";
		s = ll_env_get_nonempty(env, j.nnodes_name);
	}
	if (!s)
		return ll_error_set(err, -ENOENT,
				    "none of SLURM_STEP_NUM_NODES, SLURM_JOB_NUM_NODES, SLURM_NNODES is set: "
				    "the job's node count is unknown");
	if ((r = parse_number(j.nnodes_name, s, &j.nnodes, err)) < 0)
		return r;
	s = ll_env_get_nonempty(env, "SLURM_NODEID");
	if ((r = parse_number("SLURM_NODEID", s ? s : "0", &j.node_id, err)) < 0)
		return r;
	s = ll_env_get_nonempty(env, "SLURM_JOB_ID");
	if (s && (r = parse_number("SLURM_JOB_ID", s, &j.job_id, err)) < 0)
		return r;
	s = ll_env_get_nonempty(env, "SLURM_STEP_ID");
	/* "batch", "extern": not a number, and not a step of ours. */
	if (s && parse_number("SLURM_STEP_ID", s, &j.step_id, NULL) < 0)
		j.step_id = -1;
	s = ll_env_get_nonempty(env, "SLURM_STEP_NUM_TASKS");
	if (s && (r = parse_number("SLURM_STEP_NUM_TASKS", s, &j.step_tasks, err)) < 0)
		return r;
	if (j.nnodes < 1 || j.node_id >= j.nnodes)
		return ll_error_set(err, -EINVAL, "SLURM_NODEID=%ld is outside the job's %ld nodes (%s)", j.node_id,
				    j.nnodes, j.nnodes_name);
	j.topology_addr = ll_env_get_nonempty(env, "SLURM_TOPOLOGY_ADDR");
	*ret = j;
	return 0;
}
