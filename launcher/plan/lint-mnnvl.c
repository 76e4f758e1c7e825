/* Lint of what turns multi-node NVLink (MNNVL: GB200 NVL72 and its kind) off or
 * breaks it, on a node whose GPUs are in an NVLink fabric. From NCCL 2.30:
 * src/init.cc tries MNNVL for a multi-node communicator unless NCCL_MNNVL_ENABLE=0;
 * src/mnnvl.cc (ncclMnnvlCheck) gives up without cuMem (NCCL_CUMEM_ENABLE=0), or
 * when any rank's fabric registration is not COMPLETED, and stops the job with
 * "Check the IMEX channel configuration" when CUDA cannot export and import FABRIC
 * handles (no IMEX channel). NCCL itself only logs the health mask; a degraded one
 * means the links run below their peers'. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plan-internal.h"

/* A value of NAME from a profile, the environment or --set, or NULL. */
static const char *given(const struct plan_state *s, const char *name)
{
	const struct ll_setting *st = ll_plan_get(s->p, name);

	if (st)
		return st->source != LL_SOURCE_PROBE && st->source != LL_SOURCE_DEFAULT ? st->value : NULL;
	return plan_input_value(s, name, NULL, NULL);
}

static bool in_fabric(const struct ll_gpu *g)
{
	return g->nvfabric.state != LL_FABRIC_UNKNOWN && g->nvfabric.state != LL_FABRIC_NOT_SUPPORTED;
}

/* GPUs (or addresses) named in one message before "and N more". */
#define NAMES_SHOWN 4

static void add_shown(struct ll_buf *b, size_t *n, const char *fmt, ...) LL_PRINTF(3, 4);

static void add_shown(struct ll_buf *b, size_t *n, const char *fmt, ...)
{
	va_list ap;

	if ((*n)++ >= NAMES_SHOWN)
		return;
	if (b->len)
		ll_buf_add(b, ", ");
	va_start(ap, fmt);
	ll_buf_vaddf(b, fmt, ap);
	va_end(ap);
}

static void add_more(struct ll_buf *b, size_t n)
{
	if (n > NAMES_SHOWN)
		ll_buf_addf(b, " and %zu more", n - NAMES_SHOWN);
}

/* The agreement files a node under its first registered GPU's clique (agree-clique.c);
 * NCCL pairs ranks by each GPU's own. A node whose GPUs disagree is a fabric partition
 * the fabric manager set up wrongly (an NVL72 tray's GPUs share one clique). */
static void split_clique_lint(struct plan_state *s)
{
	const struct ll_facts *f = s->f;
	const struct ll_gpu *first = NULL;

	for (size_t i = 0; i < s->n_gpus; i++) {
		const struct ll_gpu *g = &f->gpus[s->gpus[i]];
		const struct ll_gpu_fabric_info *fi = &g->nvfabric;

		if (fi->state != LL_FABRIC_COMPLETED || fi->status != 0 || !fi->cluster_uuid || fi->clique_id < 0)
			continue;
		if (!first) {
			first = g;
			continue;
		}
		if (strcmp(fi->cluster_uuid, first->nvfabric.cluster_uuid) != 0 || fi->clique_id != first->nvfabric.clique_id) {
			plan_lint(s, LL_LINT_WARNING, "MNNVL",
				  "this node's GPUs are in different NVLink cliques (GPU %s: clique %ld of domain %s, GPU "
				  "%s: clique %ld of domain %s): the agreement orders nodes by the first GPU's clique and "
				  "NCCL puts the others' traffic on the network; check the fabric manager's partitions "
				  "(nvidia-smi -q, section Fabric)",
				  first->busid, first->nvfabric.clique_id, first->nvfabric.cluster_uuid, g->busid,
				  fi->clique_id, fi->cluster_uuid);
			return;
		}
	}
}

/* Is ADDR (inet_ntop text) one of LIST ("a,b,c", as probe/imex.c writes it)? */
static bool in_list(const char *list, const char *addr)
{
	size_t len = strlen(addr);

	for (const char *p = list;;) {
		size_t n = strcspn(p, ",");

		if (n == len && strncmp(p, addr, len) == 0)
			return true;
		if (!p[n])
			return false;
		p += n + 1;
	}
}

static size_t list_count(const char *list)
{
	size_t n = *list ? 1 : 0;

	for (const char *p = list; *p; p++)
		n += *p == ',';
	return n;
}

/* The IMEX service joins the domain with the address its node list holds for this
 * node (BIND_INTERFACE_IP when set, else the first of the node's own addresses found
 * in the list: NVIDIA's IMEX guide, "IMEX Service Config Options"). A node missing
 * from the list cannot import or export memory across nodes: CUDA's fabric handles
 * fail and NCCL stops ("Check the IMEX channel configuration"). */
static void imex_nodes_lint(struct plan_state *s)
{
	const struct ll_facts *f = s->f;
	struct ll_buf mine;
	size_t n_mine = 0;
	bool known = false, listed = false;

	if (!f->imex_nodes_file)
		return;
	if (f->imex_nodes_missing) {
		plan_lint(s, LL_LINT_WARNING, "IMEX",
			  "IMEX's node list %s (named by /etc/nvidia-imex/config.cfg) does not exist: the IMEX "
			  "service has no domain to join and CUDA cannot import other nodes' memory; NCCL stops a "
			  "multi-node job; write the domain's node addresses there, one a line, and restart "
			  "nvidia-imex",
			  f->imex_nodes_file);
		return;
	}
	if (!f->imex_nodes)
		return;
	if (f->imex_bind) {
		if (!in_list(f->imex_nodes, f->imex_bind))
			plan_lint(s, LL_LINT_WARNING, "IMEX",
				  "IMEX binds to %s (BIND_INTERFACE_IP in /etc/nvidia-imex/config.cfg), which its node "
				  "list %s (%zu addresses) does not hold: this node cannot join the IMEX domain and "
				  "NCCL stops a multi-node job; add the address to the list on every node and restart "
				  "nvidia-imex",
				  f->imex_bind, f->imex_nodes_file, list_count(f->imex_nodes));
		return;
	}
	ll_buf_init(&mine);
	for (size_t i = 0; i < f->n_netifs && !listed; i++) {
		const struct ll_netif *n = &f->netifs[i];

		if (!n->addrs_known || n->kind == LL_NETIF_LOOPBACK)
			continue;
		for (size_t j = 0; j < n->n_addrs && !listed; j++) {
			const char *a = n->addrs[j].addr;

			if (!a || ll_startswith(a, "fe80:"))
				continue;
			known = true;
			listed = in_list(f->imex_nodes, a);
			add_shown(&mine, &n_mine, "%s", a);
		}
	}
	add_more(&mine, n_mine);
	if (known && !listed)
		plan_lint(s, LL_LINT_WARNING, "IMEX",
			  "none of this node's addresses (%s) is in IMEX's node list %s (%zu addresses): the IMEX "
			  "service finds its own address there, so this node cannot join the IMEX domain and NCCL "
			  "stops a multi-node job; add the node's address to the list on every node of the domain "
			  "and restart nvidia-imex (it reads the list only at start)",
			  mine.s, f->imex_nodes_file, list_count(f->imex_nodes));
	ll_buf_release(&mine);
}

void plan_lint_mnnvl(struct plan_state *s)
{
	const struct ll_facts *f = s->f;
	struct ll_buf pending, failed, degraded;
	size_t n_pending = 0, n_failed = 0, n_degraded = 0;
	bool fabric = false, off = false;
	const char *v;

	for (size_t i = 0; i < s->n_gpus; i++)
		fabric |= in_fabric(&f->gpus[s->gpus[i]]);
	if (!fabric)
		return;

	if ((v = given(s, "NCCL_MNNVL_ENABLE")) && strcmp(v, "0") == 0) {
		off = true;
		plan_lint(s, LL_LINT_WARNING, "NCCL_MNNVL_ENABLE",
			  "0 turns multi-node NVLink off: this node's GPUs would reach the rest of their NVLink "
			  "clique over the network; unset NCCL_MNNVL_ENABLE (NCCL's default uses it where the "
			  "fabric allows)");
	}
	if ((v = given(s, "NCCL_CUMEM_ENABLE")) && strcmp(v, "0") == 0) {
		off = true;
		plan_lint(s, LL_LINT_WARNING, "NCCL_CUMEM_ENABLE",
			  "0 turns multi-node NVLink off (NCCL needs cuMem memory for it): this node's GPUs would "
			  "reach the rest of their NVLink clique over the network; unset NCCL_CUMEM_ENABLE");
	}
	/* Without MNNVL NCCL never opens a channel: nothing to say about them then. */
	if (!off && f->imex_channels == 0)
		plan_lint(s, LL_LINT_WARNING, "IMEX",
			  "no IMEX channel on this node (/dev/nvidia-caps-imex-channels/channel0 is missing): NCCL "
			  "stops a multi-node job ('MNNVL ... is available but not working'); create it as root "
			  "(mknod /dev/nvidia-caps-imex-channels/channel0 c MAJOR 0, MAJOR from /proc/devices), "
			  "pass it into the container, or set NCCL_MNNVL_ENABLE=0");
	else if (!off && f->imex_channels > 0 && f->imex_access == LL_NO)
		plan_lint(s, LL_LINT_WARNING, "IMEX",
			  "the IMEX channel is not readable and writable by this user: CUDA cannot import other "
			  "nodes' memory and NCCL stops a multi-node job; make it mode 0666 (as NVIDIA's IMEX guide "
			  "creates channel0) or give the user access");
	if (!off)
		imex_nodes_lint(s);

	ll_buf_init(&pending);
	ll_buf_init(&failed);
	ll_buf_init(&degraded);
	for (size_t i = 0; i < s->n_gpus; i++) {
		const struct ll_gpu *g = &f->gpus[s->gpus[i]];
		const struct ll_gpu_fabric_info *fi = &g->nvfabric;

		if (!in_fabric(g))
			continue;
		if (fi->state != LL_FABRIC_COMPLETED)
			add_shown(&pending, &n_pending, "%s (%s)", g->busid, ll_fabric_state_name(fi->state));
		else if (fi->status != 0)
			add_shown(&failed, &n_failed, "%s (NVML status %d)", g->busid, fi->status);
		else if (fi->health_mask >= 0 && LL_FABRIC_HEALTH_DEGRADED_BW(fi->health_mask))
			add_shown(&degraded, &n_degraded, "%s (health mask 0x%08lx)", g->busid, fi->health_mask);
	}
	split_clique_lint(s);
	add_more(&pending, n_pending);
	add_more(&failed, n_failed);
	add_more(&degraded, n_degraded);
	if (pending.len)
		plan_lint(s, LL_LINT_WARNING, "MNNVL",
			  "NVLink fabric registration not completed on GPU %s: NCCL uses multi-node NVLink only when "
			  "every GPU of the job completed it; wait for the fabric manager, or check it on the "
			  "NVLink switch trays (nvidia-smi -q, section Fabric)",
			  pending.s);
	if (failed.len)
		plan_lint(s, LL_LINT_WARNING, "MNNVL",
			  "NVLink fabric registration failed on GPU %s: NCCL uses multi-node NVLink only when every "
			  "GPU of the job completed it; drain the node and check nvidia-smi -q (section Fabric) "
			  "and the fabric manager's log",
			  failed.s);
	if (degraded.len)
		plan_lint(s, LL_LINT_WARNING, "MNNVL",
			  "NVLink fabric bandwidth is degraded on GPU %s: multi-node NVLink runs slower here than on "
			  "the other nodes; check the GPU's NVLinks and the switch trays (nvidia-smi -q, "
			  "section Fabric)",
			  degraded.s);
	ll_buf_release(&pending);
	ll_buf_release(&failed);
	ll_buf_release(&degraded);
}
