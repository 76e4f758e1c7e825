/* Network rules of the planner: the socket interface (NCCL_SOCKET_IFNAME,
 * GLOO_SOCKET_IFNAME), the RDMA ports (NCCL_IB_HCA, NCCL_IB_DISABLE), the
 * GPUDirect RDMA level and the RoCE GID index. docs/planner.md states each rule. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "plan-internal.h"

/* ---- socket interface ---------------------------------------------------- */

/* The facts' kind: annotated by the probe, else inferred once for everyone
 * (ll_netif_kind_infer). */
static enum ll_netif_kind netif_kind(const struct ll_netif *n)
{
	return n->kind;
}

/* Kinds NCCL and Gloo must not use between nodes (llmlaunch/facts.h, the one view
 * the agreement shares). */
static bool kind_is_local_only(enum ll_netif_kind k)
{
	enum ll_netif_role role = ll_netif_role(k, false);

	return role == LL_NETIF_ROLE_CONTAINER || role == LL_NETIF_ROLE_LOOPBACK;
}

static bool addr_is_v6_usable(const struct ll_addr *a)
{
	return a->family == AF_INET6 && a->addr && !ll_startswith(a->addr, "fe8") &&
	       !ll_startswith(a->addr, "fe9") && !ll_startswith(a->addr, "fea") &&
	       !ll_startswith(a->addr, "feb") && strcmp(a->addr, "::1") != 0;
}

static const char *first_v4(const struct ll_netif *n)
{
	for (size_t i = 0; i < n->n_addrs; i++)
		if (n->addrs[i].family == AF_INET)
			return n->addrs[i].addr;
	return NULL;
}

/* Why the interface cannot carry traffic at all, or NULL. */
static const char *netif_unusable(const struct ll_netif *n)
{
	if (n->up == LL_NO)
		return "down";
	if (n->operstate && strcmp(n->operstate, "up") != 0 && strcmp(n->operstate, "unknown") != 0)
		return n->operstate;
	if (n->running == LL_NO)
		return "not running";
	if (n->addrs_known) {
		bool any = false;

		for (size_t i = 0; i < n->n_addrs; i++)
			if (n->addrs[i].family == AF_INET || addr_is_v6_usable(&n->addrs[i]))
				any = true;
		if (!any)
			return "no address";
	}
	return NULL;
}

/* The ACTIVE port whose IPoIB interface n is, or NULL: the port naming n as its
 * netdev, else (hwloc exports name no port) any ACTIVE port of n's RDMA device. */
static const struct ll_rdma_port *ipoib_active_port(const struct ll_facts *f, const struct ll_netif *n,
						   const struct ll_rdma_device **ret_dev)
{
	if (netif_kind(n) != LL_NETIF_INFINIBAND || !n->rdma_device)
		return NULL;
	for (size_t d = 0; d < f->n_rdma; d++) {
		const struct ll_rdma_device *dev = &f->rdma[d];
		const struct ll_rdma_port *any = NULL;

		if (!ll_streq(dev->name, n->rdma_device) || dev->rdma_class != LL_RDMA_CLASS_VERBS)
			continue;
		for (size_t p = 0; p < dev->n_ports; p++) {
			const struct ll_rdma_port *port = &dev->ports[p];

			if (port->state != LL_PORT_ACTIVE && port->state != LL_PORT_ACTIVE_DEFER)
				continue;
			if (port->netdev && ll_streq(port->netdev, n->name)) {
				*ret_dev = dev;
				return port;
			}
			if (!port->netdev && !any)
				any = port;
		}
		if (any)
			*ret_dev = dev;
		return any;
	}
	return NULL;
}

/* Lower is better: the high-speed fabric's own interfaces first: Slingshot's
 * hsn/hsi (HPE points NCCL's sockets at them, shs-ccl-docs), then IPoIB on an
 * ACTIVE InfiniBand port (NCCL's own default takes ib* interfaces first, NCCL docs
 * "NCCL_SOCKET_IFNAME"; on JSC's JUWELS and JURECA nodes only the IPoIB addresses
 * reach across InfiniBand cells, pytorch/pytorch#73656), then physical Ethernet,
 * then bonds and VLANs, then other IPoIB (port down or unknown), then the rest; an
 * interface with only IPv6 comes after every one with IPv4. Among equals the faster
 * (known speeds) wins, so a 100G port beats the 1G management port. */
static int netif_rank(const struct ll_facts *f, const struct ll_netif *n)
{
	const struct ll_rdma_device *dev = NULL;
	int r;

	if (n->slingshot)
		r = 0;
	else switch (netif_kind(n)) {
	case LL_NETIF_INFINIBAND: r = ipoib_active_port(f, n, &dev) ? 1 : 4; break;
	case LL_NETIF_ETHERNET: r = 2; break;
	case LL_NETIF_BOND:
	case LL_NETIF_VLAN: r = 3; break;
	default: r = 5; break;
	}
	if (n->addrs_known && !first_v4(n))
		r += 6;
	return r;
}

static bool netif_better(const struct ll_netif *n, int rank, const struct ll_netif *best, int best_rank)
{
	if (!best || rank != best_rank)
		return !best || rank < best_rank;
	return n->speed_mbps > 0 && best->speed_mbps > 0 && n->speed_mbps > best->speed_mbps;
}

static const char *kind_text(enum ll_netif_kind k)
{
	switch (k) {
	case LL_NETIF_ETHERNET: return "Ethernet";
	case LL_NETIF_INFINIBAND: return "IPoIB";
	case LL_NETIF_LOOPBACK: return "loopback";
	case LL_NETIF_DOCKER: return "docker";
	case LL_NETIF_BRIDGE: return "bridge";
	case LL_NETIF_VETH: return "veth";
	case LL_NETIF_VIRBR: return "virbr";
	case LL_NETIF_VLAN: return "VLAN";
	case LL_NETIF_BOND: return "bond";
	case LL_NETIF_TUNNEL: return "tunnel";
	case LL_NETIF_OTHER_VIRTUAL: return "virtual";
	default: return "kind unknown";
	}
}

static void decide_socket_if(struct plan_state *s)
{
	const struct ll_facts *f = s->f;
	const struct ll_netif *best = NULL, *fallback = NULL;
	int best_rank = 0;
	struct ll_buf skipped, why;
	_cleanup_free_ char *nccl = NULL;

	ll_buf_init(&skipped);
	ll_buf_init(&why);
	for (size_t i = 0; i < f->n_netifs; i++) {
		const struct ll_netif *n = &f->netifs[i];
		const char *bad = netif_unusable(n);
		enum ll_netif_kind k = netif_kind(n);

		if (bad) {
			ll_buf_addf(&skipped, "%s%s (%s)", skipped.len ? ", " : "", n->name, bad);
			continue;
		}
		if (kind_is_local_only(k)) {
			ll_buf_addf(&skipped, "%s%s (%s)", skipped.len ? ", " : "", n->name, kind_text(k));
			/* Loopback is the right fallback for one node: it always works. */
			if (!fallback || (k == LL_NETIF_LOOPBACK && netif_kind(fallback) != LL_NETIF_LOOPBACK))
				fallback = n;
			continue;
		}
		if (netif_better(n, netif_rank(f, n), best, best_rank)) {
			best = n;
			best_rank = netif_rank(f, n);
		}
	}

	if (best) {
		const char *v4 = first_v4(best);

		ll_buf_addf(&why, "%s: %s%s interface%s", best->name, best->slingshot ? "HPE Slingshot " : "",
			    kind_text(netif_kind(best)),
			    best->kind_inferred && netif_kind(best) == LL_NETIF_ETHERNET
				    ? " (kind inferred from its 6-byte MAC address)"
				    : "");
		if (best->speed_mbps > 0)
			ll_buf_addf(&why, " of %g Gb/s", best->speed_mbps / 1000.0);
		if (!best->addrs_known)
			ll_buf_addf(&why, ", %saddresses unknown", best->operstate ? "" : "state and ");
		else if (v4)
			ll_buf_addf(&why, " with IPv4 %s", v4);
		else
			ll_buf_add(&why, " with IPv6 only");
		if (best->slingshot) {
			ll_buf_add(&why, ", the fabric's own interface before any other");
		} else {
			const struct ll_rdma_device *dev = NULL;
			const struct ll_rdma_port *port = ipoib_active_port(f, best, &dev);

			if (port)
				ll_buf_addf(&why, ", on the ACTIVE port %s:%u: the InfiniBand fabric's interface, "
						  "before Ethernet", dev->name, port->number);
			else
				ll_buf_add(&why, ", chosen by kind, speed, then name");
		}
	} else if (fallback && s->p->nnodes == 1) {
		best = fallback;
		ll_buf_addf(&why, "%s: only %s interfaces are usable, which is fine on a single node", best->name,
			    kind_text(netif_kind(best)));
	}
	if (skipped.len)
		ll_buf_addf(&why, "%sskipped %s", why.len ? "; " : "", skipped.s);

	if (best) {
		nccl = ll_asprintf("=%s", best->name);
		plan_decide(s, "NCCL_SOCKET_IFNAME", nccl, LL_SOURCE_PROBE, true, "%s", why.s);
		plan_decide(s, "GLOO_SOCKET_IFNAME", best->name, LL_SOURCE_PROBE, true, "same interface as NCCL");
	} else if (!f->netdevs_known || f->n_netifs == 0) {
		plan_decide(s, "NCCL_SOCKET_IFNAME", NULL, LL_SOURCE_PROBE, true, "%s: NCCL chooses at run time",
			    f->netdevs_known ? "no network interface known" : LL_PLAN_NETDEVS_UNKNOWN);
		plan_decide(s, "GLOO_SOCKET_IFNAME", NULL, LL_SOURCE_PROBE, true,
			    f->netdevs_known ? "no network interface known" : "network interfaces unknown");
	} else {
		plan_decide(s, "NCCL_SOCKET_IFNAME", NULL, LL_SOURCE_PROBE, true, "no usable interface: %s", why.s);
		plan_decide(s, "GLOO_SOCKET_IFNAME", NULL, LL_SOURCE_PROBE, true, "no usable interface");
		if (s->p->nnodes > 1)
			plan_lint(s, LL_LINT_ERROR, "NCCL_SOCKET_IFNAME",
				  "no interface for traffic between nodes: %s", why.s);
	}
	s->net.socket_if = best;
	ll_buf_release(&skipped);
	ll_buf_release(&why);
}

/* ---- RDMA ports ----------------------------------------------------------- */

struct port_eval {
	size_t dev, port;
	enum ll_link_layer ll;
	bool inferred;
	char *excluded;   /* why it is left out, NULL while a candidate */
};

/* Why NCCL's own IB transport leaves a device alone, or NULL when it drives it: the
 * class the facts decided (ll_rdma_classify, probe/facts-net.c), never the name. */
static const char *device_unsuitable(const struct ll_rdma_device *d)
{
	if (d->rdma_class == LL_RDMA_CLASS_VERBS)
		return NULL;
	return d->class_why ? d->class_why : "what drives it is unknown";
}

/* The fabric NCCL reaches only through aws-ofi-nccl (EFA devices, Slingshot NICs),
 * and whether that plugin is where NCCL's dlopen() finds it. Looked at only when no
 * verbs port serves: the IB transport wins wherever it has a device. */
static void find_plugin_fabric(struct plan_state *s)
{
	const struct ll_facts *f = s->f;
	struct plan_net *net = &s->net;
	struct ll_buf names;
	double gbps = 0;
	bool rate_known = true;
	int first_default = -1;

	ll_buf_init(&names);
	net->plugin_index = -1;
	net->plugin_gbps = -1;
	for (size_t d = 0; d < f->n_rdma; d++) {
		const struct ll_rdma_device *dev = &f->rdma[d];
		bool any = false;

		if (dev->rdma_class != LL_RDMA_CLASS_PLUGIN || !dev->provider)
			continue;
		for (size_t p = 0; p < dev->n_ports; p++) {
			const struct ll_rdma_port *port = &dev->ports[p];

			if (port->state != LL_PORT_ACTIVE && port->state != LL_PORT_ACTIVE_DEFER &&
			    port->state != LL_PORT_STATE_UNKNOWN)
				continue;
			any = true;
			if (port->rate_gbps < 0)
				rate_known = false;
			else
				gbps += port->rate_gbps;
		}
		if (!any || (net->plugin_fabric && strcmp(net->plugin_fabric, dev->provider) != 0))
			continue;
		net->plugin_fabric = dev->provider;
		ll_buf_addf(&names, "%s%s", names.len ? ", " : "", dev->name);
	}
	for (size_t i = 0; !net->plugin_fabric && i < f->n_netifs; i++)
		if (f->netifs[i].slingshot && f->netifs[i].up != LL_NO)
			net->plugin_fabric = "cxi";
	for (size_t i = 0; net->plugin_fabric && strcmp(net->plugin_fabric, "cxi") == 0 && i < f->n_netifs; i++) {
		const struct ll_netif *n = &f->netifs[i];

		if (!n->slingshot || n->up == LL_NO)
			continue;
		ll_buf_addf(&names, "%s%s", names.len ? ", " : "", n->name);
		if (n->speed_mbps < 0)
			rate_known = false;
		else
			gbps += n->speed_mbps / 1000.0;
	}
	if (!net->plugin_fabric) {
		ll_buf_release(&names);
		return;
	}
	net->plugin_devices = ll_buf_detach(&names);
	ll_buf_release(&names);
	net->plugin_gbps = rate_known ? gbps : -1;
	net->plugin_installed = f->net_plugins_known ? LL_NO : LL_UNKNOWN;
	/* NCCL looks for libnccl-net*.so, RCCL for librccl-net*.so (ROCm/rccl src/net.cc). */
	net->plugin_prefix = s->vendor == LL_GPU_VENDOR_AMD ? "librccl-net" : "libnccl-net";
	for (size_t i = 0; i < f->n_net_plugins; i++) {
		const char *slash = strrchr(f->net_plugins[i], '/');
		const char *base = slash ? slash + 1 : f->net_plugins[i];
		size_t plen = strlen(net->plugin_prefix);

		if (strncmp(base, net->plugin_prefix, plen) != 0)
			continue;
		if (first_default < 0 && strcmp(base + plen, ".so") == 0)
			first_default = (int)i;
		if (net->plugin_index < 0 && ll_facts_net_plugin_is_ofi(f, i))
			net->plugin_index = (int)i;
	}
	if (net->plugin_index >= 0) {
		net->plugin_installed = LL_YES;
		/* NCCL loads the first libnccl-net.so unasked: when that is the OFI one,
		 * nothing needs naming; another (HPC-X's) would be loaded instead, and
		 * then the short name NCCL_NET_PLUGIN=ofi (libnccl-net-ofi.so) is best. */
		if (first_default >= 0 && ll_facts_net_plugin_is_ofi(f, (size_t)first_default)) {
			net->plugin_index = first_default;
			net->plugin_is_default = true;
		} else {
			for (size_t i = f->n_net_plugins; i-- > 0;) {
				const char *slash = strrchr(f->net_plugins[i], '/');
				const char *base = slash ? slash + 1 : f->net_plugins[i];

				if (ll_startswith(base, net->plugin_prefix) &&
				    strcmp(base + strlen(net->plugin_prefix), "-ofi.so") == 0)
					net->plugin_index = (int)i;
			}
		}
	}
}

static const char *fabric_text(const char *fabric)
{
	return ll_streq(fabric, "efa") ? "AWS EFA" : "HPE Slingshot (CXI)";
}

/* Link layer of a port; when sysfs did not say (plain lstopo exports), infer it from
 * facts that hwloc does record: an InfiniBand port has a LID, RoCE ports have LID 0
 * and IPv4-mapped GIDs; the device's interface kind (IPoIB or Ethernet) also tells. */
static enum ll_link_layer port_link_layer(const struct ll_facts *f, const struct ll_rdma_device *d,
					  const struct ll_rdma_port *p, bool *inferred)
{
	*inferred = false;
	if (p->link_layer != LL_LINK_LAYER_UNKNOWN)
		return p->link_layer;
	*inferred = true;
	if (p->lid > 0)
		return LL_LINK_LAYER_INFINIBAND;
	for (size_t i = 0; i < p->n_gids; i++)
		if (p->gids[i].ipv4_mapped)
			return LL_LINK_LAYER_ETHERNET;
	for (size_t i = 0; i < d->n_netdevs + 1; i++) {
		const char *name = i < d->n_netdevs ? d->netdevs[i] : p->netdev;
		const struct ll_netif *n = name ? ll_facts_netif(f, name) : NULL;

		if (n && n->kind == LL_NETIF_INFINIBAND)
			return LL_LINK_LAYER_INFINIBAND;
		if (n && n->kind == LL_NETIF_ETHERNET)
			return LL_LINK_LAYER_ETHERNET;
	}
	*inferred = false;
	return LL_LINK_LAYER_UNKNOWN;
}

static const char *ll_text(enum ll_link_layer l)
{
	const char *n = ll_link_layer_name(l);

	return n ? n : "unknown";
}

static enum ll_path path_max(enum ll_path a, enum ll_path b)
{
	return a > b ? a : b;
}

/* Best (lowest) known class between a GPU and any candidate device. */
static enum ll_path gpu_best_class(const struct ll_facts *f, size_t gpu, const bool *dev_candidate)
{
	enum ll_path best = LL_PATH_UNKNOWN;

	for (size_t d = 0; d < f->n_rdma; d++) {
		enum ll_path c = dev_candidate[d] ? ll_facts_gpu_nic(f, gpu, d) : LL_PATH_UNKNOWN;

		if (c != LL_PATH_UNKNOWN && (best == LL_PATH_UNKNOWN || c < best))
			best = c;
	}
	return best;
}

/* Keep a device when it is (one of) the nearest to at least one GPU: storage and
 * management adapters are never the nearest NIC of any GPU while compute NICs sit
 * on the GPUs' switches, yet a lone NIC far from some GPUs still serves them. */
static void filter_by_distance(struct plan_state *s, struct port_eval *ev, size_t n_ev)
{
	const struct ll_facts *f = s->f;
	_cleanup_free_ bool *cand = ll_calloc(f->n_rdma + 1, sizeof(bool));
	_cleanup_free_ bool *keep = ll_calloc(f->n_rdma + 1, sizeof(bool));
	_cleanup_free_ enum ll_path *best = ll_calloc(s->n_gpus + 1, sizeof(enum ll_path));
	enum ll_path overall = LL_PATH_UNKNOWN;

	for (size_t i = 0; i < n_ev; i++)
		if (!ev[i].excluded)
			cand[ev[i].dev] = true;
	for (size_t g = 0; g < s->n_gpus; g++) {
		best[g] = gpu_best_class(f, s->gpus[g], cand);
		if (best[g] != LL_PATH_UNKNOWN && (overall == LL_PATH_UNKNOWN || best[g] < overall))
			overall = best[g];
	}
	for (size_t d = 0; d < f->n_rdma; d++) {
		bool any_known = false;

		if (!cand[d])
			continue;
		for (size_t g = 0; g < s->n_gpus; g++) {
			enum ll_path c = ll_facts_gpu_nic(f, s->gpus[g], d);

			if (c != LL_PATH_UNKNOWN)
				any_known = true;
			if (c != LL_PATH_UNKNOWN && c == best[g])
				keep[d] = true;
		}
		/* Distance unknown: nothing to judge by, so the device stays. */
		if (!any_known)
			keep[d] = true;
	}
	for (size_t i = 0; i < n_ev; i++) {
		enum ll_path dbest = LL_PATH_UNKNOWN;

		if (ev[i].excluded || keep[ev[i].dev])
			continue;
		for (size_t g = 0; g < s->n_gpus; g++) {
			enum ll_path c = ll_facts_gpu_nic(f, s->gpus[g], ev[i].dev);

			if (c != LL_PATH_UNKNOWN && (dbest == LL_PATH_UNKNOWN || c < dbest))
				dbest = c;
		}
		ev[i].excluded = ll_asprintf("not the nearest NIC of any GPU: at best %s, while every GPU has "
					     "a NIC at %s or closer",
					     ll_path_name(dbest), ll_path_name(path_max(overall, LL_PATH_PIX)));
	}
}

/* A device whose ports the snapshot does not list (hwloc 1.x and early 2.x exports
 * carry no PortNState) is named alone: port NO_PORT. */
#define NO_PORT SIZE_MAX

static void port_label(struct ll_buf *b, const struct ll_facts *f, const struct port_eval *e)
{
	if (e->port == NO_PORT)
		ll_buf_add(b, f->rdma[e->dev].name);
	else
		ll_buf_addf(b, "%s:%u", f->rdma[e->dev].name, f->rdma[e->dev].ports[e->port].number);
}

static void decide_gdr(struct plan_state *s)
{
	const struct ll_facts *f = s->f;
	struct plan_net *net = &s->net;
	enum ll_path needed = LL_PATH_UNKNOWN;
	size_t worst_gpu = 0, worst_dev = 0;
	bool unknown = false;

	if (net->n_chosen == 0 && net->plugin_fabric && net->plugin_installed == LL_YES && s->n_gpus > 0) {
		if (strcmp(net->plugin_fabric, "cxi") != 0)
			plan_decide(s, "NCCL_NET_GDR_LEVEL", NULL, LL_SOURCE_PROBE, true,
				    "aws-ofi-nccl decides GPUDirect RDMA for AWS EFA");
		else if (ll_facts_gdr_usable(f) == LL_NO)
			plan_decide(s, "NCCL_NET_GDR_LEVEL", NULL, LL_SOURCE_PROBE, true,
				    "GPUDirect RDMA is not ready (no peer-memory module, DMA-BUF not usable)");
		else
			plan_decide(s, "NCCL_NET_GDR_LEVEL", "PHB", LL_SOURCE_PROBE, true,
				    "HPE: required for RDMA between GPUs over Slingshot (shs-ccl-docs)");
		return;
	}
	if (net->n_chosen == 0 || s->n_gpus == 0) {
		plan_decide(s, "NCCL_NET_GDR_LEVEL", NULL, LL_SOURCE_PROBE, true,
			    net->devices_unknown ? "RDMA devices unknown"
			    : net->n_chosen == 0 ? "no RDMA port in use"
			    : f->gpus_known	 ? "no GPUs"
						 : "GPUs unknown");
		return;
	}
	for (size_t g = 0; g < s->n_gpus; g++) {
		enum ll_path best = LL_PATH_UNKNOWN;
		size_t best_dev = 0;

		for (size_t i = 0; i < net->n_chosen; i++) {
			enum ll_path c = ll_facts_gpu_nic(f, s->gpus[g], net->chosen_dev[i]);

			if (c != LL_PATH_UNKNOWN && (best == LL_PATH_UNKNOWN || c < best)) {
				best = c;
				best_dev = net->chosen_dev[i];
			}
		}
		if (best == LL_PATH_UNKNOWN) {
			unknown = true;
			continue;
		}
		if (needed == LL_PATH_UNKNOWN || best > needed) {
			needed = best;
			worst_gpu = (size_t)s->gpus[g];
			worst_dev = best_dev;
		}
	}
	net->gdr_needed = unknown ? LL_PATH_UNKNOWN : needed;

	if (ll_facts_gdr_usable(f) == LL_NO) {
		plan_decide(s, "NCCL_NET_GDR_LEVEL", NULL, LL_SOURCE_PROBE, true,
			    "GPUDirect RDMA is not ready (neither nvidia_peermem nor nv_peer_mem is loaded, and "
			    "DMA-BUF is not usable): a level cannot make it work");
	} else if (ll_facts_gdr_usable(f) == LL_UNKNOWN) {
		plan_decide(s, "NCCL_NET_GDR_LEVEL", NULL, LL_SOURCE_PROBE, true,
			    "GPUDirect RDMA readiness unknown (no peer-memory module facts): NCCL decides");
	} else if (net->gdr_needed == LL_PATH_UNKNOWN) {
		plan_decide(s, "NCCL_NET_GDR_LEVEL", NULL, LL_SOURCE_PROBE, true,
			    "PCIe distance between some GPU and the chosen NICs unknown");
	} else {
		/* NCCL has no NODE class; between host bridges of one NUMA node it says PHB. */
		enum ll_path level = needed == LL_PATH_NODE ? LL_PATH_PHB : needed;

		plan_decide(s, "NCCL_NET_GDR_LEVEL", ll_path_name(level), LL_SOURCE_PROBE, true,
			    "every GPU's nearest chosen NIC is within %s (farthest: GPU %s to %s, %s); GPUDirect "
			    "RDMA through %s",
			    ll_path_name(level), f->gpus[worst_gpu].busid ? f->gpus[worst_gpu].busid : "?",
			    f->rdma[worst_dev].name, ll_path_name(needed),
			    f->gdr_ready == LL_YES && f->gdr_module ? f->gdr_module
			    : f->gdr_ready == LL_YES		    ? "a peer-memory module"
								    : "DMA-BUF (NVIDIA's open kernel module)");
	}
}

/* The lowest index of a RoCE v2 GID with an IPv4-mapped address; -1 none; -2 types unknown. */
static int port_roce_v2_index(const struct ll_rdma_port *p)
{
	bool types_known = p->n_gids > 0;
	int best = -1;

	for (size_t i = 0; i < p->n_gids; i++) {
		const struct ll_gid *g = &p->gids[i];

		if (g->type == LL_GID_TYPE_UNKNOWN)
			types_known = false;
		if (g->type == LL_GID_TYPE_ROCE_V2 && g->ipv4_mapped && !g->link_local &&
		    (best < 0 || (int)g->index < best))
			best = (int)g->index;
	}
	return best >= 0 ? best : types_known ? -1 : -2;
}

static void decide_gid_index(struct plan_state *s)
{
	const struct ll_facts *f = s->f;
	const struct plan_net *net = &s->net;
	struct ll_buf per_port, missing, unknown;
	int common = -1;
	bool disagree = false;
	char num[16], ver[32];
	const char *since;

	if (net->n_chosen == 0 || net->link_layer != LL_LINK_LAYER_ETHERNET)
		return;
	ll_buf_init(&per_port);
	ll_buf_init(&missing);
	ll_buf_init(&unknown);
	for (size_t i = 0; i < net->n_chosen; i++) {
		const struct ll_rdma_device *d = &f->rdma[net->chosen_dev[i]];
		const struct ll_rdma_port *p = &d->ports[net->chosen_port[i]];
		int idx = port_roce_v2_index(p);

		if (idx == -2) {
			ll_buf_addf(&unknown, "%s%s:%u", unknown.len ? ", " : "", d->name, p->number);
			continue;
		}
		if (idx == -1) {
			ll_buf_addf(&missing, "%s%s:%u", missing.len ? ", " : "", d->name, p->number);
			continue;
		}
		ll_buf_addf(&per_port, "%s%s:%u uses %d", per_port.len ? ", " : "", d->name, p->number, idx);
		if (common >= 0 && common != idx)
			disagree = true;
		if (common < 0)
			common = idx;
	}
	if (unknown.len) {
		plan_decide(s, "NCCL_IB_GID_INDEX", NULL, LL_SOURCE_PROBE, true,
			    "GID types unknown on %s (snapshot without RoCE annotations): NCCL >= 2.21 picks by itself",
			    unknown.s);
	} else if (missing.len) {
		plan_decide(s, "NCCL_IB_GID_INDEX", NULL, LL_SOURCE_PROBE, true,
			    "no RoCE v2 GID with an IPv4 address on %s", missing.s);
		plan_lint(s, LL_LINT_WARNING, "NCCL_IB_GID_INDEX",
			  "no RoCE v2 GID with an IPv4-mapped address on %s: give the port's interface an IPv4 "
			  "address, or NCCL falls back to RoCE v1 / IPv6 GIDs", missing.s);
	} else if (disagree) {
		/* A shared index that is wrong for some ports breaks exactly those ports;
		 * unset lets NCCL >= 2.21 choose per port. */
		plan_decide(s, "NCCL_IB_GID_INDEX", NULL, LL_SOURCE_PROBE, true,
			    "ports disagree (%s): left unset so NCCL >= 2.21 picks per port", per_port.s);
		plan_lint(s, LL_LINT_WARNING, "NCCL_IB_GID_INDEX",
			  "RoCE v2 GID index differs between ports (%s): one NCCL_IB_GID_INDEX cannot fit all; "
			  "NCCL older than 2.21 will use the wrong GID on some ports", per_port.s);
	} else if (plan_nccl_has(s, "roce-gid-auto", &since) == LL_YES) {
		/* A fixed index is wrong wherever another GID table differs (a container
		 * that shows a subset); NCCL's own choice follows each table. */
		plan_decide(s, "NCCL_IB_GID_INDEX", NULL, LL_SOURCE_PROBE, true,
			    "NCCL %s picks the RoCE v2 GID with an IPv4 address on each port itself (%s); here that "
			    "is index %d",
			    plan_nccl_version_text(s, ver, sizeof(ver)), since, common);
	} else {
		snprintf(num, sizeof(num), "%d", common);
		plan_decide(s, "NCCL_IB_GID_INDEX", num, LL_SOURCE_PROBE, true,
			    "RoCE v2 GID with an IPv4-mapped address, same index on every chosen port%s",
			    plan_nccl_has(s, "roce-gid-auto", NULL) == LL_NO ? " (this NCCL predates 2.21.5, which "
									     "picks it itself)"
									   : " (NCCL version unknown: set for "
									     "NCCL older than 2.21.5 too)");
	}
	ll_buf_release(&per_port);
	ll_buf_release(&missing);
	ll_buf_release(&unknown);
}

/* ---- RoCE traffic class (docs/roce.md) ---------------------------------------

 * NCCL puts NCCL_IB_TC in the GRH traffic class of every RoCE QP and NCCL_IB_SL in
 * its address vector; NCCL_IB_FIFO_TC (2.22.3 and later) in the QPs of its control
 * messages, NCCL_IB_TC when unset (NCCL src/transport/net_ib, ncclIbRtrQp). The
 * class's upper six bits are the DSCP, the lower two the ECN field (RFC 2474, RFC
 * 3168): a DSCP the port's DCB table maps to the one priority with PFC gives a
 * lossless class; with ECN on for that priority, ECT(0) (binary 10) lets the switches
 * mark congestion for DCQCN. */

/* NVIDIA's RoCE configuration guides put RoCE on DSCP 26 (AF31) and CNPs on 48: 26
 * is taken when it maps to the lossless priority, else the lowest DSCP that does. */
#define LL_ROCE_PREFERRED_DSCP 26

/* The single priority set in mask, -1 when none or several. */
static int single_priority(int mask)
{
	return mask > 0 && (mask & (mask - 1)) == 0 ? __builtin_ctz((unsigned)mask) : -1;
}

enum class_kind { CLASS_NONE = 0, CLASS_FORCED, CLASS_DERIVED, CLASS_SL };

struct port_class {
	enum class_kind kind;
	int value;       /* the class (FORCED, DERIVED) or the service level (SL) */
	int dscp, prio;  /* DERIVED: the DSCP and its priority */
	bool ecn;        /* DERIVED: ECN on for the priority */
	char *missing;   /* NONE: what is missing, malloc'ed */
};

static void port_class_of(const struct ll_port_qos *q, struct port_class *c)
{
	const char *dcb_why = ll_port_qos_dcb_why(q);
	int prio, dscp = -1;

	memset(c, 0, sizeof(*c));
	/* Facts built without the QoS reader (a plain export, an older snapshot) leave
	 * every field unread, whatever its value. */
	if (!q->read) {
		c->missing = ll_strdup("QoS state not read (a snapshot without llmlaunch's QoS annotations)");
		return;
	}
	if (q->forced_tclass >= 0) {
		c->kind = CLASS_FORCED;
		c->value = q->forced_tclass;
		return;
	}
	if (dcb_why) {
		c->missing = ll_asprintf("DCB state unknown: %s", dcb_why);
		return;
	}
	if (q->pfc_mask < 0 || q->trust == LL_QOS_TRUST_UNKNOWN) {
		c->missing = ll_strdup("DCB answered without PFC or APP table");
		return;
	}
	if (q->pfc_mask == 0) {
		c->missing = ll_strdup("no priority has PFC (lossy RoCE)");
		return;
	}
	prio = single_priority(q->pfc_mask);
	if (prio < 0) {
		c->missing = ll_strdup("several priorities have PFC: which one RoCE should use is site policy");
		return;
	}
	if (q->trust == LL_QOS_TRUST_PCP) {
		/* Trust PCP: the NIC sends RoCE on the priority of the QP's SL (mlx5 puts the
		 * address vector's SL in the frame's 802.1p priority). */
		c->kind = CLASS_SL;
		c->value = prio;
		return;
	}
	if (q->dscp_prio[LL_ROCE_PREFERRED_DSCP] == prio)
		dscp = LL_ROCE_PREFERRED_DSCP;
	for (int d = 0; d < 64 && dscp < 0; d++)
		if (q->dscp_prio[d] == prio)
			dscp = d;
	if (dscp < 0) {
		c->missing = ll_asprintf("trust DSCP, PFC on priority %d, but no DSCP maps to it", prio);
		return;
	}
	c->kind = CLASS_DERIVED;
	c->dscp = dscp;
	c->prio = prio;
	c->ecn = q->ecn_rp_mask > 0 && (q->ecn_rp_mask & (1 << prio));
	c->value = dscp << 2 | (c->ecn ? 2 : 0);
}

static void decide_traffic_class(struct plan_state *s)
{
	const struct ll_facts *f = s->f;
	const struct plan_net *net = &s->net;
	struct port_class first = { 0 };
	struct ll_buf ports, missing, differ;
	bool same = true;
	char num[16];

	if (net->n_chosen == 0 || net->link_layer != LL_LINK_LAYER_ETHERNET)
		return;
	ll_buf_init(&ports);
	ll_buf_init(&missing);
	ll_buf_init(&differ);
	for (size_t i = 0; i < net->n_chosen; i++) {
		const struct ll_rdma_device *d = &f->rdma[net->chosen_dev[i]];
		const struct ll_rdma_port *p = &d->ports[net->chosen_port[i]];
		struct port_class c;

		port_class_of(&p->qos, &c);
		ll_buf_addf(&ports, "%s%s:%u", ports.len ? ", " : "", d->name, p->number);
		if (c.kind == CLASS_NONE)
			ll_buf_addf(&missing, "%s%s:%u: %s", missing.len ? "; " : "", d->name, p->number, c.missing);
		ll_buf_addf(&differ, "%s%s:%u %s %d", differ.len ? ", " : "", d->name, p->number,
			    c.kind == CLASS_FORCED ? "forced class" : c.kind == CLASS_DERIVED ? "class"
				: c.kind == CLASS_SL ? "SL" : "unknown", c.value);
		if (i == 0)
			first = c;
		else {
			same &= c.kind == first.kind && c.value == first.value;
			free(c.missing);
		}
	}
	if (missing.len) {
		plan_decide(s, "NCCL_IB_TC", NULL, LL_SOURCE_PROBE, true,
			    "no lossless class can be derived (%s): NCCL's default class 0", missing.s);
		plan_decide(s, "NCCL_IB_SL", NULL, LL_SOURCE_PROBE, true, "no lossless priority known: NCCL's default 0");
	} else if (!same) {
		plan_decide(s, "NCCL_IB_TC", NULL, LL_SOURCE_PROBE, true,
			    "the ports' classes differ (%s): one NCCL_IB_TC cannot fit all, left unset", differ.s);
		plan_decide(s, "NCCL_IB_SL", NULL, LL_SOURCE_PROBE, true, "the ports' classes differ (%s)", differ.s);
		plan_lint(s, LL_LINT_WARNING, "NCCL_IB_TC",
			  "the RoCE ports' QoS differs (%s): NCCL uses one class on all of them", differ.s);
	} else if (first.kind == CLASS_FORCED) {
		plan_decide(s, "NCCL_IB_TC", NULL, LL_SOURCE_PROBE, true,
			    "the driver forces class %d on %s (MLNX_OFED tc/N/traffic_class): the driver decides, "
			    "whatever NCCL asks for; left unset", first.value, ports.s);
		plan_decide(s, "NCCL_IB_SL", NULL, LL_SOURCE_PROBE, true,
			    "the driver forces class %d: its priority follows from it; NCCL's default 0", first.value);
	} else if (first.kind == CLASS_SL) {
		snprintf(num, sizeof(num), "%d", first.value);
		plan_decide(s, "NCCL_IB_TC", NULL, LL_SOURCE_PROBE, true,
			    "trust PCP on %s: the class's DSCP does not choose the priority; NCCL's default 0", ports.s);
		plan_decide(s, "NCCL_IB_SL", num, LL_SOURCE_PROBE, true,
			    "trust PCP, PFC only on priority %d on %s: the service level is the frames' priority",
			    first.value, ports.s);
	} else {
		snprintf(num, sizeof(num), "%d", first.value);
		plan_decide(s, "NCCL_IB_TC", num, LL_SOURCE_PROBE, true,
			    "trust DSCP, PFC only on priority %d on %s; DSCP %d maps to it: class %d = DSCP %d << 2%s",
			    first.prio, ports.s, first.dscp, first.value, first.dscp,
			    first.ecn ? " | 2 (ECT(0): ECN is on for that priority)"
				      : " (ECN bits clear: ECN off or unknown for that priority)");
		plan_decide(s, "NCCL_IB_SL", NULL, LL_SOURCE_PROBE, true,
			    "trust DSCP: the priority comes from the class's DSCP; NCCL's default 0");
	}
	{
		const char *since;
		enum ll_tristate has = plan_nccl_has(s, "ib-fifo-tc", &since);
		char ver[32];

		if (has == LL_YES)
			plan_decide(s, "NCCL_IB_FIFO_TC", NULL, LL_SOURCE_PROBE, true,
				    "NCCL %s sends its control messages with NCCL_IB_TC while this is unset (%s)",
				    plan_nccl_version_text(s, ver, sizeof(ver)), since);
		else if (has == LL_NO)
			plan_decide(s, "NCCL_IB_FIFO_TC", NULL, LL_SOURCE_PROBE, true,
				    "NCCL %s has no NCCL_IB_FIFO_TC (%s): its control messages use NCCL_IB_TC",
				    plan_nccl_version_text(s, ver, sizeof(ver)), since);
		else
			plan_decide(s, "NCCL_IB_FIFO_TC", NULL, LL_SOURCE_PROBE, true,
				    "NCCL version unknown; NCCL 2.22.3 and later send control messages with NCCL_IB_TC "
				    "while this is unset, older NCCL ignore it (%s)", since);
	}
	free(first.missing);
	ll_buf_release(&ports);
	ll_buf_release(&missing);
	ll_buf_release(&differ);
}

static void decide_rdma(struct plan_state *s)
{
	const struct ll_facts *f = s->f;
	struct plan_net *net = &s->net;
	struct port_eval *ev = NULL;
	size_t n_ev = 0, n_port;
	int count[3] = { 0, 0, 0 }; /* by enum ll_link_layer */
	enum ll_link_layer major;
	bool unknown_state = false, inferred = false, class_unknown = false;
	struct ll_buf value, left, why;

	if (!f->netdevs_known) {
		/* "No RDMA device" is not a fact here: disabling IB would be a guess. */
		net->states_unknown = net->devices_unknown = true;
		plan_decide(s, "NCCL_IB_DISABLE", NULL, LL_SOURCE_PROBE, true, "%s: NCCL finds out at run time",
			    LL_PLAN_NETDEVS_UNKNOWN);
		plan_decide(s, "NCCL_IB_HCA", NULL, LL_SOURCE_PROBE, true, "RDMA devices unknown");
		return;
	}
	for (size_t d = 0; d < f->n_rdma; d++) {
		const struct ll_rdma_device *dev = &f->rdma[d];
		const char *unsuitable = device_unsuitable(dev);

		if (dev->n_ports == 0) {
			/* The device is there, its ports are not recorded: NCCL may well
			 * find one ACTIVE, so nothing is disabled on its account. */
			struct port_eval *e = ll_array_push(&ev, &n_ev, sizeof(*e));

			e->dev = d;
			e->port = NO_PORT;
			e->excluded = ll_strdup(unsuitable ? unsuitable : "ports not in the snapshot");
			if (!unsuitable)
				unknown_state = true;
			else if (dev->rdma_class == LL_RDMA_CLASS_UNKNOWN)
				class_unknown = true;
			continue;
		}
		for (size_t p = 0; p < dev->n_ports; p++) {
			const struct ll_rdma_port *port = &dev->ports[p];
			struct port_eval *e = ll_array_push(&ev, &n_ev, sizeof(*e));

			e->dev = d;
			e->port = p;
			if (unsuitable) {
				e->excluded = ll_strdup(unsuitable);
				/* A device nothing can be said about may well be one NCCL drives. */
				if (dev->rdma_class == LL_RDMA_CLASS_UNKNOWN && port->state != LL_PORT_DOWN &&
				    port->state != LL_PORT_INIT && port->state != LL_PORT_ARMED)
					class_unknown = true;
			} else if (port->state == LL_PORT_STATE_UNKNOWN) {
				e->excluded = ll_strdup("state unknown");
				unknown_state = true;
			} else if (port->state != LL_PORT_ACTIVE && port->state != LL_PORT_ACTIVE_DEFER) {
				e->excluded = ll_strdup(ll_port_state_name(port->state));
			} else {
				e->ll = port_link_layer(f, dev, port, &e->inferred);
				count[e->ll]++;
				if (e->ll == LL_LINK_LAYER_INFINIBAND)
					net->active_ib_ports++;
			}
		}
	}

	/* Majority link layer; a tie goes to InfiniBand, NCCL's native transport. */
	if (count[LL_LINK_LAYER_INFINIBAND] + count[LL_LINK_LAYER_ETHERNET] == 0)
		major = LL_LINK_LAYER_UNKNOWN;
	else if (count[LL_LINK_LAYER_INFINIBAND] >= count[LL_LINK_LAYER_ETHERNET])
		major = LL_LINK_LAYER_INFINIBAND;
	else
		major = LL_LINK_LAYER_ETHERNET;
	for (size_t i = 0; i < n_ev; i++) {
		if (ev[i].excluded || ev[i].ll == major)
			continue;
		ev[i].excluded = ev[i].ll == LL_LINK_LAYER_UNKNOWN
					 ? ll_asprintf("link layer unknown while the chosen ports are %s", ll_text(major))
					 : ll_asprintf("minority link layer %s: %d %s port%s chosen", ll_text(ev[i].ll),
						       count[major], ll_text(major), count[major] == 1 ? "" : "s");
	}
	if (s->n_gpus > 0)
		filter_by_distance(s, ev, n_ev);

	ll_buf_init(&value);
	ll_buf_init(&left);
	ll_buf_init(&why);
	for (size_t i = 0; i < n_ev; i++) {
		if (ev[i].excluded) {
			/* Ports left out for one reason are listed together, the reason once
			 * (a p4d's four EFA devices share one long explanation). */
			bool listed = false;

			for (size_t k = 0; k < i && !listed; k++)
				listed = ev[k].excluded && strcmp(ev[k].excluded, ev[i].excluded) == 0;
			if (listed)
				continue;
			if (left.len)
				ll_buf_add(&left, ", ");
			port_label(&left, f, &ev[i]);
			for (size_t k = i + 1; k < n_ev; k++)
				if (ev[k].excluded && strcmp(ev[k].excluded, ev[i].excluded) == 0) {
					ll_buf_add(&left, ", ");
					port_label(&left, f, &ev[k]);
				}
			ll_buf_addf(&left, " (%s)", ev[i].excluded);
			continue;
		}
		ll_buf_add(&value, value.len ? "," : "=");
		port_label(&value, f, &ev[i]);
		n_port = net->n_chosen;
		*(size_t *)ll_array_push(&net->chosen_dev, &net->n_chosen, sizeof(size_t)) = ev[i].dev;
		*(size_t *)ll_array_push(&net->chosen_port, &n_port, sizeof(size_t)) = ev[i].port;
		inferred |= ev[i].inferred;
	}
	net->link_layer = major;
	net->link_layer_inferred = inferred;
	net->states_unknown = net->n_chosen == 0 && unknown_state;
	net->class_unknown = net->n_chosen == 0 && class_unknown;
	if (net->n_chosen == 0)
		find_plugin_fabric(s);

	if (net->n_chosen > 0) {
		ll_buf_addf(&why, "%zu ACTIVE %s port%s", net->n_chosen,
			    major == LL_LINK_LAYER_UNKNOWN ? "RDMA (link layer unknown)" : ll_text(major),
			    net->n_chosen == 1 ? "" : "s");
		if (inferred)
			ll_buf_add(&why, " (link layer inferred from LID, GIDs or interface kind)");
		ll_buf_add(&why, s->n_gpus > 0 ? " serving the GPUs" : " (no GPUs: every port of the majority link layer)");
		if (left.len)
			ll_buf_addf(&why, "; left out %s", left.s);
		plan_decide(s, "NCCL_IB_DISABLE", NULL, LL_SOURCE_PROBE, true, "RDMA ports are usable");
		plan_decide(s, "NCCL_IB_HCA", value.s, LL_SOURCE_PROBE, true, "%s", why.s);
	} else if (net->plugin_fabric && net->plugin_installed != LL_NO) {
		/* The fabric is there and NCCL gets to it through the plugin (or may:
		 * whether it is installed is not recorded): the IB transport has no part. */
		plan_decide(s, "NCCL_IB_DISABLE", NULL, LL_SOURCE_PROBE, true,
			    "the network is %s through aws-ofi-nccl%s; NCCL's IB transport has no device here",
			    fabric_text(net->plugin_fabric),
			    net->plugin_installed == LL_UNKNOWN ? " (whether it is installed is unknown)" : "");
		plan_decide(s, "NCCL_IB_HCA", NULL, LL_SOURCE_PROBE, true, "%s: never NCCL_IB_HCA: %s",
			    net->plugin_devices, left.len ? left.s : fabric_text(net->plugin_fabric));
	} else if (net->states_unknown || net->class_unknown) {
		plan_decide(s, "NCCL_IB_DISABLE", NULL, LL_SOURCE_PROBE, true, "%s: NCCL finds out at run time",
			    net->states_unknown ? "RDMA port states unknown" : "what drives some RDMA device is unknown");
		plan_decide(s, "NCCL_IB_HCA", NULL, LL_SOURCE_PROBE, true, "no port known to be usable: %s", left.s);
	} else if (net->plugin_fabric) {
		/* Known to be missing: NCCL's IB transport finds nothing it can drive, and
		 * NCCL falls back to TCP sockets; say so, and say what would fix it. */
		plan_decide(s, "NCCL_IB_DISABLE", "1", LL_SOURCE_PROBE, true,
			    "no device NCCL's IB transport can drive (%s); aws-ofi-nccl, which %s needs, is not "
			    "installed: TCP sockets",
			    left.len ? left.s : net->plugin_devices, fabric_text(net->plugin_fabric));
		plan_decide(s, "NCCL_IB_HCA", NULL, LL_SOURCE_PROBE, true, "no usable RDMA port: %s",
			    left.len ? left.s : net->plugin_devices);
	} else if (f->n_rdma == 0) {
		plan_decide(s, "NCCL_IB_DISABLE", "1", LL_SOURCE_PROBE, true, "no RDMA device on this node");
		plan_decide(s, "NCCL_IB_HCA", NULL, LL_SOURCE_PROBE, true, "no RDMA device");
	} else {
		plan_decide(s, "NCCL_IB_DISABLE", "1", LL_SOURCE_PROBE, true, "no usable RDMA port: %s", left.s);
		plan_decide(s, "NCCL_IB_HCA", NULL, LL_SOURCE_PROBE, true, "no usable RDMA port");
	}
	for (size_t i = 0; i < n_ev; i++)
		free(ev[i].excluded);
	free(ev);
	ll_buf_release(&value);
	ll_buf_release(&left);
	ll_buf_release(&why);
}

/* What aws-ofi-nccl needs to be loaded and to drive the fabric, as its documents
 * and the fabric's vendor state it. */
static void decide_plugin(struct plan_state *s)
{
	const struct ll_facts *f = s->f;
	const struct plan_net *net = &s->net;
	const char *slurm_net;

	if (!net->plugin_fabric)
		return;
	if (net->plugin_installed == LL_NO) {
		struct ll_buf off;

		ll_buf_init(&off);
		for (size_t i = 0; i < f->n_net_plugins_off_path; i++)
			ll_buf_addf(&off, "%s%s", off.len ? ", " : "", f->net_plugins_off_path[i]);
		plan_lint(s, LL_LINT_WARNING, "NCCL_NET_PLUGIN",
			  "%s: %s, which NCCL's IB transport cannot drive; NCCL needs the aws-ofi-nccl net plugin "
			  "(%s.so, with libfabric's %s provider), which is not on the library path%s%s%s; "
			  "without it this job's traffic between nodes uses TCP sockets%s%s",
			  net->plugin_devices, fabric_text(net->plugin_fabric), net->plugin_prefix, net->plugin_fabric,
			  off.len ? " (installed as " : "", off.len ? off.s : "",
			  off.len ? ": add its directory to LD_LIBRARY_PATH)" : "",
			  net->socket_if ? " over " : "", net->socket_if ? net->socket_if->name : "");
		ll_buf_release(&off);
		return;
	}
	if (net->plugin_installed == LL_UNKNOWN) {
		plan_lint(s, LL_LINT_INFO, "NCCL_NET_PLUGIN",
			  "%s: %s, reached only through the aws-ofi-nccl net plugin; whether it is installed is not "
			  "recorded here: without it NCCL uses TCP sockets",
			  net->plugin_devices, fabric_text(net->plugin_fabric));
		return;
	}
	{
		const char *path = f->net_plugins[net->plugin_index], *slash = strrchr(path, '/');
		const char *base = slash ? slash + 1 : path;

		if (net->plugin_is_default)
			plan_decide(s, "NCCL_NET_PLUGIN", NULL, LL_SOURCE_PROBE, true,
				    "%s loads %s (aws-ofi-nccl) by itself: it is the first %s.so on the library path",
				    s->vendor == LL_GPU_VENDOR_AMD ? "RCCL" : "NCCL", path, net->plugin_prefix);
		else
			plan_decide(s, "NCCL_NET_PLUGIN",
				    strcmp(base, "libnccl-net-ofi.so") == 0 || strcmp(base, "librccl-net-ofi.so") == 0 ? "ofi"
				    : strcmp(base, "libnccl-net-aws-ofi.so") == 0				     ? "aws-ofi"
													     : path,
				    LL_SOURCE_PROBE, true,
				    "aws-ofi-nccl is %s, which NCCL loads only when NCCL_NET_PLUGIN names it "
				    "(libnccl-net-NAME.so: NCCL src/plugin/plugin_open.cc; aws-ofi-nccl src/Makefile.am)",
				    path);
	}
	if (strcmp(net->plugin_fabric, "efa") == 0) {
		plan_decide(s, "FI_PROVIDER", "efa", LL_SOURCE_PROBE, true,
			    "libfabric's provider for AWS EFA (aws-ofi-nccl doc/efa-env-var.md; plugins after 1.5 "
			    "choose it themselves on EC2, the variable keeps libfabric from any other provider)");
		return;
	}
	/* HPE Slingshot: HewlettPackard/shs-ccl-docs ccl_env.sh and nccl/nccl_tuning_guide.md
	 * (rccl/rccl_tuning_guide.md for AMD GPUs). */
	if (s->vendor == LL_GPU_VENDOR_AMD && s->n_gpus > 0)
		plan_decide(s, "HSA_FORCE_FINE_GRAIN_PCIE", "1", LL_SOURCE_PROBE, true,
			    "HPE for RCCL over Slingshot: peer-to-peer access with large BAR addressing "
			    "(shs-ccl-docs rccl_tuning_guide.md)");
	plan_decide(s, "FI_MR_CACHE_MONITOR", "userfaultfd", LL_SOURCE_PROBE, true,
		    "HPE's setting for NCCL over Slingshot: the memory registration cache monitor (shs-ccl-docs)");
	plan_decide(s, "FI_CXI_DISABLE_HOST_REGISTER", "1", LL_SOURCE_PROBE, true,
		    "HPE: avoids provider allocation calls that may deadlock with CUDA (shs-ccl-docs)");
	plan_decide(s, "FI_CXI_DEFAULT_CQ_SIZE", "131072", LL_SOURCE_PROBE, true,
		    "HPE: completion queues large enough for large jobs (shs-ccl-docs)");
	plan_decide(s, "FI_CXI_DEFAULT_TX_SIZE", "2048", LL_SOURCE_PROBE, true,
		    "HPE: for jobs that depend on unexpected rendezvous messages (shs-ccl-docs)");
	plan_decide(s, "FI_CXI_RX_MATCH_MODE", "hybrid", LL_SOURCE_PROBE, true,
		    "HPE: software matching once the NIC's hardware resources are exhausted (shs-ccl-docs)");
	slurm_net = plan_environ_get(s->in, "SLURM_NETWORK");
	if (slurm_net && strstr(slurm_net, "disable_rdzv_get")) {
		plan_decide(s, "FI_CXI_RDZV_PROTO", "alt_read", LL_SOURCE_PROBE, true,
			    "HPE's rendezvous protocol for NCCL; the job has the driver setting it needs "
			    "(SLURM_NETWORK=%s)", slurm_net);
		plan_decide(s, "FI_CXI_RDZV_EAGER_SIZE", "0", LL_SOURCE_PROBE, true, "HPE, with alt_read");
		plan_decide(s, "FI_CXI_RDZV_THRESHOLD", "0", LL_SOURCE_PROBE, true, "HPE, with alt_read");
		plan_decide(s, "FI_CXI_RDZV_GET_MIN", "0", LL_SOURCE_PROBE, true, "HPE, with alt_read");
	} else {
		plan_decide(s, "FI_CXI_RDZV_PROTO", NULL, LL_SOURCE_PROBE, true,
			    "HPE's alt_read needs the CXI driver's rdzv_get_en=0 for the job (srun "
			    "--network=disable_rdzv_get), which SLURM_NETWORK does not show");
	}
	plan_decide(s, "NCCL_CROSS_NIC", "1", LL_SOURCE_PROBE, true,
		    "HPE: rings and trees may span NICs on Slingshot (shs-ccl-docs)");
}

int plan_net_decide(struct plan_state *s, struct ll_error *err)
{
	(void)err;
	plan_nccl_decide(s);
	decide_socket_if(s);
	decide_rdma(s);
	decide_plugin(s);
	decide_gid_index(s);
	decide_traffic_class(s);
	decide_gdr(s);
	return 0;
}
