/* The engines' contracts (launcher/agree/agree-contract.c): Kubernetes operators,
 * SkyPilot and a documented manual form hand every node its place in the job through
 * environment variables. Reading them is pure; the agreement's "contract" backend
 * then resolves node 0, proves every node reaches it, and writes the world into the
 * plan (docs/multinode.md, docs/kubernetes.md). */
#ifndef LLMLAUNCH_AGREE_CONTRACT_H
#define LLMLAUNCH_AGREE_CONTRACT_H

#include <stdbool.h>
#include <stddef.h>
#include "llmlaunch/util.h"

enum ll_contract_engine {
	LL_CONTRACT_PYTORCHJOB,     /* training-operator v1: MASTER_ADDR MASTER_PORT WORLD_SIZE RANK */
	LL_CONTRACT_TRAINJOB,       /* Kubeflow Trainer v2, torchrun's own PET_* */
	LL_CONTRACT_LWS,            /* LeaderWorkerSet: LWS_LEADER_ADDRESS LWS_GROUP_SIZE LWS_WORKER_INDEX */
	LL_CONTRACT_SKYPILOT,       /* SKYPILOT_NODE_IPS SKYPILOT_NODE_RANK SKYPILOT_NUM_NODES */
	LL_CONTRACT_JOBSET,         /* JOB_COMPLETION_INDEX with MASTER_ADDR and NNODES */
	LL_CONTRACT_MANUAL,         /* MASTER_ADDR MASTER_PORT NNODES NODE_RANK */
	LL_CONTRACT_N
};

/* One variable the contract read, as explain shows it. */
struct ll_contract_var {
	const char *name;           /* static */
	char *value;                /* copied */
	const char *meaning;        /* static: what the engine puts there and where upstream sets it */
};

struct ll_contract {
	enum ll_contract_engine engine;
	const char *name;           /* "trainjob" (static), the plan's "agreement" */
	long nnodes, node_rank;
	char *master_host;          /* node 0's name or address, as the engine gave it */
	int master_port;            /* 0: the engine names none */
	long nproc_per_node;        /* > 0: the engine's number of processes per node; 0: none or a word */
	const char *nnodes_var, *rank_var, *addr_var, *port_var, *nproc_var; /* which variable gave each */
	char **node_names;          /* SkyPilot: every node's address by rank; else NULL */
	size_t n_node_names;
	struct ll_contract_var *vars; /* every variable read, the winner's first, then the others that agreed */
	size_t n_vars;
	char *agreeing;             /* "pytorchjob, jobset": other contracts given that agree, NULL none */
};

void ll_contract_release(struct ll_contract *c);

/* The engine's name ("trainjob") and a static sentence saying what it is and which
 * variables showed it. */
const char *ll_contract_engine_name(enum ll_contract_engine e);
const char *ll_contract_engine_why(enum ll_contract_engine e);
/* The engine of a plan's "agreement" value; -1 when it names none. */
int ll_contract_engine_of(const char *name);

/* Read every engine's contract in `env` (NULL: the process's). 1 with *ret filled
 * (the contract that wins: the first complete one in enum order, every other
 * variable given checked against it); 0 when no engine's contract is given;
 * -EINVAL, a usage error naming the variables, when a contract is given only in part,
 * two disagree, a value is not a number, the node rank is outside the world, or the
 * node count is an elastic range. */
int ll_contract_read(char *const *env, struct ll_contract *ret, struct ll_error *err);

/* The port a contract that names none uses: torchrun's own default. */
#define LL_CONTRACT_DEFAULT_PORT 29500

#endif
