/* struct ll_facts as plain data: the enum name tables, freeing, and the queries
 * other stages ask of it. Nothing here needs hwloc. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "llmlaunch/facts.h"
#include "llmlaunch/util.h"
#include "facts-internal.h"

/* ---- name tables ---- */

static const char *const path_names[] = {
	[LL_PATH_UNKNOWN] = "?", [LL_PATH_PIX] = "PIX", [LL_PATH_PXB] = "PXB",
	[LL_PATH_PHB] = "PHB",   [LL_PATH_NODE] = "NODE", [LL_PATH_SYS] = "SYS",
};

const char *ll_path_name(enum ll_path p)
{
	return (unsigned)p < LL_ARRAY_SIZE(path_names) ? path_names[p] : "?";
}

enum ll_path ll_path_from_name(const char *s)
{
	for (size_t i = LL_PATH_PIX; s && i < LL_ARRAY_SIZE(path_names); i++)
		if (strcasecmp(s, path_names[i]) == 0)
			return (enum ll_path)i;
	return LL_PATH_UNKNOWN;
}

static const char *const gpu_vendor_names[] = {
	[LL_GPU_VENDOR_OTHER] = "other", [LL_GPU_VENDOR_NVIDIA] = "nvidia",
	[LL_GPU_VENDOR_AMD] = "amd",     [LL_GPU_VENDOR_INTEL] = "intel",
};

const char *ll_gpu_vendor_name(enum ll_gpu_vendor v)
{
	return (unsigned)v < LL_ARRAY_SIZE(gpu_vendor_names) ? gpu_vendor_names[v] : "other";
}

static const char *const nvlink_remote_names[] = {
	[LL_NVLINK_REMOTE_UNKNOWN] = NULL, [LL_NVLINK_REMOTE_GPU] = "gpu",
	[LL_NVLINK_REMOTE_NVSWITCH] = "nvswitch", [LL_NVLINK_REMOTE_CPU] = "cpu",
};

const char *ll_fabric_state_name(enum ll_fabric_state s)
{
	static const char *const names[] = {
		[LL_FABRIC_UNKNOWN] = NULL, [LL_FABRIC_NOT_SUPPORTED] = "not-supported",
		[LL_FABRIC_NOT_STARTED] = "not-started", [LL_FABRIC_IN_PROGRESS] = "in-progress",
		[LL_FABRIC_COMPLETED] = "completed",
	};
	return (unsigned)s < LL_ARRAY_SIZE(names) ? names[s] : NULL;
}

const char *ll_nvlink_remote_name(enum ll_nvlink_remote r)
{
	return (unsigned)r < LL_ARRAY_SIZE(nvlink_remote_names) ? nvlink_remote_names[r] : NULL;
}

const char *ll_gpu_fabric_name(enum ll_gpu_fabric f)
{
	return f == LL_GPU_FABRIC_XGMI ? "XGMI" : "NVLink";
}

static const char *const link_layer_names[] = {
	[LL_LINK_LAYER_UNKNOWN] = NULL, [LL_LINK_LAYER_INFINIBAND] = "InfiniBand",
	[LL_LINK_LAYER_ETHERNET] = "Ethernet",
};

const char *ll_link_layer_name(enum ll_link_layer l)
{
	return (unsigned)l < LL_ARRAY_SIZE(link_layer_names) ? link_layer_names[l] : NULL;
}

static const char *const gid_type_names[] = {
	[LL_GID_TYPE_UNKNOWN] = NULL, [LL_GID_TYPE_IB_ROCE_V1] = "IB/RoCE v1",
	[LL_GID_TYPE_ROCE_V2] = "RoCE v2",
};

const char *ll_gid_type_name(enum ll_gid_type t)
{
	return (unsigned)t < LL_ARRAY_SIZE(gid_type_names) ? gid_type_names[t] : NULL;
}

static const char *const port_state_names[] = {
	[LL_PORT_STATE_UNKNOWN] = NULL, [LL_PORT_DOWN] = "DOWN", [LL_PORT_INIT] = "INIT",
	[LL_PORT_ARMED] = "ARMED", [LL_PORT_ACTIVE] = "ACTIVE", [LL_PORT_ACTIVE_DEFER] = "ACTIVE_DEFER",
};

const char *ll_port_state_name(enum ll_port_state s)
{
	return (unsigned)s < LL_ARRAY_SIZE(port_state_names) ? port_state_names[s] : NULL;
}

static const char *const rdma_class_names[] = {
	[LL_RDMA_CLASS_UNKNOWN] = NULL,       [LL_RDMA_CLASS_VERBS] = "verbs",
	[LL_RDMA_CLASS_PLUGIN] = "plugin",    [LL_RDMA_CLASS_SOFTWARE] = "software",
	[LL_RDMA_CLASS_UNUSABLE] = "unusable",
};

const char *ll_rdma_class_name(enum ll_rdma_class c)
{
	return (unsigned)c < LL_ARRAY_SIZE(rdma_class_names) ? rdma_class_names[c] : NULL;
}

/* The NetKind values the netif annotator writes (annotations.h). */
static const char *const netif_kind_names[] = {
	[LL_NETIF_UNKNOWN] = NULL,         [LL_NETIF_ETHERNET] = "ethernet", [LL_NETIF_INFINIBAND] = "infiniband",
	[LL_NETIF_LOOPBACK] = "loopback",  [LL_NETIF_BRIDGE] = "bridge",     [LL_NETIF_VETH] = "veth",
	[LL_NETIF_DOCKER] = "docker",      [LL_NETIF_VIRBR] = "virbr",       [LL_NETIF_VLAN] = "vlan",
	[LL_NETIF_BOND] = "bond",          [LL_NETIF_TUNNEL] = "tunnel",     [LL_NETIF_OTHER_VIRTUAL] = "virtual",
};

const char *ll_netif_kind_name(enum ll_netif_kind k)
{
	return (unsigned)k < LL_ARRAY_SIZE(netif_kind_names) ? netif_kind_names[k] : NULL;
}

enum ll_netif_kind ll_netif_kind_from_name(const char *s)
{
	for (size_t i = 1; s && i < LL_ARRAY_SIZE(netif_kind_names); i++)
		if (strcmp(s, netif_kind_names[i]) == 0)
			return (enum ll_netif_kind)i;
	return LL_NETIF_UNKNOWN;
}

/* ---- freeing ---- */

static void gpu_release(struct ll_gpu *g)
{
	free(g->busid);
	free(g->model);
	free(g->uuid);
	free(g->cpuset);
	for (size_t i = 0; i < g->n_nvlinks; i++)
		free(g->nvlinks[i].remote_busid);
	free(g->nvlinks);
	free(g->nvfabric.cluster_uuid);
}

static void rdma_release(struct ll_rdma_device *d)
{
	free(d->name);
	free(d->busid);
	free(d->model);
	free(d->node_guid);
	for (size_t i = 0; i < d->n_ports; i++) {
		struct ll_rdma_port *p = &d->ports[i];

		free(p->phys_state);
		free(p->rate);
		free(p->netdev);
		for (size_t k = 0; k < p->n_gids; k++)
			free(p->gids[k].gid);
		free(p->gids);
	}
	free(d->ports);
	for (size_t i = 0; i < d->n_netdevs; i++)
		free(d->netdevs[i]);
	free(d->netdevs);
	free(d->driver);
	free(d->uverbs);
}

static void netif_release(struct ll_netif *n)
{
	free(n->name);
	free(n->operstate);
	free(n->mac);
	free(n->busid);
	free(n->rdma_device);
	for (size_t i = 0; i < n->n_addrs; i++)
		free(n->addrs[i].addr);
	free(n->addrs);
}

void ll_facts_free(struct ll_facts *f)
{
	if (!f)
		return;
	free(f->hostname);
	free(f->dmi_product_name);
	free(f->source);
	for (size_t i = 0; i < f->n_numa_nodes; i++)
		free(f->numa_nodes[i].cpuset);
	free(f->numa_nodes);
	for (size_t i = 0; i < f->n_cores; i++)
		free(f->cores[i].cpuset);
	free(f->cores);
	for (size_t i = 0; i < f->n_gpus; i++)
		gpu_release(&f->gpus[i]);
	free(f->gpus);
	for (size_t i = 0; i < f->n_rdma; i++)
		rdma_release(&f->rdma[i]);
	free(f->rdma);
	for (size_t i = 0; i < f->n_netifs; i++)
		netif_release(&f->netifs[i]);
	free(f->netifs);
	ll_strv_free(f->net_plugins, f->n_net_plugins);
	ll_strv_free(f->net_plugins_off_path, f->n_net_plugins_off_path);
	free(f->gdr_module);
	free(f->kernel_release);
	free(f->imex_nodes_file);
	free(f->imex_nodes);
	free(f->imex_bind);
	free(f->gpu_nic);
	free(f);
}

/* ---- queries ---- */

enum ll_tristate ll_facts_gdr_usable(const struct ll_facts *f)
{
	if (f->gdr_ready == LL_YES || f->dmabuf == LL_YES)
		return LL_YES;
	if (f->gdr_ready == LL_NO && f->dmabuf == LL_NO)
		return LL_NO;
	return LL_UNKNOWN;
}

int ll_facts_nearest_rdma(const struct ll_facts *f, size_t gpu)
{
	int best = -1;
	int best_rank = 0;

	if (gpu >= f->n_gpus)
		return -1;
	for (size_t j = 0; j < f->n_rdma; j++) {
		enum ll_path p = ll_facts_gpu_nic(f, gpu, j);
		/* Unknown ranks after SYS: any device beats none. */
		int rank = p == LL_PATH_UNKNOWN ? LL_PATH_SYS + 1 : (int)p;

		if (best < 0 || rank < best_rank) {
			best = (int)j;
			best_rank = rank;
		}
	}
	return best;
}

static int uf_find(int *parent, int x)
{
	while (parent[x] != x) {
		parent[x] = parent[parent[x]];
		x = parent[x];
	}
	return x;
}

static void uf_union(int *parent, int a, int b)
{
	a = uf_find(parent, a);
	b = uf_find(parent, b);
	if (a != b)
		parent[a] = b;
}

/* NVSwitches of one node form one fabric (DGX-2's two baseboards are bridged by
 * NVSwitch trunks that NVML does not report as GPU links; HGX boards likewise),
 * so every GPU with an NVSwitch link joins one domain. Only the GPUs asked about
 * count: two visible GPUs of an 8-GPU board form a domain of 2. */
int ll_facts_gpu_domain(const struct ll_facts *f, const int *gpus, size_t n_sel)
{
	_cleanup_free_ int *parent = NULL, *size = NULL;
	_cleanup_free_ bool *in = NULL;
	int n = (int)f->n_gpus, sw = n, best = 0;

	if (!f->gpus_known)
		return -1;
	if (!gpus)
		n_sel = f->n_gpus;
	if (n == 0 || n_sel == 0)
		return 0;
	parent = ll_calloc((size_t)n + 1, sizeof(int));
	size = ll_calloc((size_t)n + 1, sizeof(int));
	in = ll_calloc((size_t)n + 1, sizeof(bool));
	for (size_t k = 0; k < n_sel; k++) {
		int g = gpus ? gpus[k] : (int)k;

		if (g < 0 || g >= n)
			continue;
		if (!f->gpus[g].links_known)
			return -1;
		in[g] = true;
	}
	for (int i = 0; i <= n; i++)
		parent[i] = i;
	/* The partitions of one AMD device share its package (one die's fabric). */
	for (int i = 0; i < n; i++)
		for (int j = i + 1; in[i] && f->gpus[i].partition > 0 && j < n; j++)
			if (in[j] && f->gpus[j].partition > 0 && ll_streq(f->gpus[i].busid, f->gpus[j].busid))
				uf_union(parent, i, j);
	for (int i = 0; i < n; i++)
		for (size_t k = 0; in[i] && k < f->gpus[i].n_nvlinks; k++) {
			const struct ll_nvlink *l = &f->gpus[i].nvlinks[k];

			if (l->remote == LL_NVLINK_REMOTE_GPU && l->remote_gpu >= 0 && l->remote_gpu < n &&
			    in[l->remote_gpu])
				uf_union(parent, i, l->remote_gpu);
			else if (l->remote == LL_NVLINK_REMOTE_NVSWITCH)
				uf_union(parent, i, sw);
		}
	for (int i = 0; i < n; i++) {
		int r;

		if (!in[i])
			continue;
		r = uf_find(parent, i);
		if (++size[r] > best)
			best = size[r];
	}
	return best;
}

/* aws-ofi-nccl always installs libnccl-net-ofi.so, and libnccl-net.so beside it
 * when it is to be NCCL's default (aws-ofi-nccl src/Makefile.am); NGC images know it
 * as libnccl-net-aws-ofi.so. Another libnccl-net.so (HPC-X's IBext plugin) is not it. */
static bool is_ofi_plugin_name(const char *base)
{
	return strcmp(base, "libnccl-net-ofi.so") == 0 || strcmp(base, "libnccl-net-aws-ofi.so") == 0 ||
	       strcmp(base, "librccl-net-ofi.so") == 0;
}

static bool is_default_plugin_name(const char *base)
{
	return strcmp(base, "libnccl-net.so") == 0 || strcmp(base, "librccl-net.so") == 0;
}

bool ll_facts_net_plugin_is_ofi(const struct ll_facts *f, size_t i)
{
	const char *p, *slash, *base;
	size_t dirlen;

	if (i >= f->n_net_plugins)
		return false;
	p = f->net_plugins[i];
	slash = strrchr(p, '/');
	base = slash ? slash + 1 : p;
	dirlen = slash ? (size_t)(slash - p) : 0;
	if (is_ofi_plugin_name(base) || (strstr(p, "ofi-nccl") && is_default_plugin_name(base)))
		return true;
	for (size_t k = 0; k < f->n_net_plugins; k++) {
		const char *q = f->net_plugins[k], *qs = strrchr(q, '/');

		if (k != i && qs && (size_t)(qs - q) == dirlen && strncmp(q, p, dirlen) == 0 && is_ofi_plugin_name(qs + 1))
			return true;
	}
	return false;
}

int ll_facts_gpu_fabric(const struct ll_facts *f, const int *gpus, size_t n_sel)
{
	if (!gpus)
		n_sel = f->n_gpus;
	for (size_t k = 0; k < n_sel; k++) {
		int g = gpus ? gpus[k] : (int)k;

		if (g >= 0 && (size_t)g < f->n_gpus && f->gpus[g].n_nvlinks > 0)
			return (int)f->gpus[g].nvlinks[0].fabric;
	}
	return -1;
}

const struct ll_netif *ll_facts_netif(const struct ll_facts *f, const char *name)
{
	for (size_t i = 0; name && i < f->n_netifs; i++)
		if (strcmp(f->netifs[i].name, name) == 0)
			return &f->netifs[i];
	return NULL;
}

const struct ll_rdma_device *ll_facts_rdma(const struct ll_facts *f, const char *name)
{
	for (size_t i = 0; name && i < f->n_rdma; i++)
		if (strcmp(f->rdma[i].name, name) == 0)
			return &f->rdma[i];
	return NULL;
}

