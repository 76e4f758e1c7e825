/* The engines' contracts: what each engine puts in a pod's or node's environment to
 * tell it its place in the job, read without any I/O (llmlaunch/agree-contract.h).
 *
 * Where upstream sets each variable (read there, not guessed from a pod at hand):
 *
 *   Kubeflow Trainer v2 (TrainJob)   kubeflow/trainer pkg/runtime/framework/plugins/torch/torch.go
 *                                    and pkg/constants/constants.go (a55f03a, 2025-02):
 *     PET_NNODES          the TrainJob's numNodes
 *     PET_NPROC_PER_NODE  numProcPerNode, default "auto" (torchrun's words: auto, gpu, cpu, or N)
 *     PET_NODE_RANK       the Job's completion index (downward API, batch.kubernetes.io/job-completion-index)
 *     PET_MASTER_ADDR     "<trainjob>-trainer-node-0-0.<trainjob>": node 0's record in the headless service
 *     PET_MASTER_PORT     29500 (ContainerTrainerPort)
 *   PyTorchJob (training-operator v1) pkg/controller.v1/pytorch/envvar.go setPodEnv, master.go:
 *     MASTER_ADDR "<job>-master-0", MASTER_PORT the master container's pytorchjob-port,
 *     RANK 0 for the master, a worker's index + 1 (a node's rank: one pod per node);
 *     WORLD_SIZE up to v1.6.0 the replicas (nodes); from v1.7.0 replicas x nprocPerNode,
 *     nprocPerNode counting 1 when unset or not a number, and PET_NNODES (not elastic),
 *     PET_NODE_RANK, PET_MASTER_ADDR/PORT and PET_NPROC_PER_NODE (when set) beside it.
 *   LeaderWorkerSet                  kubernetes-sigs/lws api/leaderworkerset/v1/leaderworkerset_types.go
 *     LWS_LEADER_ADDRESS  the leader pod's name in the group's headless service
 *     LWS_GROUP_SIZE      pods in the group (leader included)
 *     LWS_WORKER_INDEX    0 for the leader, 1..size-1 for workers
 *   SkyPilot                         skypilot-org/skypilot sky/skylet/constants.py
 *     SKYPILOT_NODE_IPS   every node's IP, one a line, the head's first
 *     SKYPILOT_NODE_RANK, SKYPILOT_NUM_NODES, SKYPILOT_NUM_GPUS_PER_NODE
 *   JobSet                           an Indexed Job's JOB_COMPLETION_INDEX (Kubernetes batch/v1); the
 *     leader's address and the node count are the user's: MASTER_ADDR and NNODES in the template
 *   manual                           MASTER_ADDR, MASTER_PORT, NNODES, NODE_RANK, as torchrun's options
 *
 * More than one may be given at once (a PyTorchJob of v1.7 sets PET_* beside its own;
 * a TrainJob's pods are an Indexed Job's): the first complete one in the order of
 * enum ll_contract_engine wins, and every variable of the others is checked against
 * it. Any disagreement, or a contract given in part, is the user's to fix: a job
 * that silently trains on one node per pod is the failure this prevents. */
#include "llmlaunch/agree-contract.h"
#include "llmlaunch/env.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define MAX_NODES (1L << 20)

struct def {
	const char *name, *why;
	const char *nnodes, *rank, *addr, *port, *nproc;
	const char *m_nnodes, *m_rank, *m_addr, *m_port, *m_nproc;
};

static const struct def defs[LL_CONTRACT_N] = {
	[LL_CONTRACT_PYTORCHJOB] = {
		"pytorchjob", "WORLD_SIZE and RANK are set (a Kubeflow PyTorchJob, training-operator v1)",
		"WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT", NULL,
		"nodes (to v1.6), nodes x nprocPerNode (v1.7 on): training-operator pkg/controller.v1/pytorch/envvar.go",
		"0 the master, worker index + 1: training-operator envvar.go",
		"<job>-master-0: training-operator pkg/controller.v1/pytorch/master.go",
		"the master's pytorchjob-port: training-operator master.go", NULL,
	},
	[LL_CONTRACT_TRAINJOB] = {
		"trainjob", "PET_NNODES and PET_NODE_RANK are set (Kubeflow Trainer v2's TrainJob, torchrun's own variables)",
		"PET_NNODES", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT", "PET_NPROC_PER_NODE",
		"numNodes: kubeflow/trainer pkg/runtime/framework/plugins/torch/torch.go",
		"the Job completion index: kubeflow/trainer torch.go",
		"<trainjob>-trainer-node-0-0.<trainjob>: kubeflow/trainer torch.go",
		"29500: kubeflow/trainer pkg/constants/constants.go",
		"numProcPerNode (auto, gpu, cpu or N): kubeflow/trainer torch.go",
	},
	[LL_CONTRACT_LWS] = {
		"lws", "LWS_GROUP_SIZE and LWS_WORKER_INDEX are set (a LeaderWorkerSet group)",
		"LWS_GROUP_SIZE", "LWS_WORKER_INDEX", "LWS_LEADER_ADDRESS", NULL, NULL,
		"pods in the group: kubernetes-sigs/lws api/leaderworkerset/v1/leaderworkerset_types.go",
		"0 the leader, 1.. workers: lws leaderworkerset_types.go",
		"the leader pod's name in the headless service: lws leaderworkerset_types.go", NULL, NULL,
	},
	[LL_CONTRACT_SKYPILOT] = {
		"skypilot", "SKYPILOT_NODE_RANK and SKYPILOT_NODE_IPS are set (a SkyPilot task)",
		"SKYPILOT_NUM_NODES", "SKYPILOT_NODE_RANK", "SKYPILOT_NODE_IPS", NULL, "SKYPILOT_NUM_GPUS_PER_NODE",
		"nodes of the task: skypilot sky/skylet/constants.py",
		"this node's rank, the head 0: skypilot constants.py",
		"every node's IP, one a line, the head first: skypilot constants.py", NULL,
		"GPUs a node: skypilot constants.py",
	},
	[LL_CONTRACT_JOBSET] = {
		"jobset", "JOB_COMPLETION_INDEX is set with MASTER_ADDR or NNODES (a JobSet's Indexed Job)",
		"NNODES", "JOB_COMPLETION_INDEX", "MASTER_ADDR", "MASTER_PORT", NULL,
		"the Job's parallelism, set in the pod template", "the Indexed Job's completion index: Kubernetes batch/v1",
		"the leader pod's name, set in the pod template", "set in the pod template", NULL,
	},
	[LL_CONTRACT_MANUAL] = {
		"manual", "NNODES or NODE_RANK is set (the manual contract: MASTER_ADDR, MASTER_PORT, NNODES, NODE_RANK)",
		"NNODES", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT", NULL,
		"nodes in the job, as torchrun's --nnodes", "this node's rank, as --node_rank",
		"node 0's name or address, as --master_addr", "the rendezvous port, as --master_port", NULL,
	},
};

const char *ll_contract_engine_name(enum ll_contract_engine e)
{
	return (unsigned)e < LL_CONTRACT_N ? defs[e].name : "?";
}

const char *ll_contract_engine_why(enum ll_contract_engine e)
{
	return (unsigned)e < LL_CONTRACT_N ? defs[e].why : "?";
}

int ll_contract_engine_of(const char *name)
{
	for (int e = 0; name && e < LL_CONTRACT_N; e++)
		if (strcmp(defs[e].name, name) == 0)
			return e;
	return -1;
}

void ll_contract_release(struct ll_contract *c)
{
	if (!c)
		return;
	free(c->master_host);
	ll_strv_free(c->node_names, c->n_node_names);
	for (size_t i = 0; i < c->n_vars; i++)
		free(c->vars[i].value);
	free(c->vars);
	free(c->agreeing);
	memset(c, 0, sizeof(*c));
}

/* One engine's reading, given or not. */
struct reading {
	bool given, complete;
	long nnodes, rank, nproc;   /* -1: not given */
	int port;                   /* 0: not given */
	char *host;
	const char *missing[4];
	size_t n_missing;
	struct ll_contract c;       /* vars and names as read */
};

static void reading_release(struct reading *r)
{
	free(r->host);
	ll_contract_release(&r->c);
}

static void add_var(struct ll_contract *c, const char *name, const char *value, const char *meaning)
{
	struct ll_contract_var *v = ll_array_push(&c->vars, &c->n_vars, sizeof(*v));

	v->name = name;
	v->value = ll_strdup(value);
	v->meaning = meaning;
}

static int not_number(struct ll_error *err, const char *var, const char *value, const char *expected)
{
	ll_error_set(err, -EINVAL, "%s='%s' is not %s", var, value, expected);
	err->usage = true;
	return -EINVAL;
}

/* A node count: "N", or torchrun's "MIN:MAX" when MIN == MAX; an elastic range is not
 * a world llmlaunch can agree. */
static int parse_nnodes(const char *var, const char *v, long *ret, struct ll_error *err)
{
	const char *colon = strchr(v, ':');
	_cleanup_free_ char *min = NULL;
	long a, b;

	if (!colon)
		return ll_parse_long(v, 1, MAX_NODES, ret) < 0 ? not_number(err, var, v, "a node count (1 or more)") : 0;
	min = ll_strndup(v, (size_t)(colon - v));
	if (ll_parse_long(min, 1, MAX_NODES, &a) < 0 || ll_parse_long(colon + 1, 1, MAX_NODES, &b) < 0)
		return not_number(err, var, v, "a node count or MIN:MAX");
	if (a != b) {
		ll_error_set(err, -EINVAL, "%s='%s' is an elastic range: llmlaunch agrees a fixed world before the job starts",
			     var, v);
		ll_error_hint(err, "give a fixed node count (minNodes = maxNodes), or run torchrun's elastic rendezvous "
				   "yourself");
		err->usage = true;
		return -EINVAL;
	}
	*ret = a;
	return 0;
}

static int parse_nproc(const char *var, const char *v, long *ret, struct ll_error *err)
{
	static const char *const words[] = { "auto", "gpu", "cpu", "xpu" };

	for (size_t i = 0; i < LL_ARRAY_SIZE(words); i++)
		if (strcmp(v, words[i]) == 0) {
			*ret = 0;
			return 0;
		}
	/* SkyPilot says 0 GPUs on a CPU cluster: no count, as "auto". */
	return ll_parse_long(v, 0, 1 << 16, ret) < 0 ? not_number(err, var, v, "auto, gpu, cpu or a process count") : 0;
}

static const char *get(char *const *env, const char *name)
{
	return name ? ll_env_get_nonempty(env, name) : NULL;
}

/* Whether this engine's contract is in the environment at all: a variable that
 * places the node (a count or a rank), not an address alone (MASTER_ADDR exported
 * for one node is no job). */
static bool given(char *const *env, enum ll_contract_engine e)
{
	const struct def *d = &defs[e];

	switch (e) {
	case LL_CONTRACT_JOBSET:
		/* Any Indexed Job has an index; only with a leader or a count is it a world. */
		return get(env, d->rank) && (get(env, "MASTER_ADDR") || get(env, "NNODES"));
	case LL_CONTRACT_SKYPILOT:
		return get(env, d->rank) || get(env, d->addr) || get(env, d->nnodes);
	case LL_CONTRACT_TRAINJOB:
	case LL_CONTRACT_LWS:
		return get(env, d->nnodes) || get(env, d->rank) || get(env, d->addr);
	default:
		return get(env, d->nnodes) || get(env, d->rank);
	}
}

static int read_engine(char *const *env, enum ll_contract_engine e, struct reading *r, struct ll_error *err)
{
	const struct def *d = &defs[e];
	const char *nn = get(env, d->nnodes), *rk = get(env, d->rank), *ad = get(env, d->addr), *pt = get(env, d->port);
	const char *np = get(env, d->nproc);
	int r_ = 0;

	memset(r, 0, sizeof(*r));
	r->nnodes = r->rank = r->nproc = -1;
	r->c.engine = e;
	r->c.name = d->name;
	if (!given(env, e))
		return 0;
	r->given = true;
	/* PyTorchJob v1.7 on: WORLD_SIZE counts processes when nprocPerNode is a number. */
	if (e == LL_CONTRACT_PYTORCHJOB)
		np = get(env, "PET_NPROC_PER_NODE");
	if (nn) {
		add_var(&r->c, d->nnodes, nn, d->m_nnodes);
		if ((r_ = parse_nnodes(d->nnodes, nn, &r->nnodes, err)) < 0)
			return r_;
	}
	if (rk) {
		add_var(&r->c, d->rank, rk, d->m_rank);
		if (ll_parse_long(rk, 0, MAX_NODES - 1, &r->rank) < 0)
			return not_number(err, d->rank, rk, "a node rank (0 or more)");
	}
	if (ad) {
		add_var(&r->c, d->addr, ad, d->m_addr);
		if (e == LL_CONTRACT_SKYPILOT) {
			/* One IP a line; blank lines and spaces around are not addresses. */
			_cleanup_free_ char *copy = ll_strdup(ad);
			char *save = NULL;

			for (char *t = strtok_r(copy, "\n \t\r", &save); t; t = strtok_r(NULL, "\n \t\r", &save))
				*(char **)ll_array_push(&r->c.node_names, &r->c.n_node_names, sizeof(char *)) = ll_strdup(t);
			if (r->c.n_node_names)
				r->host = ll_strdup(r->c.node_names[0]);
		} else {
			r->host = ll_strdup(ad);
		}
	}
	if (pt) {
		long port;

		add_var(&r->c, d->port, pt, d->m_port);
		if (ll_parse_long(pt, 1, 65535, &port) < 0)
			return not_number(err, d->port, pt, "a TCP port (1-65535)");
		r->port = (int)port;
	}
	if (np) {
		add_var(&r->c, e == LL_CONTRACT_PYTORCHJOB ? "PET_NPROC_PER_NODE" : d->nproc, np,
			e == LL_CONTRACT_PYTORCHJOB ? "nprocPerNode: training-operator envvar.go (v1.7 on)" : d->m_nproc);
		if ((r_ = parse_nproc(e == LL_CONTRACT_PYTORCHJOB ? "PET_NPROC_PER_NODE" : d->nproc, np, &r->nproc, err)) < 0)
			return r_;
	}
	if (e == LL_CONTRACT_PYTORCHJOB && r->nnodes > 0) {
		long per = r->nproc > 0 ? r->nproc : 1;

		if (r->nnodes % per != 0) {
			ll_error_set(err, -EINVAL, "WORLD_SIZE=%s is not a multiple of PET_NPROC_PER_NODE=%s: not a PyTorchJob's "
						   "world of nodes x processes", nn, np);
			err->usage = true;
			return -EINVAL;
		}
		r->nnodes /= per;
	}
	if (e == LL_CONTRACT_SKYPILOT && r->c.n_node_names) {
		if (r->nnodes > 0 && (size_t)r->nnodes != r->c.n_node_names) {
			ll_error_set(err, -EINVAL, "SKYPILOT_NUM_NODES=%ld but SKYPILOT_NODE_IPS lists %zu addresses", r->nnodes,
				     r->c.n_node_names);
			err->usage = true;
			return -EINVAL;
		}
		if (r->nnodes < 0)
			r->nnodes = (long)r->c.n_node_names;
	}
	if (r->nnodes < 0)
		r->missing[r->n_missing++] = e == LL_CONTRACT_SKYPILOT ? "SKYPILOT_NUM_NODES or SKYPILOT_NODE_IPS" : d->nnodes;
	if (r->rank < 0)
		r->missing[r->n_missing++] = d->rank;
	if (!r->host)
		r->missing[r->n_missing++] = d->addr;
	r->complete = r->n_missing == 0;
	return 0;
}

/* "PET_NNODES=4" for the message naming a value. */
static const char *var_text(const struct reading *r, const char *name, char *buf, size_t len)
{
	for (size_t i = 0; i < r->c.n_vars; i++)
		if (strcmp(r->c.vars[i].name, name) == 0) {
			snprintf(buf, len, "%s=%s", name, r->c.vars[i].value);
			return buf;
		}
	snprintf(buf, len, "%s", name);
	return buf;
}

static int disagree(struct ll_error *err, const struct reading *a, const char *va, const struct reading *b,
		    const char *vb, const char *what)
{
	char x[256], y[256];

	ll_error_set(err, -EINVAL, "%s (%s) and %s (%s) disagree on %s: two engines' contracts in one environment",
		     var_text(a, va, x, sizeof(x)), a->c.name, var_text(b, vb, y, sizeof(y)), b->c.name, what);
	ll_error_hint(err, "start llmlaunch with one engine's variables (unset the others, e.g. env -u %s ...)", vb);
	err->usage = true;
	return -EINVAL;
}

static bool numeric_host(const char *h)
{
	return h && (strspn(h, "0123456789.") == strlen(h) || strchr(h, ':'));
}

/* Everything `o` says must be what the winner `w` says. Names of node 0 are compared
 * only as names or only as addresses: one engine's name and another's address for
 * the same pod are not a contradiction anyone can see without resolving. */
static int cross_check(const struct reading *w, const struct reading *o, struct ll_error *err)
{
	const struct def *dw = &defs[w->c.engine], *d = &defs[o->c.engine];

	if (o->nnodes > 0 && o->nnodes != w->nnodes)
		return disagree(err, w, dw->nnodes, o, d->nnodes, "the node count");
	if (o->rank >= 0 && o->rank != w->rank)
		return disagree(err, w, dw->rank, o, d->rank, "this node's rank");
	if (o->port > 0 && w->port > 0 && o->port != w->port)
		return disagree(err, w, dw->port, o, d->port, "the master port");
	if (o->host && numeric_host(o->host) == numeric_host(w->host) && strcasecmp(o->host, w->host) != 0)
		return disagree(err, w, dw->addr, o, d->addr, "node 0's address");
	return 0;
}

static int half_given(const struct reading *r, struct ll_error *err)
{
	struct ll_buf set, missing;

	ll_buf_init(&set);
	ll_buf_init(&missing);
	for (size_t i = 0; i < r->c.n_vars; i++)
		ll_buf_addf(&set, "%s%s", i ? ", " : "", r->c.vars[i].name);
	for (size_t i = 0; i < r->n_missing; i++)
		ll_buf_addf(&missing, "%s%s", i ? ", " : "", r->missing[i]);
	ll_error_set(err, -EINVAL, "the %s contract is given only in part: %s %s set, %s %s not", r->c.name, set.s,
		     r->c.n_vars == 1 ? "is" : "are", missing.s, r->n_missing == 1 ? "is" : "are");
	ll_error_hint(err, "set %s too (docs/kubernetes.md), or unset %s for a single-node run", missing.s, set.s);
	ll_buf_release(&set);
	ll_buf_release(&missing);
	err->usage = true;
	return -EINVAL;
}

int ll_contract_read(char *const *env, struct ll_contract *ret, struct ll_error *err)
{
	struct reading rs[LL_CONTRACT_N];
	struct reading *w = NULL;
	struct ll_buf agreeing;
	int r = 0;
	size_t n_given = 0;

	memset(rs, 0, sizeof(rs));
	env = ll_env_or_process(env);
	for (int e = 0; e < LL_CONTRACT_N && r == 0; e++) {
		r = read_engine(env, (enum ll_contract_engine)e, &rs[e], err);
		n_given += rs[e].given;
		if (r == 0 && !w && rs[e].complete)
			w = &rs[e];
	}
	if (r < 0 || n_given == 0)
		goto out;
	if (!w) {
		for (int e = 0; e < LL_CONTRACT_N && r == 0; e++)
			if (rs[e].given)
				r = half_given(&rs[e], err);
		goto out;
	}
	if (w->rank >= w->nnodes) {
		char x[256], y[256];

		r = ll_error_set(err, -EINVAL, "%s is outside the world of %s (node ranks 0 to %ld)",
				 var_text(w, defs[w->c.engine].rank, x, sizeof(x)), var_text(w, defs[w->c.engine].nnodes, y, sizeof(y)),
				 w->nnodes - 1);
		err->usage = true;
		goto out;
	}
	ll_buf_init(&agreeing);
	for (int e = 0; e < LL_CONTRACT_N && r == 0; e++) {
		if (!rs[e].given || &rs[e] == w)
			continue;
		r = cross_check(w, &rs[e], err);
		ll_buf_addf(&agreeing, "%s%s", agreeing.len ? ", " : "", rs[e].c.name);
	}
	if (r == 0) {
		/* The winner's variables, then what the others said too (explain shows all). */
		enum ll_contract_engine we = w->c.engine;

		*ret = w->c;
		memset(&w->c, 0, sizeof(w->c));
		w->c.engine = we;
		for (int e = 0; e < LL_CONTRACT_N; e++)
			for (size_t i = 0; rs[e].given && &rs[e] != w && i < rs[e].c.n_vars; i++)
				add_var(ret, rs[e].c.vars[i].name, rs[e].c.vars[i].value, rs[e].c.vars[i].meaning);
		ret->nnodes = w->nnodes;
		ret->node_rank = w->rank;
		ret->master_host = LL_TAKE(w->host);
		ret->master_port = w->port;
		ret->nproc_per_node = w->nproc > 0 ? w->nproc : 0;
		ret->nnodes_var = defs[w->c.engine].nnodes;
		ret->rank_var = defs[w->c.engine].rank;
		ret->addr_var = defs[w->c.engine].addr;
		ret->port_var = w->port > 0 ? defs[w->c.engine].port : NULL;
		ret->nproc_var = w->nproc > 0 ? (w->c.engine == LL_CONTRACT_PYTORCHJOB ? "PET_NPROC_PER_NODE"
										 : defs[w->c.engine].nproc)
					      : NULL;
		/* An engine that names no port: another contract's, else the manual MASTER_PORT. */
		for (int e = 0; e < LL_CONTRACT_N && !ret->master_port; e++)
			if (rs[e].given && rs[e].port > 0) {
				ret->master_port = rs[e].port;
				ret->port_var = defs[e].port;
			}
		if (!ret->master_port && get(env, "MASTER_PORT")) {
			long port;
			const char *v = get(env, "MASTER_PORT");

			if (ll_parse_long(v, 1, 65535, &port) < 0)
				r = not_number(err, "MASTER_PORT", v, "a TCP port (1-65535)");
			ret->master_port = (int)port;
			ret->port_var = "MASTER_PORT";
			add_var(ret, "MASTER_PORT", v, defs[LL_CONTRACT_MANUAL].m_port);
		}
		ret->agreeing = agreeing.len ? ll_strdup(agreeing.s) : NULL;
		r = r < 0 ? r : 1;
		if (r < 0)
			ll_contract_release(ret);
	}
	ll_buf_release(&agreeing);
out:
	for (int e = 0; e < LL_CONTRACT_N; e++)
		reading_release(&rs[e]);
	return r;
}
