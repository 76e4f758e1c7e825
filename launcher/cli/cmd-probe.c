/* llmlaunch probe: print what this node (or a snapshot) has, and optionally save
 * the annotated topology. Text and JSON come from the same calls (output.h). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "llmlaunch/cli.h"
#include "llmlaunch/output.h"
#include "llmlaunch/plan.h"

struct probe_options {
	bool json;
	const char *save;
};

static const char usage_text[] =
	"usage: llmlaunch probe [--json] [--save FILE] [--topology FILE | --fsroot DIR]\n"
	"\n"
	"Detect CPUs and NUMA nodes, GPUs with NVLink, RDMA devices and their ports,\n"
	"network interfaces, GPUDirect RDMA readiness, and the PCIe path class of every\n"
	"GPU-NIC pair (PIX, PXB, PHB, NODE, SYS, as in 'nvidia-smi topo -m').\n"
	"Unknown facts print as 'unknown' (null in JSON); nothing is guessed.\n"
	"\n"
	"Options:\n"
	"  --json            one JSON object on stdout instead of text\n"
	"  --save FILE       write the annotated topology as hwloc XML (lstopo reads it;\n"
	"                    --topology FILE replays it on any machine)\n"
	LL_COMMON_HELP
	"  -h, --help        show this help\n"
	"\n"
	"Examples:\n"
	"  llmlaunch probe\n"
	"  llmlaunch probe --save node.xml        # attach node.xml to a bug report\n"
	"  llmlaunch probe --topology node.xml --json\n";

enum { OPT_JSON = 1, OPT_SAVE };

/* Returns <0 usage error, 0 exit now (help), 1 continue. */
static int parse_argv(int argc, char **argv, struct ll_ctx *ctx, struct probe_options *o)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "save", required_argument, NULL, OPT_SAVE },
		{ "help", no_argument, NULL, 'h' },
		LL_COMMON_LONG_OPTIONS,
		{ 0 },
	};
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_SAVE:
			o->save = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			if (ll_cmd_option_fallback("probe", c, optarg, argv, ctx, longopts) < 0)
				return -EINVAL;
		}
	}
	return ll_cmd_options_done("probe", argc, argv, ctx);
}

static void print_host(struct ll_out *o, const struct ll_facts *f)
{
	ll_out_text(o, "Host\n");
	ll_out_open_object(o, "host");
	ll_out_string(o, "hostname", "  hostname   %s\n", f->hostname);
	ll_out_string(o, "dmi_product_name", "  product    %s\n", f->dmi_product_name);
	ll_out_text(o, "  source     %s\n", f->source ? f->source : "unknown");
	ll_out_int(o, "packages", "  %s package(s), ", f->n_packages, f->n_packages >= 0);
	ll_out_int(o, "cores", "%s cores, ", (long long)f->n_cores, !f->cores_unknown);
	ll_out_int(o, "pus", "%s PUs, ", f->n_pus, f->n_pus >= 0);
	ll_out_int(o, "n_numa_nodes", "%s NUMA node(s)\n", (long long)f->n_numa_nodes, true);
	ll_out_open_array(o, "numa_nodes");
	for (size_t i = 0; i < f->n_numa_nodes; i++) {
		const struct ll_numa_node *n = &f->numa_nodes[i];

		ll_out_open_object(o, NULL);
		ll_out_int(o, "os_index", "  NUMA %s", n->os_index, true);
		ll_out_string(o, "cpuset", "     cpus %s", n->cpuset);
		ll_out_int(o, "cores", " (%s cores)\n", n->n_cores, n->n_cores >= 0);
		ll_out_close_object(o);
	}
	ll_out_close_array(o);
	ll_out_open_array(o, "core_list");
	for (size_t i = 0; i < f->n_cores; i++) {
		ll_out_open_object(o, NULL);
		ll_out_string(o, "cpuset", NULL, f->cores[i].cpuset);
		ll_out_int(o, "numa_node", NULL, f->cores[i].numa_node, f->cores[i].numa_node >= 0);
		ll_out_close_object(o);
	}
	ll_out_close_array(o);
	ll_out_close_object(o);
}

/* A section's heading: its count, "none found", or why the topology cannot tell
 * (then the JSON key `known_key` is false and the list is empty, not "none"). */
static void print_heading(struct ll_out *o, const char *known_key, bool known, const char *title, size_t n,
			  const char *unknown_why)
{
	ll_out_bool(o, known_key, NULL, known);
	if (!known)
		ll_out_text(o, "\n%s: unknown (%s)\n", title, unknown_why);
	else
		ll_out_text(o, "\n%s (%zu)\n%s", title, n, n ? "" : "  none found\n");
}

/* Multi-node NVLink registration (NVML fabric info), only where NVML told it. */
static void print_nvfabric(struct ll_out *o, const struct ll_gpu_fabric_info *fi)
{
	if (fi->state == LL_FABRIC_UNKNOWN)
		return;
	ll_out_open_object(o, "nvlink_fabric");
	ll_out_string(o, "state", "        NVLink fabric %s", ll_fabric_state_name(fi->state));
	ll_out_int(o, "status", fi->status >= 0 ? " (status %s)" : NULL, fi->status, fi->status >= 0);
	ll_out_string(o, "cluster_uuid", fi->cluster_uuid ? ", domain %s" : NULL, fi->cluster_uuid);
	ll_out_int(o, "clique_id", fi->clique_id >= 0 ? ", clique %s" : NULL, fi->clique_id, fi->clique_id >= 0);
	ll_out_int(o, "health_mask", fi->health_mask >= 0 ? ", health mask %s" : NULL, fi->health_mask,
		   fi->health_mask >= 0);
	ll_out_text(o, "\n");
	ll_out_close_object(o);
}

static void print_gpus(struct ll_out *o, const struct ll_facts *f)
{
	const char *full = ll_facts_gpus_unknown_why(f);
	_cleanup_free_ char *why = ll_strndup(full, strstr(full, " (") ? (size_t)(strstr(full, " (") - full) : strlen(full));

	print_heading(o, "gpus_known", f->gpus_known, "GPUs", f->n_gpus, why);
	ll_out_open_array(o, "gpus");
	for (size_t i = 0; i < f->n_gpus; i++) {
		const struct ll_gpu *g = &f->gpus[i];
		char id[16];
		int near = ll_facts_nearest_rdma(f, i);

		snprintf(id, sizeof(id), "%04x:%04x", g->vendor_id, g->device_id);
		ll_out_open_object(o, NULL);
		ll_out_int(o, "index", "  GPU%s", (long long)i, true);
		ll_out_string(o, "busid", "  %s", g->busid);
		ll_out_string(o, "vendor", "  %s", ll_gpu_vendor_name(g->vendor));
		ll_out_string(o, "pci_id", " %s", id);
		ll_out_int(o, "partition", g->partition > 0 ? "  partition %s" : NULL, g->partition, g->partition > 0);
		ll_out_string(o, "model", "  %s\n", g->model);
		ll_out_int(o, "numa_node", "        NUMA %s", g->numa_node, g->numa_node >= 0);
		ll_out_string(o, "cpuset", ", cpus %s\n", g->cpuset);
		if (g->uuid || ll_out_is_json(o))
			ll_out_string(o, "uuid", "        uuid %s\n", g->uuid);
		/* NVML's link counts exist only on live probes with a driver: no noise otherwise. */
		ll_out_int(o, "nvlinks_active", g->nvlinks_active >= 0 ? "        NVLinks active %s" : NULL,
			   g->nvlinks_active, g->nvlinks_active >= 0);
		ll_out_int(o, "nvlinks_inactive", g->nvlinks_active >= 0 ? ", inactive %s\n" : NULL,
			   g->nvlinks_inactive, g->nvlinks_inactive >= 0);
		print_nvfabric(o, &g->nvfabric);
		ll_out_open_array(o, "nvlinks");
		for (size_t k = 0; k < g->n_nvlinks; k++) {
			const struct ll_nvlink *l = &g->nvlinks[k];

			ll_out_open_object(o, NULL);
			ll_out_string(o, "fabric", "          %s", ll_gpu_fabric_name(l->fabric));
			ll_out_string(o, "remote", " to %s", ll_nvlink_remote_name(l->remote));
			ll_out_int(o, "remote_gpu", l->remote_gpu >= 0 ? " GPU%s" : NULL, l->remote_gpu,
				   l->remote_gpu >= 0);
			ll_out_string(o, "remote_busid", l->remote_busid ? " %s" : NULL, l->remote_busid);
			ll_out_int(o, "bandwidth_mbps", ", %s MB/s\n", l->bandwidth_mbps, l->bandwidth_mbps >= 0);
			ll_out_close_object(o);
		}
		ll_out_close_array(o);
		ll_out_string(o, "nearest_rdma", near >= 0 ? "        nearest RDMA device %s" : NULL,
			      near >= 0 ? f->rdma[near].name : NULL);
		ll_out_string(o, "nearest_rdma_path", near >= 0 ? " (%s)\n" : NULL,
			      near >= 0 ? ll_path_name(ll_facts_gpu_nic(f, i, (size_t)near)) : NULL);
		ll_out_close_object(o);
	}
	ll_out_close_array(o);
	ll_out_int(o, "nvswitches", "  NVSwitches: %s\n", (long long)f->n_nvswitches, true);
}

/* Priorities of a mask as a JSON array ("3,5" in text); null / "unknown" when mask < 0. */
static void print_priorities(struct ll_out *o, const char *key, const char *fmt, int mask)
{
	char text[24] = "";
	size_t len = 0;

	if (ll_out_is_json(o)) {
		if (mask < 0) {
			ll_out_string(o, key, NULL, NULL);
			return;
		}
		ll_out_open_array(o, key);
		for (int p = 0; p < 8; p++)
			if (mask & (1 << p))
				ll_out_int(o, NULL, NULL, p, true);
		ll_out_close_array(o);
		return;
	}
	for (int p = 0; mask >= 0 && p < 8; p++)
		if (mask & (1 << p))
			len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%d", len ? "," : "", p);
	ll_out_string(o, key, fmt, mask < 0 ? NULL : mask == 0 ? "none" : text);
}

/* A RoCE port's QoS facts (docs/roce.md): each known, or unknown with its reason. */
static void print_port_qos(struct ll_out *o, const struct ll_port_qos *q)
{
	const char *dcb_why = ll_port_qos_dcb_why(q);
	const char *trust = q->trust == LL_QOS_TRUST_DSCP ? "dscp" : q->trust == LL_QOS_TRUST_PCP ? "pcp" : NULL;

	ll_out_open_object(o, "qos");
	ll_out_text(o, "        QoS:");
	if (q->forced_tclass >= 0)
		ll_out_int(o, "forced_tclass", " forced class %s (driver)", q->forced_tclass, true);
	else
		ll_out_int(o, "forced_tclass", q->forced_tclass == -1 ? " no forced class" : NULL, 0, false);
	ll_out_bool(o, "forced_tclass_known", NULL, q->forced_tclass != -2);
	ll_out_string(o, "forced_tclass_unknown", q->forced_why ? " forced class unknown (%s)" : NULL, q->forced_why);
	ll_out_string(o, "dcb", NULL, q->dcb);
	ll_out_string(o, "dcb_unknown", dcb_why ? "; DCB unknown (%s)" : NULL, dcb_why);
	ll_out_string(o, "trust", trust ? "; trust %s" : NULL, trust);
	print_priorities(o, "pfc_priorities", dcb_why ? NULL : q->pfc_mask == 0 ? ", no PFC" : ", PFC on %s", q->pfc_mask);
	if (ll_out_is_json(o)) {
		if (q->trust == LL_QOS_TRUST_UNKNOWN) {
			ll_out_string(o, "dscp_map", NULL, NULL);
		} else {
			ll_out_open_array(o, "dscp_map");
			for (int d = 0; d < 64; d++)
				if (q->dscp_prio[d] >= 0) {
					ll_out_open_object(o, NULL);
					ll_out_int(o, "dscp", NULL, d, true);
					ll_out_int(o, "priority", NULL, q->dscp_prio[d], true);
					ll_out_close_object(o);
				}
			ll_out_close_array(o);
		}
	} else if (q->trust == LL_QOS_TRUST_DSCP) {
		int shown = 0;

		ll_out_text(o, ", DSCP");
		for (int d = 0; d < 64; d++)
			if (q->dscp_prio[d] >= 0 && (q->pfc_mask < 0 || (q->pfc_mask & (1 << q->dscp_prio[d])))) {
				ll_out_text(o, " %d->%d", d, q->dscp_prio[d]);
				shown++;
			}
		if (!shown)
			ll_out_text(o, " none to a PFC priority");
	}
	print_priorities(o, "ecn_rp_priorities", q->ecn_rp_mask == 0 ? "; ECN off" : q->ecn_rp_mask > 0 ? "; ECN on %s" : NULL,
			 q->ecn_rp_mask);
	print_priorities(o, "ecn_np_priorities", q->ecn_np_mask > 0 ? " (notification point on %s)" : NULL,
			 q->ecn_np_mask);
	ll_out_string(o, "ecn_unknown", q->ecn_why ? "; ECN unknown (%s)" : NULL, q->ecn_why);
	ll_out_int(o, "cnp_dscp", q->cnp_dscp >= 0 ? ", CNP DSCP %s" : NULL, q->cnp_dscp, q->cnp_dscp >= 0);
	ll_out_int(o, "rdma_cm_tos", q->cm_tos >= 0 ? "; rdma_cm ToS %s" : NULL, q->cm_tos, q->cm_tos >= 0);
	ll_out_int(o, "netdev_mtu", "; MTU %s", q->netdev_mtu, q->netdev_mtu > 0);
	ll_out_int(o, "active_mtu", " (RoCE %s)\n", q->active_mtu, q->active_mtu > 0);
	ll_out_close_object(o);
}

static void print_rdma(struct ll_out *o, const struct ll_facts *f)
{
	print_heading(o, "netdevs_known", f->netdevs_known, "RDMA devices", f->n_rdma,
		      "the topology has no network OS devices");
	ll_out_open_array(o, "rdma_devices");
	for (size_t i = 0; i < f->n_rdma; i++) {
		const struct ll_rdma_device *d = &f->rdma[i];
		char id[16];

		snprintf(id, sizeof(id), "%04x:%04x", d->vendor_id, d->device_id);
		ll_out_open_object(o, NULL);
		ll_out_string(o, "name", "  %s", d->name);
		ll_out_string(o, "busid", "  %s", d->busid);
		ll_out_string(o, "pci_id", "  %s", d->busid ? id : NULL);
		ll_out_string(o, "model", "  %s\n", d->model);
		ll_out_string(o, "class", "      class %s", ll_rdma_class_name(d->rdma_class));
		ll_out_string(o, "class_reason", ": %s\n", d->class_why);
		ll_out_string(o, "provider", d->provider ? "      libfabric provider %s\n" : NULL, d->provider);
		ll_out_string(o, "driver", "      driver %s", d->driver);
		ll_out_int(o, "node_type", ", node type %s, ", d->node_type, d->node_type >= 0);
		ll_out_int(o, "numa_node", "NUMA %s", d->numa_node, d->numa_node >= 0);
		{
			static const char *const access_names[] = {
				[LL_UVERBS_UNKNOWN] = NULL, [LL_UVERBS_OK] = "ok", [LL_UVERBS_MISSING] = "missing",
				[LL_UVERBS_DENIED] = "denied",
			};

			ll_out_string(o, "uverbs", ", uverbs %s", d->uverbs && !*d->uverbs ? "none" : d->uverbs);
			ll_out_string(o, "uverbs_access", " (%s)", access_names[d->uverbs_access]);
		}
		ll_out_string(o, "node_guid", ", node GUID %s", d->node_guid);
		ll_out_text(o, ", netdevs");
		ll_out_open_array(o, "netdevs");
		for (size_t k = 0; k < d->n_netdevs; k++)
			ll_out_string(o, NULL, " %s", d->netdevs[k]);
		ll_out_close_array(o);
		ll_out_text(o, d->n_netdevs ? "\n" : " none\n");
		ll_out_open_array(o, "ports");
		for (size_t k = 0; k < d->n_ports; k++) {
			const struct ll_rdma_port *p = &d->ports[k];

			ll_out_open_object(o, NULL);
			ll_out_int(o, "number", "      port %s:", p->number, true);
			ll_out_string(o, "state", " %s", ll_port_state_name(p->state));
			ll_out_string(o, "phys_state", ", phys %s", p->phys_state);
			ll_out_string(o, "link_layer", ", %s", ll_link_layer_name(p->link_layer));
			ll_out_string(o, "rate", ", rate %s", p->rate);
			ll_out_double(o, "rate_gbps", NULL, p->rate_gbps, p->rate_gbps >= 0);
			ll_out_int(o, "lid", ", LID %s", p->lid, p->lid >= 0);
			ll_out_string(o, "netdev", ", netdev %s\n", p->netdev);
			ll_out_open_array(o, "gids");
			for (size_t g = 0; g < p->n_gids; g++) {
				const struct ll_gid *gid = &p->gids[g];

				ll_out_open_object(o, NULL);
				ll_out_int(o, "index", "        GID %s", gid->index, true);
				ll_out_string(o, "gid", "  %s", gid->gid);
				ll_out_string(o, "type", "  %s", ll_gid_type_name(gid->type));
				ll_out_bool(o, "ipv4_mapped", NULL, gid->ipv4_mapped);
				ll_out_bool(o, "link_local", NULL, gid->link_local);
				ll_out_text(o, "%s%s\n", gid->ipv4_mapped ? "  IPv4-mapped" : "",
					    gid->link_local ? "  link-local" : "");
				ll_out_close_object(o);
			}
			ll_out_close_array(o);
			if (p->link_layer == LL_LINK_LAYER_ETHERNET)
				print_port_qos(o, &p->qos);
			ll_out_close_object(o);
		}
		ll_out_close_array(o);
		ll_out_close_object(o);
	}
	ll_out_close_array(o);
}

static void print_netifs(struct ll_out *o, const struct ll_facts *f)
{
	if (f->netdevs_known)
		ll_out_text(o, "\nInterfaces (%zu)\n", f->n_netifs);
	else
		ll_out_text(o, "\nInterfaces: unknown\n");
	ll_out_open_array(o, "interfaces");
	for (size_t i = 0; i < f->n_netifs; i++) {
		const struct ll_netif *n = &f->netifs[i];

		ll_out_open_object(o, NULL);
		ll_out_string(o, "name", "  %-12s", n->name);
		ll_out_string(o, "kind", " %-10s", ll_netif_kind_name(n->kind));
		ll_out_bool(o, "virtual", NULL, n->virtual_);
		ll_out_text(o, " %s", n->virtual_ ? "virtual " : "physical");
		ll_out_string(o, "operstate", "  state %s", n->operstate);
		ll_out_bool(o, "up", NULL, n->up);
		ll_out_bool(o, "running", NULL, n->running);
		ll_out_int(o, "mtu", "  mtu %s", n->mtu, n->mtu >= 0);
		ll_out_int(o, "speed_mbps", n->speed_mbps >= 0 ? "  speed %s Mb/s" : "  speed %s", n->speed_mbps,
			   n->speed_mbps >= 0);
		ll_out_string(o, "mac", "\n      mac %s", n->mac);
		ll_out_string(o, "busid", n->busid ? "  pci %s" : NULL, n->busid);
		ll_out_string(o, "rdma_device", n->rdma_device ? "  rdma %s" : NULL, n->rdma_device);
		ll_out_bool(o, "slingshot", NULL, n->slingshot);
		if (n->slingshot)
			ll_out_text(o, "  HPE Slingshot");
		ll_out_int(o, "numa_node", n->numa_node >= 0 ? "  NUMA %s" : NULL, n->numa_node, n->numa_node >= 0);
		ll_out_text(o, "\n");
		if (n->addrs_known) {
			ll_out_text(o, "      addresses");
			ll_out_open_array(o, "addresses");
			for (size_t k = 0; k < n->n_addrs; k++) {
				ll_out_open_object(o, NULL);
				ll_out_string(o, "family", NULL, n->addrs[k].family == AF_INET6 ? "inet6" : "inet");
				ll_out_string(o, "address", " %s", n->addrs[k].addr);
				ll_out_int(o, "prefixlen", "/%s", n->addrs[k].prefixlen, true);
				ll_out_close_object(o);
			}
			ll_out_close_array(o);
			ll_out_text(o, n->n_addrs ? "\n" : " none\n");
		} else {
			ll_out_string(o, "addresses", "      addresses %s\n", NULL);
		}
		ll_out_close_object(o);
	}
	ll_out_close_array(o);
}

static void print_net_plugins(struct ll_out *o, const struct ll_facts *f)
{
	ll_out_open_object(o, "nccl_net_plugins");
	ll_out_bool(o, "known", "\nNCCL net plugins: %s", f->net_plugins_known);
	ll_out_text(o, f->net_plugins_known ? " (searched on the library path)\n" : " (not searched)\n");
	ll_out_open_array(o, "on_path");
	for (size_t i = 0; i < f->n_net_plugins; i++) {
		ll_out_string(o, NULL, "  %s", f->net_plugins[i]);
		ll_out_text(o, "%s\n", ll_facts_net_plugin_is_ofi(f, i) ? "  (aws-ofi-nccl)" : "");
	}
	ll_out_close_array(o);
	ll_out_open_array(o, "off_path");
	for (size_t i = 0; i < f->n_net_plugins_off_path; i++)
		ll_out_string(o, NULL, "  %s (not on the library path)\n", f->net_plugins_off_path[i]);
	ll_out_close_array(o);
	if (f->net_plugins_known && !f->n_net_plugins && !f->n_net_plugins_off_path)
		ll_out_text(o, "  none\n");
	ll_out_close_object(o);
}

static void print_gdr(struct ll_out *o, const struct ll_facts *f)
{
	ll_out_open_object(o, "gdr");
	ll_out_bool(o, "ready", "\nGPUDirect RDMA: %s", f->gdr_ready);
	ll_out_string(o, "module", f->gdr_module ? " (%s)" : NULL, f->gdr_module);
	ll_out_bool(o, "dmabuf", "; DMA-BUF %s", f->dmabuf);
	ll_out_string(o, "kernel", " (kernel %s", f->kernel_release);
	ll_out_bool(o, "nvidia_open_module", ", NVIDIA open module %s)", f->nvidia_open_module);
	ll_out_text(o, "\n");
	ll_out_close_object(o);
	/* IMEX channels (multi-node NVLink), where /dev could be read. */
	ll_out_int(o, "imex_channels", f->imex_channels >= 0 ? "IMEX channels: %s" : NULL, f->imex_channels,
		   f->imex_channels >= 0);
	ll_out_bool(o, "imex_access", f->imex_channels > 0 ? " (open for this user: %s)" : NULL, f->imex_access);
	if (f->imex_channels >= 0)
		ll_out_text(o, "\n");
	/* The IMEX service's node list, where its config could be read. */
	ll_out_string(o, "imex_nodes_file", f->imex_nodes_file ? "IMEX node list: %s" : NULL, f->imex_nodes_file);
	ll_out_string(o, "imex_nodes", f->imex_nodes_file && !f->imex_nodes_missing ? " (%s)" : NULL,
		      f->imex_nodes);
	if (f->imex_nodes_file && f->imex_nodes_missing)
		ll_out_text(o, " (missing)");
	ll_out_string(o, "imex_bind", f->imex_bind ? ", bound to %s" : NULL, f->imex_bind);
	if (f->imex_nodes_file)
		ll_out_text(o, "\n");
}

static void print_matrix(struct ll_out *o, const struct ll_facts *f)
{
	ll_out_open_object(o, "gpu_nic_distance");
	ll_out_open_array(o, "gpus");
	for (size_t i = 0; i < f->n_gpus; i++)
		ll_out_string(o, NULL, NULL, f->gpus[i].busid);
	ll_out_close_array(o);
	ll_out_open_array(o, "nics");
	for (size_t j = 0; j < f->n_rdma; j++)
		ll_out_string(o, NULL, NULL, f->rdma[j].name);
	ll_out_close_array(o);

	if (f->n_gpus && f->n_rdma) {
		ll_out_text(o, "\nGPU-NIC PCIe paths\n  %-6s", "");
		for (size_t j = 0; j < f->n_rdma; j++)
			ll_out_text(o, " %-8s", f->rdma[j].name);
		ll_out_text(o, " nearest\n");
	}
	ll_out_open_array(o, "matrix");
	for (size_t i = 0; i < f->n_gpus && f->n_rdma; i++) {
		int near = ll_facts_nearest_rdma(f, i);
		char label[24];

		snprintf(label, sizeof(label), "GPU%zu", i);
		ll_out_text(o, "  %-6s", label);
		ll_out_open_array(o, NULL);
		for (size_t j = 0; j < f->n_rdma; j++) {
			enum ll_path p = ll_facts_gpu_nic(f, i, j);

			ll_out_string(o, NULL, " %-8s", p == LL_PATH_UNKNOWN ? NULL : ll_path_name(p));
		}
		ll_out_close_array(o);
		ll_out_text(o, " %s\n", near >= 0 ? f->rdma[near].name : "none");
	}
	ll_out_close_array(o);
	ll_out_close_object(o);
	if (f->n_gpus && f->n_rdma)
		ll_out_text(o, "\nLegend:\n"
			       "  PIX  = at most one PCIe switch between GPU and NIC (best for GPUDirect RDMA)\n"
			       "  PXB  = several PCIe switches, not through the CPU's host bridge\n"
			       "  PHB  = through a PCIe host bridge (the CPU)\n"
			       "  NODE = between PCIe host bridges inside one NUMA node\n"
			       "  SYS  = across the link between NUMA nodes (QPI/UPI/Infinity Fabric)\n");
}

/* The planner's verdict on the facts alone: the one place that decides what the
 * network is and how large the GPU domain is (probe must not judge differently). */
static void print_parallelism(struct ll_out *o, const struct ll_facts *f)
{
	_cleanup_(ll_plan_freep) struct ll_plan *plan = NULL;
	const char *net, *dom;
	struct ll_buf summary;

	if (ll_plan_from_facts(f, &plan) < 0)
		return;
	net = ll_plan_value(plan, "LLMLAUNCH_NET");
	dom = ll_plan_value(plan, "LLMLAUNCH_NVLINK_DOMAIN");
	ll_buf_init(&summary);
	ll_plan_summary(plan, &summary);
	ll_out_text(o, "\nParallelism\n");
	ll_out_open_object(o, "parallelism");
	ll_out_int(o, "nvlink_domain", dom ? "  NVLink domain: %s GPU(s)\n" : "  NVLink domain: %s\n", dom ? atoi(dom) : 0,
		   dom != NULL);
	/* The names probe's JSON has always used for the planner's LLMLAUNCH_NET. */
	ll_out_string(o, "network", "  network: %s\n", ll_streq(net, "ib") ? "infiniband" : net ? net : "unknown");
	ll_out_open_array(o, "guidance");
	ll_out_string(o, NULL, "  %s\n", summary.s);
	ll_out_close_array(o);
	ll_out_close_object(o);
	ll_buf_release(&summary);
}

static int print_facts(const struct ll_facts *f, bool json)
{
	struct ll_out *o = ll_out_new(stdout, json);

	ll_out_open_object(o, NULL);
	print_host(o, f);
	print_gpus(o, f);
	print_rdma(o, f);
	print_netifs(o, f);
	print_net_plugins(o, f);
	print_gdr(o, f);
	print_matrix(o, f);
	print_parallelism(o, f);
	ll_out_close_object(o);
	return ll_out_finish(o);
}

int cmd_probe(int argc, char **argv, struct ll_ctx *ctx)
{
	struct probe_options opts = { 0 };
	struct ll_error err = { 0 };
	const struct ll_facts *facts;
	int r;

	r = parse_argv(argc, argv, ctx, &opts);
	if (r <= 0)
		return r < 0 ? LL_EXIT_USAGE : LL_EXIT_OK;

	r = ll_ctx_facts(ctx, &facts, &err);
	if (r < 0) {
		ll_report(&err);
		ll_error_clear(&err);
		return LL_EXIT_FAILURE;
	}
	if (opts.save) {
		r = ll_probe_save(ctx->topo, opts.save, &err);
		if (r < 0) {
			ll_report(&err);
			ll_error_clear(&err);
			return LL_EXIT_FAILURE;
		}
	}
	/* A failed write is reported once, by main(). */
	return print_facts(facts, opts.json) < 0 ? LL_EXIT_FAILURE : LL_EXIT_OK;
}
