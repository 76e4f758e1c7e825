/* The facts that change while the machine is up, read again on a topology that
 * already carries older values of them: one restored from the probe cache
 * (probe/cache.c), or one annotated a while ago. The static part (CPUs, NUMA, the
 * PCI tree, which devices exist, NVML's GPU models, UUIDs and NVLinks) is kept. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "llmlaunch/file.h"
#include "annotate.h"
#include "annotations.h"
#include "sysfs.h"

/* hwloc's per-port infos (PortNState, PortNLID, PortNLMC, PortNGIDk) and ours
 * (link layer, rate, states, GID types, netdev): all of them move with the link;
 * so does the device's user-space access (a container gets its devices later). */
static bool is_port_info(const char *name)
{
	return (ll_startswith(name, "Port") && isdigit((unsigned char)name[4])) ||
	       strcmp(name, LL_INFO_RDMA_UVERBS) == 0 || strcmp(name, LL_INFO_RDMA_UVERBS_ACCESS) == 0;
}

static bool is_netif_info(const char *name)
{
	static const char *const names[] = {
		LL_INFO_NET_KIND, LL_INFO_NET_VIRTUAL, LL_INFO_NET_OPERSTATE, LL_INFO_NET_FLAGS,
		LL_INFO_NET_MTU, LL_INFO_NET_SPEED, LL_INFO_NET_ADDRS_KNOWN, LL_INFO_NET_ADDR,
	};

	for (size_t i = 0; i < LL_ARRAY_SIZE(names); i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

static bool is_address_info(const char *name)
{
	return strcmp(name, LL_INFO_NET_ADDRESS) == 0;
}

/* On a stand-in the MAC is ours too, and netif.c writes it again. */
static bool is_standin_netif_info(const char *name)
{
	return is_netif_info(name) || is_address_info(name);
}

static bool is_root_dynamic_info(const char *name)
{
	return strcmp(name, LL_INFO_GDR_MODULE) == 0 || strcmp(name, LL_INFO_AMD_PEER_MEMORY) == 0 || strcmp(name, LL_INFO_NET_PLUGINS_KNOWN) == 0 ||
	       strcmp(name, LL_INFO_NET_PLUGIN) == 0 || strcmp(name, LL_INFO_NET_PLUGIN_OFF_PATH) == 0 ||
	       strcmp(name, LL_INFO_IMEX_CHANNELS) == 0 || strcmp(name, LL_INFO_IMEX_ACCESS) == 0 ||
	       strcmp(name, LL_INFO_IMEX_NODES_FILE) == 0 || strcmp(name, LL_INFO_IMEX_NODES) == 0 ||
	       strcmp(name, LL_INFO_IMEX_NODES_MISSING) == 0 || strcmp(name, LL_INFO_IMEX_BIND) == 0;
}

/* hwloc's own Address of a Network OS device, read the way hwloc reads it (the
 * first line, up to 127 bytes, unchecked), so that a refreshed topology and a
 * fresh load cannot differ. A MAC changes rarely, but an IPoIB address embeds the
 * queue pair number, which a driver restart changes. */
static void refresh_hwloc_address(hwloc_obj_t obj, const char *fsroot)
{
	_cleanup_free_ char *path = ll_sysfs_path(fsroot, "/sys/class/net/%s/address", obj->name);
	_cleanup_free_ char *text = NULL;

	if (!hwloc_obj_get_info_by_name(obj, LL_INFO_NET_ADDRESS))
		return;
	if (ll_read_file(path, 4096, &text) < 0) {
		ll_obj_infos_drop(obj, is_address_info);
		return;
	}
	text[strcspn(text, "\n")] = '\0';
	if (strlen(text) > 127)
		text[127] = '\0';
	ll_obj_info_set(obj, LL_INFO_NET_ADDRESS, text);
}

static bool is_standin(hwloc_obj_t o)
{
	return o->type == HWLOC_OBJ_MISC && hwloc_obj_get_info_by_name(o, LL_INFO_STANDIN);
}

static uint64_t max_gp_index(hwloc_obj_t o)
{
	hwloc_obj_t lists[] = { o->first_child, o->memory_first_child, o->io_first_child, o->misc_first_child };
	uint64_t max = is_standin(o) ? 0 : o->gp_index;

	for (size_t i = 0; i < LL_ARRAY_SIZE(lists); i++)
		for (hwloc_obj_t c = lists[i]; c; c = c->next_sibling) {
			uint64_t m = max_gp_index(c);

			if (m > max)
				max = m;
		}
	return max;
}

/* Stand-ins are inserted after the load, and hwloc numbers them from its next
 * free global index: after a fresh load that counts every object it ever made
 * (filtered ones too), after the cache's XML the largest index saved. Numbered
 * from the largest index of the rest instead, a cache miss and a hit save the same
 * snapshot. No clash: hwloc's next index is past them either way, and nothing
 * (distances, memory attributes) refers to a stand-in. */
static void number_standins(hwloc_topology_t topo)
{
	hwloc_obj_t root = hwloc_get_root_obj(topo);
	uint64_t next = max_gp_index(root) + 1;

	for (hwloc_obj_t o = root->misc_first_child; o; o = o->next_sibling)
		if (is_standin(o))
			o->gp_index = next++;
}

int ll_annotate_dynamic(hwloc_topology_t topo, const char *fsroot, struct ll_error *err)
{
	hwloc_obj_t root = hwloc_get_root_obj(topo), o;
	int r;

	ll_obj_infos_drop(root, is_root_dynamic_info);
	for (o = NULL; (o = hwloc_get_next_osdev(topo, o));) {
		if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
			ll_obj_infos_drop(o, is_port_info);
		} else if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && o->name && !strchr(o->name, '/')) {
			ll_obj_infos_drop(o, is_netif_info);
			refresh_hwloc_address(o, fsroot);
		}
	}
	for (o = root->misc_first_child; o; o = o->next_sibling) {
		const char *standin = hwloc_obj_get_info_by_name(o, LL_INFO_STANDIN);

		if (ll_streq(standin, LL_STANDIN_OPENFABRICS))
			ll_obj_infos_drop(o, is_port_info);
		else if (ll_streq(standin, LL_STANDIN_NETWORK))
			ll_obj_infos_drop(o, is_standin_netif_info);
	}
	if (!fsroot) {
		char host[HOST_NAME_MAX + 1];

		/* hwloc's uname() nodename, which is gethostname(): replaced in
		 * place so the root's infos keep hwloc's order. */
		if (gethostname(host, sizeof(host)) == 0) {
			host[HOST_NAME_MAX] = '\0';
			if (host[0])
				ll_obj_info_set(root, LL_INFO_HOSTNAME, host);
		}
	}
	/* hwloc records the program that loaded the topology; a cached one would
	 * name whichever program wrote the cache. */
	if (hwloc_obj_get_info_by_name(root, "ProcessName"))
		ll_obj_info_set(root, "ProcessName", program_invocation_short_name);

	r = ll_annotate_host(topo, fsroot, err);
	if (r < 0)
		return r;
	r = ll_annotate_rdma(topo, fsroot, err);
	if (r < 0)
		return r;
	r = ll_annotate_netifs(topo, fsroot, err);
	if (r < 0)
		return r;
	number_standins(topo);
	return 0;
}
