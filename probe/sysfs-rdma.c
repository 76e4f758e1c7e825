/* RDMA ports from /sys/class/infiniband: what hwloc 2.9 does not read (link
 * layer, rate, physical state, GID types, the netdev of each port), and whole
 * devices hwloc did not turn into OS devices (rxe, siw), kept as stand-ins. */
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "llmlaunch/facts.h"
#include "annotate.h"
#include "annotations.h"
#include "sysfs.h"

/* "4: ACTIVE", "5: LinkUp": a number, a colon, a word. */
static bool is_numbered_state(const char *s, unsigned *num)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)*s))
		return false;
	v = strtoul(s, &end, 10);
	if (end[0] != ':' || end[1] != ' ' || !isalpha((unsigned char)end[2]) || v > 255)
		return false;
	if (num)
		*num = (unsigned)v;
	return true;
}

/* Eight groups of four hex digits, as the kernel prints GIDs and GUIDs. */
static bool is_gid(const char *s, unsigned groups)
{
	for (unsigned g = 0; g < groups; g++) {
		for (unsigned i = 0; i < 4; i++)
			if (!isxdigit((unsigned char)*s++))
				return false;
		if (*s != (g + 1 < groups ? ':' : '\0'))
			return false;
		s++;
	}
	return true;
}

/* An unused GID slot: hwloc's rule, the interface ID (low 64 bits) is zero.
 * Covers the all-zero GID of RoCE tables and the bare fe80:: prefix of IB ones. */
static bool gid_is_unused(const char *gid)
{
	return strcmp(gid + 20, "0000:0000:0000:0000") == 0;
}

static bool is_netdev_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 15 || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (; *s; s++)
		if (*s == '/' || *s == ':' || *s <= 0x20 || *s > 0x7e)
			return false;
	return true;
}

/* The interface of port N among the entries of DEV/device/net: dev_port counts from 0 (newer
 * kernels); older ones number ports in dev_id instead (hex). Children such as
 * ib0.8001 share the port; natural order puts the parent first. */
static char *port_netdev_from_device(const char *devdir, unsigned port)
{
	_cleanup_free_ char *netdir = ll_asprintf("%s/device/net", devdir);
	char **names = NULL, *found = NULL;
	size_t n = 0;

	if (ll_sysfs_list(netdir, &names, &n) < 0)
		return NULL;
	for (size_t i = 0; i < n && !found; i++) {
		_cleanup_free_ char *p = ll_asprintf("%s/%s/dev_port", netdir, names[i]);
		long v;

		if (!is_netdev_name(names[i]))
			continue;
		if (ll_sysfs_read_long(p, 10, &v) < 0) {
			free(p);
			p = ll_asprintf("%s/%s/dev_id", netdir, names[i]);
			if (ll_sysfs_read_long(p, 16, &v) < 0)
				continue;
		}
		if (v >= 0 && v + 1 == (long)port)
			found = ll_strdup(names[i]);
	}
	ll_strv_free(names, n);
	return found;
}

static void annotate_gids(hwloc_obj_t obj, const char *portdir, unsigned port, char **netdev)
{
	_cleanup_free_ char *gidsdir = ll_asprintf("%s/gids", portdir);
	char **names = NULL;
	size_t n = 0;

	if (ll_sysfs_list(gidsdir, &names, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *gid = NULL, *type = NULL, *ndev = NULL, *p = NULL;
		char name[64];
		unsigned k;

		if (!ll_parse_uint(names[i], &k) || k > LL_GID_INDEX_MAX)
			continue;
		p = ll_asprintf("%s/%s", gidsdir, names[i]);
		if (ll_sysfs_read(p, &gid) < 0 || !is_gid(gid, 8) || gid_is_unused(gid))
			continue;
		snprintf(name, sizeof(name), LL_INFO_PORT_FMT_GID, port, k);
		ll_obj_info_once(obj, name, gid);

		/* Types and ndevs of a used slot; the kernel answers EINVAL for
		 * slots it has no attributes for, which just leaves them unknown. */
		free(p);
		p = ll_asprintf("%s/gid_attrs/types/%u", portdir, k);
		if (ll_sysfs_read(p, &type) == 0 && (!strcmp(type, "IB/RoCE v1") || !strcmp(type, "RoCE v2"))) {
			snprintf(name, sizeof(name), LL_INFO_PORT_FMT_GID_TYPE, port, k);
			ll_obj_info_once(obj, name, type);
		}
		free(p);
		p = ll_asprintf("%s/gid_attrs/ndevs/%u", portdir, k);
		if (!*netdev && ll_sysfs_read(p, &ndev) == 0 && is_netdev_name(ndev))
			*netdev = LL_TAKE(ndev);
	}
	ll_strv_free(names, n);
}

static void annotate_port(hwloc_obj_t obj, const char *fsroot, const char *dev, const char *devdir, unsigned port)
{
	bool ethernet = false;
	_cleanup_free_ char *portdir = ll_asprintf("%s/ports/%u", devdir, port);
	_cleanup_free_ char *netdev = NULL;
	char name[64];
	unsigned num;

	struct {
		const char *file, *fmt;
	} verbatim[] = {
		{ "link_layer", LL_INFO_PORT_FMT_LINK_LAYER },
		{ "rate", LL_INFO_PORT_FMT_RATE },
		{ "phys_state", LL_INFO_PORT_FMT_PHYS_STATE },
		{ "state", LL_INFO_PORT_FMT_STATE_NAME },
		{ "lid", LL_INFO_PORT_FMT_LID },
		{ "lid_mask_count", LL_INFO_PORT_FMT_LMC },
	};

	for (size_t i = 0; i < LL_ARRAY_SIZE(verbatim); i++) {
		_cleanup_free_ char *p = ll_asprintf("%s/%s", portdir, verbatim[i].file);
		_cleanup_free_ char *v = NULL;
		long l;
		bool ok;

		if (ll_sysfs_read(p, &v) < 0)
			continue;
		if (!strcmp(verbatim[i].file, "link_layer"))
			ok = !strcmp(v, "InfiniBand") || !strcmp(v, "Ethernet");
		else if (!strcmp(verbatim[i].file, "rate"))
			ok = isdigit((unsigned char)v[0]) && strstr(v, "Gb/sec");
		else if (!strcmp(verbatim[i].file, "lid"))
			ok = ll_sysfs_read_long(p, 16, &l) == 0 && l >= 0 && l <= 0xffff;
		else if (!strcmp(verbatim[i].file, "lid_mask_count"))
			ok = ll_parse_uint(v, &num) && num <= 7;
		else
			ok = is_numbered_state(v, &num);
		if (!ok)
			continue;
		snprintf(name, sizeof(name), verbatim[i].fmt, port);
		ll_obj_info_once(obj, name, v);
		if (!strcmp(verbatim[i].file, "link_layer"))
			ethernet = !strcmp(v, "Ethernet");
		if (!strcmp(verbatim[i].file, "state")) {
			/* hwloc's PortNState is the number alone. */
			snprintf(name, sizeof(name), LL_INFO_PORT_FMT_STATE, port);
			ll_obj_info_oncef(obj, name, "%u", num);
		}
	}

	annotate_gids(obj, portdir, port, &netdev);
	if (!netdev)
		netdev = port_netdev_from_device(devdir, port);
	if (netdev) {
		snprintf(name, sizeof(name), LL_INFO_PORT_FMT_NETDEV, port);
		ll_obj_info_once(obj, name, netdev);
	}
	if (ethernet)
		ll_annotate_port_qos(obj, fsroot, dev, port, netdev);
}

/* What drives the device, for ll_rdma_classify(): the driver its parent device is
 * bound to (mlx5_core, efa, bnxt_en, ...) and the kernel's node type ("1: CA",
 * "4: RNIC", "6: usNIC UDP", "7: unspecified"). Neither is in hwloc. */
static void annotate_identity(hwloc_obj_t obj, const char *devdir)
{
	_cleanup_free_ char *link = ll_asprintf("%s/device/driver", devdir);
	_cleanup_free_ char *ntpath = ll_asprintf("%s/node_type", devdir);
	_cleanup_free_ char *target = NULL, *nt = NULL;
	const char *base;

	if (ll_sysfs_readlink(link, &target) == 0) {
		base = strrchr(target, '/');
		base = base ? base + 1 : target;
		if (is_netdev_name(base))
			ll_obj_info_once(obj, LL_INFO_RDMA_DRIVER, base);
	}
	if (ll_sysfs_read(ntpath, &nt) == 0 && is_numbered_state(nt, NULL))
		ll_obj_info_once(obj, LL_INFO_RDMA_NODE_TYPE, nt);
}

static void annotate_device(hwloc_obj_t obj, const char *fsroot, const char *dev)
{
	_cleanup_free_ char *devdir = ll_sysfs_path(fsroot, "/sys/class/infiniband/%s", dev);
	_cleanup_free_ char *portsdir = ll_asprintf("%s/ports", devdir);
	_cleanup_free_ char *guidpath = ll_asprintf("%s/node_guid", devdir);
	_cleanup_free_ char *guid = NULL;
	char **ports = NULL;
	size_t n = 0;

	if (ll_sysfs_read(guidpath, &guid) == 0 && is_gid(guid, 4))
		ll_obj_info_once(obj, LL_INFO_RDMA_NODE_GUID, guid);
	annotate_identity(obj, devdir);
	if (ll_sysfs_list(portsdir, &ports, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		unsigned port;

		/* Port numbers are u8 in the kernel; 0 is a switch's management port. */
		if (ll_parse_uint(ports[i], &port) && port <= 255)
			annotate_port(obj, fsroot, dev, devdir, port);
	}
	ll_strv_free(ports, n);
}

/* The uverbs device of each RDMA device: /sys/class/infiniband_verbs/uverbsN/ibdev
 * names it; rdma-core opens /dev/infiniband/uverbsN (libibverbs/init.c). */
struct uverbs_map {
	char **ibdev, **uverbs;
	size_t n;
	bool known;      /* the class exists, or a live probe shows it does not (no ib_uverbs) */
	bool dev_known;  /* /dev is there to look at (gathered trees have none) */
};

static void uverbs_map_read(struct uverbs_map *m, const char *fsroot)
{
	_cleanup_free_ char *dir = ll_sysfs_path(fsroot, "/sys/class/infiniband_verbs");
	_cleanup_free_ char *devdir = ll_sysfs_path(fsroot, "/dev");
	char **names = NULL;
	size_t n = 0;

	m->dev_known = ll_sysfs_is_dir(devdir);
	if (ll_sysfs_list(dir, &names, &n) < 0) {
		/* Live, the class's absence means ib_uverbs is not loaded; a gathered
		 * tree may just not have copied it. */
		m->known = !fsroot;
		return;
	}
	m->known = true;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *p = ll_asprintf("%s/%s/ibdev", dir, names[i]);
		char *ibdev = NULL;

		if (!ll_startswith(names[i], "uverbs") || !is_netdev_name(names[i]) || ll_sysfs_read(p, &ibdev) < 0)
			continue;
		size_t k = m->n;

		*(char **)ll_array_push(&m->ibdev, &k, sizeof(char *)) = ibdev;
		*(char **)ll_array_push(&m->uverbs, &m->n, sizeof(char *)) = ll_strdup(names[i]);
	}
	ll_strv_free(names, n);
}

static void uverbs_map_release(struct uverbs_map *m)
{
	ll_strv_free(m->ibdev, m->n);
	ll_strv_free(m->uverbs, m->n);
}

static void annotate_uverbs(hwloc_obj_t obj, const char *fsroot, const struct uverbs_map *m, const char *dev)
{
	const char *uv = NULL;

	if (!m->known)
		return;
	for (size_t i = 0; i < m->n && !uv; i++)
		if (strcmp(m->ibdev[i], dev) == 0)
			uv = m->uverbs[i];
	ll_obj_info_once(obj, LL_INFO_RDMA_UVERBS, uv ? uv : "none");
	if (uv && m->dev_known) {
		_cleanup_free_ char *node = ll_sysfs_path(fsroot, "/dev/infiniband/%s", uv);

		ll_obj_info_once(obj, LL_INFO_RDMA_UVERBS_ACCESS,
				 access(node, F_OK) < 0		 ? "missing"
				 : access(node, R_OK | W_OK) < 0 ? "denied"
								 : "ok");
	}
}

int ll_annotate_rdma(hwloc_topology_t topo, const char *fsroot, struct ll_error *err)
{
	_cleanup_free_ char *classdir = ll_sysfs_path(fsroot, "/sys/class/infiniband");
	struct uverbs_map uv = { 0 };
	char **names = NULL;
	size_t n = 0;
	hwloc_obj_t obj;
	int r;

	r = ll_sysfs_list(classdir, &names, &n);
	if (r == -ENOENT || r == -ENOTDIR)
		return 0; /* no RDMA stack here: nothing to find */
	if (r < 0)
		return ll_error_set(err, r, "cannot read '%s': %s", classdir, strerror(-r));
	uverbs_map_read(&uv, fsroot);

	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *ports = NULL;
		bool seen = false;

		if (!is_netdev_name(names[i]))
			continue;
		for (obj = NULL; (obj = hwloc_get_next_osdev(topo, obj));)
			if (obj->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && ll_streq(obj->name, names[i])) {
				annotate_device(obj, fsroot, names[i]);
				annotate_uverbs(obj, fsroot, &uv, names[i]);
				seen = true;
			}
		if (seen)
			continue;
		/* A device hwloc skipped (no PCI parent: rxe, siw; or a dangling link
		 * in a gathered tree). Only a device whose ports can be read is real
		 * enough to report. */
		ports = ll_sysfs_path(fsroot, "/sys/class/infiniband/%s/ports", names[i]);
		if (!ll_sysfs_is_dir(ports))
			continue;
		obj = ll_topo_standin(topo, names[i], LL_STANDIN_OPENFABRICS);
		if (obj) {
			_cleanup_free_ char *devdir = ll_sysfs_path(fsroot, "/sys/class/infiniband/%s", names[i]);
			_cleanup_free_ char *link = NULL;

			/* Software RDMA (rxe, siw) has no device behind it: it lives below
			 * /sys/devices/virtual, as hwloc's own rule for such devices says. */
			if (ll_sysfs_readlink(devdir, &link) == 0)
				ll_obj_info_set(obj, LL_INFO_RDMA_VIRTUAL,
						strstr(link, "/virtual/") || ll_startswith(link, "virtual/") ? "1" : "0");
			annotate_device(obj, fsroot, names[i]);
			annotate_uverbs(obj, fsroot, &uv, names[i]);
		}
	}
	ll_strv_free(names, n);
	uverbs_map_release(&uv);
	return 0;
}
