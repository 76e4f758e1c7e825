/* PCIe path classes from the hwloc tree.
 *
 * A PCIe switch shows in hwloc as an upstream-port bridge whose children are
 * downstream-port bridges, one per port. Counting bridges would call two devices
 * behind one switch PXB; nvidia-smi and NCCL call that PIX (NCCL's sysfs walk
 * skips two path levels per switch for the same reason). So bridges are grouped
 * into switches by their depth below the host bridge: depth 1 is the root port
 * (part of the host bridge), even depths are upstream ports, odd depths > 1 are
 * downstream ports that belong to their parent's switch. */
#include "pci-path.h"

#include <stdbool.h>

#define MAX_CHAIN 64

static bool is_host_bridge(hwloc_obj_t o)
{
	return o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}

static bool is_pci_bridge(hwloc_obj_t o)
{
	return o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI;
}

/* Number of PCI bridges from the host bridge down to o, o included. */
static int bridge_depth(hwloc_obj_t o)
{
	int d = 0;

	for (; o && !is_host_bridge(o); o = o->parent) {
		if (is_pci_bridge(o))
			d++;
		if (!hwloc_obj_type_is_io(o->type))
			break;
	}
	return d;
}

/* The switch a bridge belongs to (its upstream port); NULL for root ports. */
static hwloc_obj_t bridge_switch(hwloc_obj_t b)
{
	int d = bridge_depth(b);

	if (d <= 1)
		return NULL;
	if (d % 2 == 0)
		return b;
	return is_pci_bridge(b->parent) ? b->parent : b;
}

/* Add the switches of the bridges from o up to (and including) stop. */
static void collect_switches(hwloc_obj_t o, hwloc_obj_t stop, hwloc_obj_t *sw, int *n)
{
	for (; o; o = o->parent) {
		if (is_pci_bridge(o)) {
			hwloc_obj_t s = bridge_switch(o);
			bool seen = false;

			for (int i = 0; i < *n; i++)
				seen |= sw[i] == s;
			if (s && !seen && *n < MAX_CHAIN)
				sw[(*n)++] = s;
		}
		if (o == stop)
			break;
	}
}

static hwloc_obj_t pci_of(hwloc_obj_t o)
{
	while (o && o->type == HWLOC_OBJ_OS_DEVICE)
		o = o->parent;
	return o && o->type == HWLOC_OBJ_PCI_DEVICE ? o : NULL;
}

enum ll_path ll_pci_path(hwloc_obj_t a, hwloc_obj_t b)
{
	hwloc_obj_t chain[MAX_CHAIN], sw[MAX_CHAIN], lca = NULL, la, lb;
	int n = 0, nsw = 0;

	a = pci_of(a);
	b = pci_of(b);
	if (!a || !b)
		return LL_PATH_UNKNOWN;
	if (a == b)
		return LL_PATH_PIX;
	for (hwloc_obj_t o = a; o && n < MAX_CHAIN; o = o->parent)
		chain[n++] = o;
	for (hwloc_obj_t o = b; o && !lca; o = o->parent)
		for (int i = 0; i < n; i++)
			if (chain[i] == o) {
				lca = o;
				break;
			}
	if (!lca)
		return LL_PATH_UNKNOWN;

	if (!hwloc_obj_type_is_io(lca->type)) {
		/* Different host bridges: NODE inside one NUMA node, else SYS. */
		la = a;
		lb = b;
		while (la && hwloc_obj_type_is_io(la->type))
			la = la->parent;
		while (lb && hwloc_obj_type_is_io(lb->type))
			lb = lb->parent;
		if (!la || !lb || !la->nodeset || !lb->nodeset)
			return LL_PATH_UNKNOWN;
		return hwloc_bitmap_isequal(la->nodeset, lb->nodeset) ? LL_PATH_NODE : LL_PATH_SYS;
	}
	if (is_host_bridge(lca))
		return LL_PATH_PHB;
	collect_switches(a, lca, sw, &nsw);
	collect_switches(b, lca, sw, &nsw);
	return nsw <= 1 ? LL_PATH_PIX : LL_PATH_PXB;
}
