/* RDMA devices and network interfaces from a topology: OpenFabrics and Network
 * OS devices (or their stand-ins), hwloc's PortN infos and ours. */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "llmlaunch/probe.h"
#include "annotations.h"
#include "facts-internal.h"

/* OS devices of one type, then the annotators' stand-ins for devices hwloc
 * did not create (Misc objects below the root, LL_INFO_STANDIN). */
static size_t devices_of(hwloc_topology_t topo, hwloc_obj_osdev_type_t type, const char *standin,
			 hwloc_obj_t **ret)
{
	hwloc_obj_t root = hwloc_get_root_obj(topo);
	size_t n = 0;

	*ret = NULL;
	for (hwloc_obj_t o = hwloc_get_next_osdev(topo, NULL); o; o = hwloc_get_next_osdev(topo, o))
		if (o->attr->osdev.type == type && o->name)
			*(hwloc_obj_t *)ll_array_push(ret, &n, sizeof(hwloc_obj_t)) = o;
	for (hwloc_obj_t o = root->misc_first_child; o; o = o->next_sibling)
		if (o->name && ll_streq(hwloc_obj_get_info_by_name(o, LL_INFO_STANDIN), standin))
			*(hwloc_obj_t *)ll_array_push(ret, &n, sizeof(hwloc_obj_t)) = o;
	return n;
}

/* ---- RDMA devices ---- */

static bool gid_ipv4_mapped(const char *gid)
{
	struct in6_addr a;

	/* sysfs prints 8 groups of 4 hex digits, which inet_pton reads as is. */
	if (inet_pton(AF_INET6, gid, &a) != 1)
		return false;
	return IN6_IS_ADDR_V4MAPPED(&a);
}

static bool gid_link_local(const char *gid)
{
	struct in6_addr a;

	if (inet_pton(AF_INET6, gid, &a) != 1)
		return false;
	return IN6_IS_ADDR_LINKLOCAL(&a);
}

static struct ll_rdma_port *port_get(struct ll_rdma_device *d, unsigned number)
{
	struct ll_rdma_port *p;

	for (size_t i = 0; i < d->n_ports; i++)
		if (d->ports[i].number == number)
			return &d->ports[i];
	p = ll_array_push(&d->ports, &d->n_ports, sizeof(*p));
	p->number = number;
	p->rate_gbps = -1;
	p->lid = -1;
	return p;
}

static int port_cmp(const void *a, const void *b)
{
	const struct ll_rdma_port *x = a, *y = b;

	return x->number < y->number ? -1 : x->number > y->number;
}

static int gid_cmp(const void *a, const void *b)
{
	const struct ll_gid *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

static enum ll_gid_type gid_type_from_name(const char *s)
{
	if (!s)
		return LL_GID_TYPE_UNKNOWN;
	if (strcasecmp(s, "IB/RoCE v1") == 0)
		return LL_GID_TYPE_IB_ROCE_V1;
	if (strcasecmp(s, "RoCE v2") == 0)
		return LL_GID_TYPE_ROCE_V2;
	return LL_GID_TYPE_UNKNOWN;
}

/* One "PortN..." info of an OpenFabrics OS device. */
static void port_info(struct ll_rdma_device *d, const char *name, const char *value)
{
	struct ll_rdma_port *p;
	unsigned number, k;
	char *rest;

	if (!ll_startswith(name, "Port") || !isdigit((unsigned char)name[4]))
		return;
	number = (unsigned)strtoul(name + 4, &rest, 10);
	p = port_get(d, number);
	if (strcmp(rest, "State") == 0) {
		long s = ll_facts_parse_long(value, 10);
		p->state = s >= LL_PORT_DOWN && s <= LL_PORT_ACTIVE_DEFER ? (enum ll_port_state)s : LL_PORT_STATE_UNKNOWN;
	} else if (strcmp(rest, "LID") == 0) {
		p->lid = ll_facts_parse_long(value, 0);
	} else if (strcmp(rest, "LinkLayer") == 0) {
		p->link_layer = strcasecmp(value, "InfiniBand") == 0 ? LL_LINK_LAYER_INFINIBAND
				: strcasecmp(value, "Ethernet") == 0 ? LL_LINK_LAYER_ETHERNET
								     : LL_LINK_LAYER_UNKNOWN;
	} else if (strcmp(rest, "Rate") == 0) {
		char *end;
		double g = strtod(value, &end);

		free(p->rate);
		p->rate = ll_strdup(value);
		p->rate_gbps = end != value && g >= 0 ? g : -1;
	} else if (strcmp(rest, "PhysState") == 0) {
		free(p->phys_state);
		p->phys_state = ll_strdup(value);
	} else if (strcmp(rest, "Netdev") == 0) {
		free(p->netdev);
		p->netdev = ll_strdup(value);
	} else if (ll_startswith(rest, "GID") && isdigit((unsigned char)rest[3])) {
		struct ll_gid *g = NULL;
		char *tail;

		k = (unsigned)strtoul(rest + 3, &tail, 10);
		if (*tail != '\0' && strcmp(tail, "Type") != 0)
			return;
		for (size_t i = 0; i < p->n_gids; i++)
			if (p->gids[i].index == k)
				g = &p->gids[i];
		if (!g) {
			g = ll_array_push(&p->gids, &p->n_gids, sizeof(*g));
			g->index = k;
		}
		if (*tail == '\0') {
			free(g->gid);
			g->gid = ll_strdup(value);
			g->ipv4_mapped = gid_ipv4_mapped(value);
			g->link_local = gid_link_local(value);
		} else {
			g->type = gid_type_from_name(value);
		}
	}
}

static int str_natural_cmp(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

struct rdma_tmp {
	hwloc_obj_t obj;
	struct ll_rdma_device dev;
};

static int rdma_tmp_cmp(const void *a, const void *b)
{
	return strverscmp(((const struct rdma_tmp *)a)->dev.name, ((const struct rdma_tmp *)b)->dev.name);
}

void ll_facts_rdma_extract(hwloc_topology_t topo, struct ll_facts *f, hwloc_obj_t **ret_objs)
{
	_cleanup_free_ hwloc_obj_t *objs = NULL;
	size_t n_objs = devices_of(topo, HWLOC_OBJ_OSDEV_OPENFABRICS, "OpenFabrics", &objs);
	struct rdma_tmp *tmp = NULL;
	size_t n = 0;

	/* Network and RDMA devices are OS devices that hwloc's filters keep or drop
	 * together: one of either kind means both lists are complete. */
	f->netdevs_known |= n_objs > 0;
	for (size_t oi = 0; oi < n_objs; oi++) {
		hwloc_obj_t o = objs[oi];
		struct ll_rdma_device *d;
		hwloc_obj_t pci;
		struct rdma_tmp *t;

		t = ll_array_push(&tmp, &n, sizeof(*tmp));
		t->obj = o;
		d = &t->dev;
		d->name = ll_strdup(o->name);
		d->numa_node = ll_facts_pci_parent(o) ? ll_facts_numa(topo, o) : -1;
		d->node_guid = ll_strdup(hwloc_obj_get_info_by_name(o, LL_INFO_RDMA_NODE_GUID));
		pci = ll_facts_pci_parent(o);
		if (pci) {
			d->busid = ll_facts_busid(pci);
			d->vendor_id = pci->attr->pcidev.vendor_id;
			d->device_id = pci->attr->pcidev.device_id;
			d->model = ll_strdup(hwloc_obj_get_info_by_name(pci, "PCIDevice"));
			for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling)
				if (c->type == HWLOC_OBJ_OS_DEVICE && c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK &&
				    c->name)
					*(char **)ll_array_push(&d->netdevs, &d->n_netdevs, sizeof(char *)) =
						ll_strdup(c->name);
		}
		for (unsigned i = 0; i < o->infos_count; i++)
			port_info(d, o->infos[i].name, o->infos[i].value);
		for (size_t i = 0; i < d->n_ports; i++) {
			struct ll_rdma_port *p = &d->ports[i];

			/* Plain lstopo exports lack the link layer; a non-zero LID is
			 * certain proof of InfiniBand (RoCE ports have no LIDs). */
			if (p->link_layer == LL_LINK_LAYER_UNKNOWN && p->lid > 0)
				p->link_layer = LL_LINK_LAYER_INFINIBAND;
			if (p->n_gids > 1)
				qsort(p->gids, p->n_gids, sizeof(*p->gids), gid_cmp);
			/* Netdevs of a virtual device are known only from its ports. */
			if (p->netdev) {
				bool seen = false;

				for (size_t k = 0; k < d->n_netdevs; k++)
					seen |= strcmp(d->netdevs[k], p->netdev) == 0;
				if (!seen)
					*(char **)ll_array_push(&d->netdevs, &d->n_netdevs, sizeof(char *)) =
						ll_strdup(p->netdev);
			}
		}
		if (d->n_ports > 1)
			qsort(d->ports, d->n_ports, sizeof(*d->ports), port_cmp);
		if (d->n_netdevs > 1)
			qsort(d->netdevs, d->n_netdevs, sizeof(char *), str_natural_cmp);
	}
	if (n > 1)
		qsort(tmp, n, sizeof(*tmp), rdma_tmp_cmp);
	*ret_objs = n ? ll_calloc(n, sizeof(hwloc_obj_t)) : NULL;
	f->rdma = n ? ll_calloc(n, sizeof(*f->rdma)) : NULL;
	for (size_t i = 0; i < n; i++) {
		(*ret_objs)[i] = tmp[i].obj;
		f->rdma[i] = tmp[i].dev;
	}
	f->n_rdma = n;
	free(tmp);
}

/* ---- network interfaces ---- */

enum ll_netif_kind ll_netif_kind_infer(const char *name, const char *mac, bool on_pci_device)
{
	static const struct {
		const char *prefix;
		enum ll_netif_kind kind;
	} conventions[] = {
		{ "docker", LL_NETIF_DOCKER }, { "veth", LL_NETIF_VETH }, { "virbr", LL_NETIF_VIRBR },
		{ "br-", LL_NETIF_DOCKER }, /* docker's user-defined networks: br-<network id> */
	};

	if (!name)
		return LL_NETIF_UNKNOWN;
	if (strcmp(name, "lo") == 0)
		return LL_NETIF_LOOPBACK;
	for (size_t i = 0; i < LL_ARRAY_SIZE(conventions); i++)
		if (ll_startswith(name, conventions[i].prefix))
			return conventions[i].kind;
	/* Hardware address length, as text: 20 bytes is IPoIB ("xx:" x 20 less one
	 * colon); 6 bytes on a PCI function is an Ethernet port. */
	if (mac && strlen(mac) == 59)
		return LL_NETIF_INFINIBAND;
	if (mac && strlen(mac) == 17 && on_pci_device)
		return LL_NETIF_ETHERNET;
	return LL_NETIF_UNKNOWN;
}

static bool kind_is_virtual(enum ll_netif_kind k)
{
	switch (k) {
	case LL_NETIF_LOOPBACK:
	case LL_NETIF_BRIDGE:
	case LL_NETIF_VETH:
	case LL_NETIF_DOCKER:
	case LL_NETIF_VIRBR:
	case LL_NETIF_VLAN:
	case LL_NETIF_BOND:
	case LL_NETIF_TUNNEL:
	case LL_NETIF_OTHER_VIRTUAL:
		return true;
	default:
		return false;
	}
}

static enum ll_tristate flag_in(const char *flags, const char *flag)
{
	size_t n = strlen(flag);

	if (!flags)
		return LL_UNKNOWN;
	for (const char *p = flags; *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == n && strncmp(p, flag, n) == 0)
			return LL_YES;
		if (!e)
			break;
		p = e + 1;
	}
	return LL_NO;
}

static void netif_addr(struct ll_netif *n, const char *value)
{
	const char *slash = strchr(value, '/');
	struct ll_addr *a = ll_array_push(&n->addrs, &n->n_addrs, sizeof(*a));

	a->addr = slash ? ll_strndup(value, (size_t)(slash - value)) : ll_strdup(value);
	a->family = strchr(a->addr, ':') ? AF_INET6 : AF_INET;
	a->prefixlen = slash ? (unsigned)strtoul(slash + 1, NULL, 10) : (a->family == AF_INET6 ? 128 : 32);
}

/* The OpenFabrics device beside a network interface under one PCI function;
 * with several, the one whose port names this interface. */
static const char *netif_rdma_owner(hwloc_obj_t netobj)
{
	hwloc_obj_t pci = ll_facts_pci_parent(netobj);
	const char *first = NULL;

	if (!pci)
		return NULL;
	for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
		if (c->type != HWLOC_OBJ_OS_DEVICE || c->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS || !c->name)
			continue;
		if (!first || strverscmp(c->name, first) < 0)
			first = c->name;
		for (unsigned i = 0; i < c->infos_count; i++)
			if (ll_startswith(c->infos[i].name, "Port") && strstr(c->infos[i].name, "Netdev") &&
			    ll_streq(c->infos[i].value, netobj->name))
				return c->name;
	}
	return first;
}

static int netif_cmp(const void *a, const void *b)
{
	return strverscmp(((const struct ll_netif *)a)->name, ((const struct ll_netif *)b)->name);
}

enum ll_netif_role ll_netif_role(enum ll_netif_kind kind, bool virtual_)
{
	switch (kind) {
	case LL_NETIF_LOOPBACK:
		return LL_NETIF_ROLE_LOOPBACK;
	case LL_NETIF_INFINIBAND:
		return LL_NETIF_ROLE_IPOIB;
	case LL_NETIF_DOCKER:
	case LL_NETIF_VIRBR:
	case LL_NETIF_VETH:
		return LL_NETIF_ROLE_CONTAINER;
	case LL_NETIF_BRIDGE:
	case LL_NETIF_VLAN:
	case LL_NETIF_BOND:
	case LL_NETIF_TUNNEL:
	case LL_NETIF_OTHER_VIRTUAL:
		return LL_NETIF_ROLE_VIRTUAL;
	default:
		return virtual_ ? LL_NETIF_ROLE_VIRTUAL : LL_NETIF_ROLE_PHYSICAL;
	}
}

void ll_facts_netifs_extract(hwloc_topology_t topo, struct ll_facts *f)
{
	_cleanup_free_ hwloc_obj_t *objs = NULL;
	size_t n_objs = devices_of(topo, HWLOC_OBJ_OSDEV_NETWORK, "Network", &objs);

	f->netdevs_known |= n_objs > 0;
	for (size_t oi = 0; oi < n_objs; oi++) {
		hwloc_obj_t o = objs[oi];
		struct ll_netif *n;
		hwloc_obj_t pci;
		const char *s, *flags;

		n = ll_array_push(&f->netifs, &f->n_netifs, sizeof(*n));
		n->name = ll_strdup(o->name);
		n->kind = ll_netif_kind_from_name(hwloc_obj_get_info_by_name(o, LL_INFO_NET_KIND));
		n->mac = ll_strdup(hwloc_obj_get_info_by_name(o, LL_INFO_NET_ADDRESS));
		pci = ll_facts_pci_parent(o);
		if (n->kind == LL_NETIF_UNKNOWN) {
			n->kind = ll_netif_kind_infer(o->name, n->mac, pci != NULL);
			n->kind_inferred = n->kind != LL_NETIF_UNKNOWN;
		}
		s = hwloc_obj_get_info_by_name(o, LL_INFO_NET_VIRTUAL);
		n->virtual_ = s ? strcmp(s, "1") == 0 : kind_is_virtual(n->kind);
		n->operstate = ll_strdup(hwloc_obj_get_info_by_name(o, LL_INFO_NET_OPERSTATE));
		flags = hwloc_obj_get_info_by_name(o, LL_INFO_NET_FLAGS);
		n->up = flag_in(flags, "UP");
		n->running = flag_in(flags, "RUNNING");
		n->mtu = ll_facts_parse_long(hwloc_obj_get_info_by_name(o, LL_INFO_NET_MTU), 10);
		n->speed_mbps = ll_facts_parse_long(hwloc_obj_get_info_by_name(o, LL_INFO_NET_SPEED), 10);
		n->busid = pci ? ll_facts_busid(pci) : NULL;
		n->rdma_device = ll_strdup(netif_rdma_owner(o));
		n->numa_node = pci ? ll_facts_numa(topo, o) : -1;
		s = hwloc_obj_get_info_by_name(o, LL_INFO_NET_ADDRS_KNOWN);
		n->addrs_known = s && strcmp(s, "1") == 0;
		for (unsigned i = 0; i < o->infos_count; i++)
			if (strcmp(o->infos[i].name, LL_INFO_NET_ADDR) == 0 && o->infos[i].value)
				netif_addr(n, o->infos[i].value);
		if (n->n_addrs)
			n->addrs_known = true;
	}
	if (f->n_netifs > 1)
		qsort(f->netifs, f->n_netifs, sizeof(*f->netifs), netif_cmp);
	/* RDMA ports bound to an interface tell its owner when no PCI function does. */
	for (size_t i = 0; i < f->n_rdma; i++)
		for (size_t p = 0; p < f->rdma[i].n_ports; p++) {
			const char *nd = f->rdma[i].ports[p].netdev;
			struct ll_netif *n = nd ? (struct ll_netif *)ll_facts_netif(f, nd) : NULL;

			if (n && !n->rdma_device)
				n->rdma_device = ll_strdup(f->rdma[i].name);
		}
}
