/* RDMA devices and network interfaces from a topology: OpenFabrics and Network
 * OS devices (or their stand-ins), hwloc's PortN infos and ours. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
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
	p->qos.forced_tclass = -2;
	p->qos.pfc_mask = p->qos.ecn_rp_mask = p->qos.ecn_np_mask = -1;
	p->qos.cnp_dscp = p->qos.cm_tos = -1;
	p->qos.netdev_mtu = -1;
	p->qos.active_mtu = -1;
	memset(p->qos.dscp_prio, -1, sizeof(p->qos.dscp_prio));
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

/* "3,5": a mask of priorities 0-7; -1 when the text is no such list. */
static int priority_mask(const char *s)
{
	int mask = 0;

	while (*s) {
		if (s[0] < '0' || s[0] > '7' || (s[1] != ',' && s[1] != '\0'))
			return -1;
		mask |= 1 << (s[0] - '0');
		s += s[1] ? 2 : 1;
	}
	return mask;
}

static int small_number(const char *s, int max)
{
	long v = ll_facts_parse_long(s, 10);

	return v >= 0 && v <= max ? (int)v : -1;
}

/* One "PortNQoS..." info (probe/qos.c), `rest` after "QoS". */
static void qos_info(struct ll_port_qos *q, const char *rest, const char *value)
{
	if (strcmp(rest, "Read") == 0) {
		q->read = true;
	} else if (strcmp(rest, "ForcedTClass") == 0) {
		q->forced_tclass = strcmp(value, "none") == 0 ? -1 : small_number(value, 255) >= 0 ? small_number(value, 255) : -2;
	} else if (strcmp(rest, "DCB") == 0) {
		q->dcb = strcmp(value, "ieee") == 0		 ? "ieee"
			 : strcmp(value, "unsupported") == 0	 ? "unsupported"
			 : strcmp(value, "not-recorded") == 0 ? "not-recorded"
			 : ll_startswith(value, "error")	 ? "error"
								 : NULL;
	} else if (strcmp(rest, "Trust") == 0) {
		q->trust = strcmp(value, "dscp") == 0  ? LL_QOS_TRUST_DSCP
			   : strcmp(value, "pcp") == 0 ? LL_QOS_TRUST_PCP
						       : LL_QOS_TRUST_UNKNOWN;
	} else if (strcmp(rest, "DSCPMap") == 0) {
		const char *s = value;

		while (*s) {
			char *end;
			unsigned long d = strtoul(s, &end, 10), prio;

			if (end == s || *end != ':' || d > 63)
				break;
			s = end + 1;
			prio = strtoul(s, &end, 10);
			if (end == s || prio > 7)
				break;
			q->dscp_prio[d] = (signed char)prio;
			s = *end == ',' ? end + 1 : end;
		}
	} else if (strcmp(rest, "PFC") == 0) {
		q->pfc_mask = priority_mask(value);
	} else if (strcmp(rest, "ECNRP") == 0) {
		q->ecn_rp_mask = priority_mask(value);
	} else if (strcmp(rest, "ECNNP") == 0) {
		q->ecn_np_mask = priority_mask(value);
	} else if (strcmp(rest, "CNPDSCP") == 0) {
		q->cnp_dscp = small_number(value, 63);
	} else if (strcmp(rest, "RdmaCmToS") == 0) {
		q->cm_tos = small_number(value, 255);
	}
}

const char *ll_port_qos_dcb_why(const struct ll_port_qos *q)
{
	if (!q->read)
		return "not read (a snapshot without llmlaunch's QoS annotations)";
	if (!q->dcb)
		return "not read (no interface known for the port)";
	if (strcmp(q->dcb, "unsupported") == 0)
		return "no DCB support: the interface's driver has no DCB netlink operations";
	if (strcmp(q->dcb, "not-recorded") == 0)
		return "the --fsroot tree holds no recorded DCB reply (dcbnl/IF)";
	if (strcmp(q->dcb, "error") == 0)
		return "the DCB netlink query failed";
	return NULL;
}

/* What the QoS annotations leave unknown, and the path MTU of the port's interface:
 * the kernel's iboe_get_mtu() (include/rdma/ib_addr.h) takes the RoCE headers (GRH 40,
 * UDP 8, BTH 12, XRC 4, AtomicETH 28, ICRC 4: 96 bytes) off the netdev MTU and rounds
 * down to an IB MTU, so 4096-byte RoCE payloads need an MTU of 4192 or more. */
void ll_facts_port_qos_finish(struct ll_facts *f)
{
	for (size_t i = 0; i < f->n_rdma; i++)
		for (size_t k = 0; k < f->rdma[i].n_ports; k++) {
			struct ll_rdma_port *p = &f->rdma[i].ports[k];
			struct ll_port_qos *q = &p->qos;

			if (p->link_layer != LL_LINK_LAYER_ETHERNET)
				continue;
			if (q->forced_tclass == -2)
				q->forced_why = !q->read ? "not read (a snapshot without llmlaunch's QoS annotations)"
						: "no tc/N/traffic_class: not MLNX_OFED, whose driver alone can force a class";
			if (q->ecn_rp_mask < 0)
				q->ecn_why = !q->read ? "not read (a snapshot without llmlaunch's QoS annotations)"
					     : "no ecn/roce_rp/enable/ files: not MLNX_OFED, upstream drivers show no "
					       "ECN switch";
			for (size_t n = 0; p->netdev && n < f->n_netifs; n++)
				if (strcmp(f->netifs[n].name, p->netdev) == 0)
					q->netdev_mtu = f->netifs[n].mtu;
			if (q->netdev_mtu > 0) {
				static const int ib_mtus[] = { 4096, 2048, 1024, 512, 256 };
				long payload = q->netdev_mtu - 96;

				for (size_t m = 0; m < LL_ARRAY_SIZE(ib_mtus) && q->active_mtu < 0; m++)
					if (payload >= ib_mtus[m])
						q->active_mtu = ib_mtus[m];
			}
		}
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
		/* "1e23 Gb/sec" and "inf" are not rates: unknown, not a huge bandwidth. */
		p->rate_gbps = end != value && isfinite(g) && g >= 0 && g <= LL_PORT_RATE_MAX_GBPS ? g : -1;
	} else if (strcmp(rest, "PhysState") == 0) {
		free(p->phys_state);
		p->phys_state = ll_strdup(value);
	} else if (strcmp(rest, "Netdev") == 0) {
		free(p->netdev);
		p->netdev = ll_strdup(value);
	} else if (ll_startswith(rest, "QoS")) {
		qos_info(&p->qos, rest + 3, value);
	} else if (ll_startswith(rest, "GID") && isdigit((unsigned char)rest[3])) {
		struct ll_gid *g = NULL;
		char *tail;

		errno = 0;
		k = (unsigned)strtoul(rest + 3, &tail, 10);
		/* No GID table has an entry 300: such an info is not one. */
		if ((*tail != '\0' && strcmp(tail, "Type") != 0) || errno || k > LL_GID_INDEX_MAX)
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

/* ---- what can drive an RDMA device ------------------------------------------

 * NCCL's IB transport takes every ACTIVE port whose link layer is InfiniBand or
 * Ethernet (NCCL src/transport/net_ib/init.cc, ncclIbInit), connects RC queue pairs
 * (connect.cc, IBV_QPT_RC) and posts RDMA writes with immediate data (p2p.cc,
 * IBV_WR_RDMA_WRITE_WITH_IMM). A device qualifies when its rdma-core provider
 * offers both (providers/<name> in linux-rdma/rdma-core); the kernel's node_type
 * (rdma-core libibverbs/init.c, decode_knode_type: 1 CA, 2 switch, 3 router, 4 RNIC
 * = iWARP, 5 usNIC, 6 usNIC UDP, 7 unspecified) tells the rest. */
#define NODE_CA 1
#define NODE_RNIC 4

enum mode { ANY_MODE, ROCE_MODE }; /* ROCE_MODE: verbs only as a CA (RoCE), iWARP unknown */

static const struct rdma_driver {
	const char *driver;        /* basename of /sys/class/infiniband/DEV/device/driver */
	enum ll_rdma_class cls;
	enum mode mode;
	const char *why;
} rdma_drivers[] = {
	{ "mlx5_core", LL_RDMA_CLASS_VERBS, ANY_MODE, "NVIDIA ConnectX (mlx5): NCCL's own HCAs" },
	{ "mlx4_core", LL_RDMA_CLASS_VERBS, ANY_MODE, "Mellanox ConnectX-3 (mlx4): RC verbs (rdma-core providers/mlx4)" },
	{ "bnxt_en", LL_RDMA_CLASS_VERBS, ANY_MODE, "Broadcom NetXtreme-E RoCE (bnxt_re): RC verbs (rdma-core providers/bnxt_re)" },
	{ "hns3", LL_RDMA_CLASS_VERBS, ANY_MODE, "Huawei HNS RoCE (hns_roce): RC verbs (rdma-core providers/hns)" },
	{ "ionic", LL_RDMA_CLASS_VERBS, ANY_MODE, "AMD Pensando (ionic): RC verbs (rdma-core providers/ionic)" },
	{ "erdma", LL_RDMA_CLASS_VERBS, ANY_MODE, "Alibaba elastic RDMA (erdma): RC verbs (rdma-core providers/erdma)" },
	{ "hfi1", LL_RDMA_CLASS_VERBS, ANY_MODE, "Omni-Path HFI (hfi1): RC verbs in the kernel's rdmavt" },
	{ "ib_qib", LL_RDMA_CLASS_VERBS, ANY_MODE, "QLogic TrueScale (qib): RC verbs in the kernel's rdmavt" },
	{ "vmw_pvrdma", LL_RDMA_CLASS_VERBS, ANY_MODE, "VMware paravirtual RDMA (pvrdma): RC verbs (rdma-core providers/vmw_pvrdma)" },
	{ "irdma", LL_RDMA_CLASS_VERBS, ROCE_MODE, "Intel E810/X722 (irdma) in RoCE mode: RC verbs (rdma-core providers/irdma)" },
	{ "ice", LL_RDMA_CLASS_VERBS, ROCE_MODE, "Intel E810 (irdma) in RoCE mode: RC verbs (rdma-core providers/irdma)" },
	{ "i40e", LL_RDMA_CLASS_VERBS, ROCE_MODE, "Intel X722 (irdma)" },
	{ "qede", LL_RDMA_CLASS_VERBS, ROCE_MODE, "Marvell FastLinQ (qedr) in RoCE mode: RC verbs (rdma-core providers/qedr)" },
	{ "efa", LL_RDMA_CLASS_PLUGIN, ANY_MODE,
	  "AWS EFA: SRD and UD queue pairs only, no RC (rdma-core providers/efa), so NCCL's IB transport "
	  "cannot use it; NCCL reaches it through the aws-ofi-nccl plugin (libfabric provider efa)" },
	{ "enic", LL_RDMA_CLASS_UNUSABLE, ANY_MODE,
	  "Cisco usNIC: unreliable datagrams only, NCCL's IB transport needs RC queue pairs" },
	{ "cxgb4", LL_RDMA_CLASS_UNKNOWN, ANY_MODE,
	  "Chelsio iWARP (iw_cxgb4): whether it posts RDMA writes with immediate data, which NCCL's IB "
	  "transport needs, depends on the adapter generation" },
};

/* PCI vendors, for exports that do not record the driver (hwloc never does). */
static const struct rdma_vendor {
	unsigned vendor;
	unsigned dev_lo, dev_hi;   /* device id range; 0, 0xffff: any */
	enum ll_rdma_class cls;
	enum mode mode;
	const char *provider;
	const char *why;
} rdma_vendors[] = {
	{ 0x15b3, 0, 0xffff, LL_RDMA_CLASS_VERBS, ANY_MODE, NULL, "PCI vendor 15b3 (NVIDIA/Mellanox ConnectX): NCCL's own HCAs" },
	/* Linux drivers/infiniband/hw/efa/efa_main.c: device ids efa0..efa3. */
	{ 0x1d0f, 0xefa0, 0xefaf, LL_RDMA_CLASS_PLUGIN, ANY_MODE, "efa",
	  "PCI 1d0f:efaN (AWS EFA): SRD and UD queue pairs only, no RC (rdma-core providers/efa), so NCCL's "
	  "IB transport cannot use it; NCCL reaches it through the aws-ofi-nccl plugin (libfabric provider efa)" },
	{ 0x17db, 0, 0xffff, LL_RDMA_CLASS_PLUGIN, ANY_MODE, "cxi",
	  "PCI vendor 17db (HPE Slingshot Cassini): not a verbs device; NCCL reaches it through aws-ofi-nccl "
	  "with libfabric's cxi provider" },
	{ 0x1137, 0, 0xffff, LL_RDMA_CLASS_UNUSABLE, ANY_MODE, NULL,
	  "PCI vendor 1137 (Cisco usNIC): unreliable datagrams only, NCCL's IB transport needs RC queue pairs" },
	{ 0x14e4, 0, 0xffff, LL_RDMA_CLASS_VERBS, ANY_MODE, NULL,
	  "PCI vendor 14e4 (Broadcom NetXtreme-E RoCE, bnxt_re): RC verbs (rdma-core providers/bnxt_re)" },
	{ 0x19e5, 0, 0xffff, LL_RDMA_CLASS_VERBS, ANY_MODE, NULL,
	  "PCI vendor 19e5 (Huawei HNS RoCE): RC verbs (rdma-core providers/hns)" },
	{ 0x1dd8, 0, 0xffff, LL_RDMA_CLASS_VERBS, ANY_MODE, NULL,
	  "PCI vendor 1dd8 (AMD Pensando, ionic): RC verbs (rdma-core providers/ionic)" },
	{ 0x1ded, 0, 0xffff, LL_RDMA_CLASS_VERBS, ANY_MODE, NULL,
	  "PCI vendor 1ded (Alibaba erdma): RC verbs (rdma-core providers/erdma)" },
	{ 0x15ad, 0, 0xffff, LL_RDMA_CLASS_VERBS, ANY_MODE, NULL,
	  "PCI vendor 15ad (VMware pvrdma): RC verbs (rdma-core providers/vmw_pvrdma)" },
	/* Omni-Path HFI 100 (8086:24f0, 24f1) and QLogic TrueScale (1077:7220, 7322). */
	{ 0x8086, 0x24f0, 0x24f1, LL_RDMA_CLASS_VERBS, ANY_MODE, NULL,
	  "PCI 8086:24f0 (Omni-Path HFI, hfi1): RC verbs in the kernel's rdmavt" },
	{ 0x1077, 0x7220, 0x7220, LL_RDMA_CLASS_VERBS, ANY_MODE, NULL,
	  "PCI 1077:7220 (QLogic TrueScale, qib): RC verbs in the kernel's rdmavt" },
	{ 0x1077, 0x7322, 0x7322, LL_RDMA_CLASS_VERBS, ANY_MODE, NULL,
	  "PCI 1077:7322 (QLogic TrueScale, qib): RC verbs in the kernel's rdmavt" },
	{ 0x1077, 0, 0xffff, LL_RDMA_CLASS_VERBS, ROCE_MODE, NULL,
	  "PCI vendor 1077 (Marvell FastLinQ, qedr) in RoCE mode: RC verbs (rdma-core providers/qedr)" },
	{ 0x8086, 0, 0xffff, LL_RDMA_CLASS_VERBS, ROCE_MODE, NULL,
	  "PCI vendor 8086 (Intel irdma) in RoCE mode: RC verbs (rdma-core providers/irdma)" },
	{ 0x1425, 0, 0xffff, LL_RDMA_CLASS_UNKNOWN, ANY_MODE, NULL,
	  "PCI vendor 1425 (Chelsio iWARP): whether it posts RDMA writes with immediate data, which NCCL's "
	  "IB transport needs, depends on the adapter generation" },
};

static enum ll_rdma_class mode_class(enum ll_rdma_class cls, enum mode mode, int node_type, const char **why)
{
	if (mode != ROCE_MODE || node_type == NODE_CA)
		return cls;
	*why = node_type == NODE_RNIC
		       ? "an iWARP device (node type RNIC): NCCL's IB transport needs RDMA writes with immediate "
			 "data, which iWARP devices offer only in some generations"
		       : "a RoCE or iWARP device whose mode (the kernel's node type) is not recorded";
	return LL_RDMA_CLASS_UNKNOWN;
}

enum ll_rdma_class ll_rdma_classify(const char *driver, int node_type, unsigned vendor_id, unsigned device_id,
				    bool on_pci, bool virtual_, const char **ret_why, const char **ret_provider)
{
	enum ll_rdma_class cls = LL_RDMA_CLASS_UNKNOWN;
	const char *why = "nothing recorded tells what drives it (no driver, no known PCI vendor)";
	const char *provider = NULL;

	if (node_type == 5 || node_type == 6) {
		cls = LL_RDMA_CLASS_UNUSABLE;
		why = "Cisco usNIC (node type usNIC): unreliable datagrams only, NCCL's IB transport needs RC queue pairs";
	} else if (node_type == 2 || node_type == 3) {
		cls = LL_RDMA_CLASS_UNUSABLE;
		why = "an InfiniBand switch or router, not a host adapter";
	} else if (!on_pci && virtual_) {
		/* hwloc makes non-PCI OpenFabrics OS devices only below /sys/devices/virtual. */
		cls = LL_RDMA_CLASS_SOFTWARE;
		why = node_type == NODE_RNIC ? "software iWARP (siw): the CPU does the RDMA work"
					     : "software RDMA (rxe or siw) on an Ethernet interface: the CPU does the RDMA work";
	} else if (!on_pci) {
		cls = LL_RDMA_CLASS_UNUSABLE;
		why = "neither a PCI nor a virtual device: a bridge such as the Xeon Phi's scif, not a network adapter";
	} else {
		bool found = false;

		for (size_t i = 0; driver && i < LL_ARRAY_SIZE(rdma_drivers); i++)
			if (strcmp(driver, rdma_drivers[i].driver) == 0) {
				why = rdma_drivers[i].why;
				cls = mode_class(rdma_drivers[i].cls, rdma_drivers[i].mode, node_type, &why);
				provider = cls == LL_RDMA_CLASS_PLUGIN ? "efa" : NULL;
				found = true;
				break;
			}
		for (size_t i = 0; !found && i < LL_ARRAY_SIZE(rdma_vendors); i++) {
			const struct rdma_vendor *v = &rdma_vendors[i];

			if (v->vendor != vendor_id || device_id < v->dev_lo || device_id > v->dev_hi)
				continue;
			why = v->why;
			cls = mode_class(v->cls, v->mode, node_type, &why);
			provider = cls == LL_RDMA_CLASS_PLUGIN ? v->provider : NULL;
			break;
		}
	}
	if (ret_why)
		*ret_why = why;
	if (ret_provider)
		*ret_provider = provider;
	return cls;
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
		d->driver = ll_strdup(hwloc_obj_get_info_by_name(o, LL_INFO_RDMA_DRIVER));
		{
			const char *uv = hwloc_obj_get_info_by_name(o, LL_INFO_RDMA_UVERBS);
			const char *acc = hwloc_obj_get_info_by_name(o, LL_INFO_RDMA_UVERBS_ACCESS);

			d->uverbs = uv ? ll_strdup(strcmp(uv, "none") == 0 ? "" : uv) : NULL;
			d->uverbs_access = ll_streq(acc, "ok")	    ? LL_UVERBS_OK
					   : ll_streq(acc, "missing") ? LL_UVERBS_MISSING
					   : ll_streq(acc, "denied")  ? LL_UVERBS_DENIED
								      : LL_UVERBS_UNKNOWN;
		}
		/* "1: CA": the number is the kernel's enum rdma_node_type. */
		d->node_type = (int)ll_facts_parse_long(hwloc_obj_get_info_by_name(o, LL_INFO_RDMA_NODE_TYPE), 10);
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
		/* Without PCI: virtual when hwloc made an OS device of it (snapshots loaded
		 * with HWLOC_VIRTUAL_LINUX_OSDEV) or the stand-in's link says so; a stand-in
		 * without that info is neither (scif0, old snapshots). */
		d->rdma_class = ll_rdma_classify(d->driver, d->node_type, d->vendor_id, d->device_id, pci != NULL,
						 !pci && (o->type == HWLOC_OBJ_OS_DEVICE ||
							  ll_streq(hwloc_obj_get_info_by_name(o, LL_INFO_RDMA_VIRTUAL), "1")),
						 &d->class_why, &d->provider);
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
		bool slingshot = ll_streq(o->subtype, "Slingshot");

		/* hwloc 2.11 and later also make Network OS devices of /sys/class/cxi
		 * (cxi0: the Cassini device libfabric opens), which are no interfaces:
		 * unlike those of /sys/class/net they carry no Address. */
		if (slingshot && !hwloc_obj_get_info_by_name(o, LL_INFO_NET_ADDRESS))
			continue;
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
		/* Cassini NICs are PCI vendor 17db (Cray): what hwloc 2.9.1 and later
		 * mark "Slingshot", and what older hwloc (and ours) records all the same. */
		n->slingshot = slingshot || (pci && pci->attr->pcidev.vendor_id == 0x17db);
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
