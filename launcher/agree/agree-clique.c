/* NVLink cliques across nodes (GB200 NVL72 and its kind): which clique a node is in,
 * its one-token form in the per-node record, and the cluster-wide part of the
 * decision: the NVLink domain size and the verdicts on cliques and fabric states.
 *
 * NCCL (2.30, src/mnnvl.cc ncclMnnvlCheck) enables multi-node NVLink for a
 * communicator only when every rank's GPU finished fabric registration (state
 * COMPLETED) with a non-zero cluster UUID; ranks with the same cluster UUID and
 * clique id then share NVLink (src/graph/paths.cc ncclTopoCheckMNNVL). A node of a
 * job whose GPUs did not complete registration therefore turns multi-node NVLink
 * off for all nodes, and a clique only partly in the job gives fewer GPUs on NVLink
 * there than in the other cliques. Pure: no I/O. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmlaunch/env.h"
#include "agree-internal.h"

void ll_agree_clique_release(struct ll_agree_clique *c)
{
	free(c->key);
	c->key = NULL;
}

static bool uuid_is_zero(const char *uuid)
{
	return strspn(uuid, "0-") == strlen(uuid);
}

/* Slurm's topology/block gives a step SLURM_TOPOLOGY_ADDR "BLOCK.NODE" with the
 * pattern "block.node" (src/plugins/topology/block, topology_p_get_node_addr). */
static char *slurm_block(char *const *env)
{
	const char *pattern = ll_env_get(env, "SLURM_TOPOLOGY_ADDR_PATTERN");
	const char *addr = ll_env_get(env, "SLURM_TOPOLOGY_ADDR");
	const char *dot = addr ? strchr(addr, '.') : NULL;

	if (!ll_streq(pattern, "block.node") || !dot || dot == addr)
		return NULL;
	return ll_strndup(addr, (size_t)(dot - addr));
}

void ll_agree_clique_of(const struct ll_facts *f, const struct ll_plan *plan, char *const *env,
			struct ll_agree_clique *ret)
{
	const char *gpus = plan ? ll_plan_value(plan, "LLMLAUNCH_GPUS_PER_NODE") : NULL;
	const struct ll_gpu_fabric_info *first = NULL;
	bool any = false, pending = false, failed = false;

	memset(ret, 0, sizeof(*ret));
	ret->gpus = gpus ? atoi(gpus) : f->gpus_known ? (int)f->n_gpus : -1;
	for (size_t i = 0; i < f->n_gpus; i++) {
		const struct ll_gpu_fabric_info *fi = &f->gpus[i].nvfabric;

		if (f->gpus[i].vendor != LL_GPU_VENDOR_NVIDIA || fi->state == LL_FABRIC_UNKNOWN ||
		    fi->state == LL_FABRIC_NOT_SUPPORTED)
			continue;
		any = true;
		if (fi->state != LL_FABRIC_COMPLETED)
			pending = true;
		else if (fi->status != 0)
			failed = true;
		else if (!first && fi->cluster_uuid && fi->clique_id >= 0)
			first = fi;
	}
	if (any && failed)
		ret->state = LL_CLIQUE_FAILED;
	else if (any && pending)
		ret->state = LL_CLIQUE_PENDING;
	else if (first && !uuid_is_zero(first->cluster_uuid)) {
		/* A zero cluster UUID is "no fabric information" to NCCL. */
		ret->state = LL_CLIQUE_READY;
		ret->key = ll_asprintf("%s/%ld", first->cluster_uuid, first->clique_id);
	}
	if (ret->state == LL_CLIQUE_NONE && (ret->key = slurm_block(env)))
		ret->state = LL_CLIQUE_BLOCK;
}

static const char state_codes[] = { [LL_CLIQUE_NONE] = '-', [LL_CLIQUE_READY] = 'R', [LL_CLIQUE_PENDING] = 'P',
				    [LL_CLIQUE_FAILED] = 'F', [LL_CLIQUE_BLOCK] = 'B' };

char *ll_agree_clique_format(const struct ll_agree_clique *c)
{
	if (c->state == LL_CLIQUE_NONE)
		return ll_strdup("-");
	return ll_asprintf("%c:%d:%s", state_codes[c->state], c->gpus, c->key && *c->key ? c->key : "-");
}

int ll_agree_clique_parse(const char *text, struct ll_agree_clique *ret)
{
	char code, key[256];
	int gpus, used = 0;

	ll_agree_clique_release(ret);
	memset(ret, 0, sizeof(*ret));
	if (!text || strcmp(text, "-") == 0)
		return 0;
	if (sscanf(text, "%c:%d:%255s%n", &code, &gpus, key, &used) != 3 || text[used] || gpus < -1)
		return -EINVAL;
	for (size_t s = LL_CLIQUE_READY; s < LL_ARRAY_SIZE(state_codes); s++)
		if (state_codes[s] == code) {
			ret->state = (enum ll_clique_state)s;
			ret->gpus = gpus;
			bool keyed = s == LL_CLIQUE_READY || s == LL_CLIQUE_BLOCK;
			if (keyed == (strcmp(key, "-") == 0))
				return -EINVAL;
			ret->key = keyed ? ll_strdup(key) : NULL;
			return 0;
		}
	return -EINVAL;
}

size_t agree_order_key(const struct ll_agree_node *n, const char **ret)
{
	if ((n->clique.state == LL_CLIQUE_READY || n->clique.state == LL_CLIQUE_BLOCK) && n->clique.key) {
		*ret = n->clique.key;
		return strlen(n->clique.key);
	}
	*ret = n->topology_addr ? n->topology_addr : "";
	return ll_topology_leaf_len(n->topology_addr);
}

/* ---- the cluster-wide decision ---- */

static bool in_clique(const struct ll_agree_node *n)
{
	return n->clique.state == LL_CLIQUE_READY || n->clique.state == LL_CLIQUE_BLOCK;
}

/* "NVLink clique 3" (NVML) or "Slurm block b1": how a message names one. */
static char *clique_label(const struct ll_agree_clique *c)
{
	const char *slash = c->key ? strrchr(c->key, '/') : NULL;

	if (c->state == LL_CLIQUE_BLOCK)
		return ll_asprintf("Slurm block %s", c->key);
	return ll_asprintf("NVLink clique %s of domain %.*s", slash ? slash + 1 : "?",
			   slash ? (int)(slash - c->key) : 0, c->key);
}

struct clique_group {
	const char *key;
	size_t *members;
	size_t n;
	long gpus;                  /* summed; -1 when a member's count is unknown */
};

struct key_ref {
	const char *key;
	size_t index;
};

/* By key, then launcher index: members come out ascending, as messages name them. */
static int cmp_key_ref(const void *a, const void *b)
{
	const struct key_ref *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return x->index < y->index ? -1 : x->index > y->index;
}

static void push_message(char ***list, size_t *n, char *msg)
{
	*(char **)ll_array_push(list, n, sizeof(char *)) = msg;
}

static const char *other_nodes(size_t n, char buf[48])
{
	if (n == 1)
		snprintf(buf, 48, "the other node");
	else
		snprintf(buf, 48, "the other %zu nodes", n);
	return buf;
}

/* Nodes whose registration did not complete, beside nodes in cliques. */
static void fabric_state_verdicts(const struct ll_agree_input *in, char *const *names, size_t n_in_cliques,
				  char ***soft, size_t *n_soft)
{
	static const struct {
		enum ll_clique_state state;
		const char *what;
	} kinds[] = {
		{ LL_CLIQUE_PENDING, "NVLink fabric registration not completed (in progress or not started)" },
		{ LL_CLIQUE_FAILED, "NVLink fabric registration failed" },
		{ LL_CLIQUE_NONE, "no NVLink fabric information (NVML gave none)" },
	};
	size_t *index = ll_calloc(in->n_nodes, sizeof(*index));

	for (size_t k = 0; k < LL_ARRAY_SIZE(kinds); k++) {
		size_t n = 0;
		struct ll_buf b;
		char o[48];

		for (size_t i = 0; i < in->n_nodes; i++)
			if (in->nodes[i].clique.state == kinds[k].state)
				index[n++] = i;
		if (!n)
			continue;
		ll_buf_init(&b);
		ll_agree_add_names(&b, names, index, n, n);
		ll_buf_addf(&b,
			    ": %s, %s completed it: NCCL uses multi-node NVLink only when every GPU of the job "
			    "has, so the whole job would use the network between nodes",
			    kinds[k].what, other_nodes(n_in_cliques, o));
		push_message(soft, n_soft, ll_buf_detach(&b));
		ll_buf_release(&b);
	}
	free(index);
}

int agree_cliques_decide(const struct ll_agree_input *in, struct ll_agree_result *res, struct ll_error *err)
{
	struct clique_group *groups = NULL;
	size_t n_groups = 0, n_in = 0, smallest = 0, largest = 0;
	/* The launcher's names, borrowed (ll_agree_add_names writes node#I for a missing one). */
	char **names = ll_calloc(in->n_nodes, sizeof(*names)), **soft = NULL;
	size_t n_soft = 0;
	bool gpus_known = true;
	int r = 0;

	for (size_t i = 0; i < in->n_nodes; i++) {
		names[i] = in->nodes[i].name;
		if (in_clique(&in->nodes[i]))
			n_in++;
	}
	if (n_in > 0) {
		/* Group by sorting: 10,000 nodes in 556 cliques must stay cheap. */
		struct key_ref *refs = ll_calloc(n_in, sizeof(*refs));
		size_t k = 0;

		for (size_t i = 0; i < in->n_nodes; i++)
			if (in_clique(&in->nodes[i]))
				refs[k++] = (struct key_ref){ in->nodes[i].clique.key, i };
		qsort(refs, n_in, sizeof(*refs), cmp_key_ref);
		for (size_t j = 0; j < n_in; j++) {
			const struct ll_agree_node *nd = &in->nodes[refs[j].index];
			struct clique_group *g;

			if (j == 0 || strcmp(refs[j].key, refs[j - 1].key) != 0) {
				g = ll_array_push(&groups, &n_groups, sizeof(*groups));
				g->key = refs[j].key;
			}
			g = &groups[n_groups - 1];
			*(size_t *)ll_array_push(&g->members, &g->n, sizeof(size_t)) = refs[j].index;
			if (nd->clique.gpus < 0)
				gpus_known = false;
			else
				g->gpus += nd->clique.gpus;
		}
		free(refs);
	}
	if (n_in == 0)
		goto out; /* no node is in a clique: the node's own NVLink domain stands */
	res->clique_order = true;
	if (n_in < in->n_nodes) {
		fabric_state_verdicts(in, names, n_in, &soft, &n_soft);
		goto verdict;
	}
	for (size_t k = 1; k < n_groups; k++) {
		if (groups[k].gpus < groups[smallest].gpus)
			smallest = k;
		if (groups[k].gpus > groups[largest].gpus)
			largest = k;
	}
	if (!gpus_known)
		goto verdict;
	/* A clique only partly in the job: fewer of its GPUs here than of the largest. */
	for (size_t k = 0; k < n_groups; k++) {
		struct ll_buf b;
		char *label;

		if (groups[k].gpus == groups[largest].gpus)
			continue;
		label = clique_label(&in->nodes[groups[k].members[0]].clique);
		ll_buf_init(&b);
		ll_agree_add_names(&b, names, groups[k].members, groups[k].n, groups[k].n);
		ll_buf_addf(&b,
			    ": only %ld GPUs of %s are in this job, %ld of %s: LLMLAUNCH_NVLINK_DOMAIN is %ld, the "
			    "smallest clique's; ask for whole cliques so that tensor parallelism of the largest size "
			    "stays on NVLink",
			    groups[k].gpus, label, groups[largest].gpus,
			    n_groups == 2 ? "the other clique" : "the largest", groups[smallest].gpus);
		free(label);
		push_message(&soft, &n_soft, ll_buf_detach(&b));
		ll_buf_release(&b);
	}
	res->nvlink_domain = (int)groups[smallest].gpus;
	{
		char *label = clique_label(&in->nodes[groups[smallest].members[0]].clique);
		res->nvlink_domain_reason =
			n_groups == 1 ? ll_asprintf("GPUs of the job's one %s (%zu node%s): multi-node NVLink", label,
						    groups[0].n, groups[0].n == 1 ? "" : "s")
				      : ll_asprintf("GPUs of the smallest of the job's %zu NVLink cliques (%s, %zu node%s): "
						    "multi-node NVLink",
						    n_groups, label, groups[smallest].n, groups[smallest].n == 1 ? "" : "s");
		free(label);
	}
verdict:
	if (in->strict && n_soft > 0) {
		struct ll_buf b;
		ll_buf_init(&b);
		ll_buf_add(&b, "nodes differ: ");
		for (size_t i = 0; i < n_soft; i++)
			ll_buf_addf(&b, "%s%s (an error under --strict)", i ? "; " : "", soft[i]);
		r = ll_error_set(err, -EPROTO, "%s", b.s);
		ll_error_hint(err, "fix the NVLink fabric of those nodes (nvidia-smi -q, section Fabric) or leave them "
				   "out; nothing was started");
		ll_buf_release(&b);
		goto out;
	}
	for (size_t i = 0; i < n_soft; i++)
		push_message(&res->warnings, &res->n_warnings, LL_TAKE(soft[i]));
out:
	for (size_t i = 0; i < n_soft; i++)
		free(soft[i]);
	free(soft);
	for (size_t k = 0; k < n_groups; k++)
		free(groups[k].members);
	free(groups);
	free(names);
	return r;
}
