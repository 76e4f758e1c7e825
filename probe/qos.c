/* A RoCE port's QoS state, unprivileged: what decides the traffic class NCCL's queue
 * pairs carry, and which priorities are lossless (docs/roce.md).
 *
 * - MLNX_OFED's forced class: /sys/class/infiniband/DEV/tc/PORT/traffic_class, "Global
 *   tclass=N" (or a bare N on some releases); when set, the driver puts N on every
 *   QP of the port whatever NCCL_IB_TC asks for.
 * - MLNX_OFED's ECN switches: /sys/class/net/IF/ecn/roce_rp|roce_np/enable/P (0/1
 *   per priority P) and ecn/roce_np/cnp_dscp.
 * - rdma_cm's default ToS: /sys/kernel/config/rdma_cm/DEV/ports/N/default_roce_tos,
 *   present only where someone made the device's configfs directory.
 * - DCB netlink (dcbnl.h): trust mode, DSCP-to-priority map, PFC priorities. Live
 *   only; under --fsroot a recorded reply at DIR/dcbnl/IF is read instead (the
 *   kernel's bytes for RTM_GETDCB/DCB_CMD_IEEE_GET), never this host's.
 *
 * Only Ethernet ports with a known interface are read: one netlink round trip each,
 * nothing at all on a machine without RoCE. */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "llmlaunch/file.h"
#include "annotate.h"
#include "annotations.h"
#include "dcbnl.h"
#include "sysfs.h"

static void set_port_info(hwloc_obj_t obj, const char *fmt, unsigned port, const char *value)
{
	char name[64];

	snprintf(name, sizeof(name), fmt, port);
	ll_obj_info_once(obj, name, value);
}

/* "Global tclass=106", "106", "tclass=106": the number; -1 when nothing is forced
 * ("Global tclass=-1", empty); -2 when the text is no class. */
static int parse_forced_tclass(const char *s)
{
	const char *eq = strrchr(s, '=');
	unsigned v;

	if (eq) {
		if (strncmp(s, "Global tclass", 13) != 0 && strncmp(s, "tclass", 6) != 0)
			return -2;
		s = eq + 1;
	}
	if (strcmp(s, "-1") == 0)
		return -1;
	if (!ll_parse_uint(s, &v) || v > 255)
		return -2;
	return (int)v;
}

static void read_forced_class(hwloc_obj_t obj, const char *fsroot, const char *dev, unsigned port)
{
	_cleanup_free_ char *dir = ll_sysfs_path(fsroot, "/sys/class/infiniband/%s/tc/%u", dev, port);
	_cleanup_free_ char *file = ll_asprintf("%s/traffic_class", dir);
	_cleanup_free_ char *v = NULL;
	int r, c;

	if (!ll_sysfs_is_dir(dir))
		return; /* no tc/ directory: not MLNX_OFED; whether a class is forced is unknown */
	r = ll_sysfs_read(file, &v);
	if (r == -EINVAL && ll_read_line(file, &v) == 0 && !*v) {
		set_port_info(obj, LL_INFO_PORT_FMT_QOS_FORCED, port, "none");
		return;
	}
	if (r < 0)
		return;
	c = parse_forced_tclass(v);
	if (c == -1)
		set_port_info(obj, LL_INFO_PORT_FMT_QOS_FORCED, port, "none");
	else if (c >= 0) {
		char num[24];

		snprintf(num, sizeof(num), "%d", c);
		set_port_info(obj, LL_INFO_PORT_FMT_QOS_FORCED, port, num);
	}
}

/* "3,5" from a bit mask of priorities. */
static void mask_text(unsigned mask, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned p = 0; p < 8 && len + 3 < size; p++)
		if (mask & (1u << p))
			len += (size_t)snprintf(buf + len, size - len, "%s%u", len ? "," : "", p);
}

static void read_ecn(hwloc_obj_t obj, const char *fsroot, const char *netdev, unsigned port)
{
	static const struct {
		const char *dir, *fmt;
	} points[] = {
		{ "roce_rp", LL_INFO_PORT_FMT_QOS_ECN_RP },
		{ "roce_np", LL_INFO_PORT_FMT_QOS_ECN_NP },
	};
	_cleanup_free_ char *cnp = ll_sysfs_path(fsroot, "/sys/class/net/%s/ecn/roce_np/cnp_dscp", netdev);
	long v;

	for (size_t i = 0; i < LL_ARRAY_SIZE(points); i++) {
		unsigned mask = 0;
		bool all = true;
		char text[24];

		for (unsigned p = 0; p < 8 && all; p++) {
			_cleanup_free_ char *f =
				ll_sysfs_path(fsroot, "/sys/class/net/%s/ecn/%s/enable/%u", netdev, points[i].dir, p);

			if (ll_sysfs_read_long(f, 10, &v) < 0 || (v != 0 && v != 1))
				all = false; /* one unreadable priority: the whole set is unknown */
			else if (v)
				mask |= 1u << p;
		}
		if (!all)
			continue;
		mask_text(mask, text, sizeof(text));
		set_port_info(obj, points[i].fmt, port, text);
	}
	if (ll_sysfs_read_long(cnp, 10, &v) == 0 && v >= 0 && v < 64) {
		char num[24];

		snprintf(num, sizeof(num), "%ld", v);
		set_port_info(obj, LL_INFO_PORT_FMT_QOS_CNP, port, num);
	}
}

static void read_cm_tos(hwloc_obj_t obj, const char *fsroot, const char *dev, unsigned port)
{
	_cleanup_free_ char *f =
		ll_sysfs_path(fsroot, "/sys/kernel/config/rdma_cm/%s/ports/%u/default_roce_tos", dev, port);
	long v;

	if (ll_sysfs_read_long(f, 0, &v) == 0 && v >= 0 && v <= 255) {
		char num[24];

		snprintf(num, sizeof(num), "%ld", v);
		set_port_info(obj, LL_INFO_PORT_FMT_QOS_CM_TOS, port, num);
	}
}

static void store_dcb(hwloc_obj_t obj, unsigned port, const struct ll_dcb_state *st)
{
	struct ll_buf map;
	char text[24];

	set_port_info(obj, LL_INFO_PORT_FMT_QOS_DCB, port, "ieee");
	if (st->pfc_known) {
		mask_text(st->pfc_en, text, sizeof(text));
		set_port_info(obj, LL_INFO_PORT_FMT_QOS_PFC, port, text);
	}
	if (!st->app_known)
		return;
	set_port_info(obj, LL_INFO_PORT_FMT_QOS_TRUST, port, st->trust == LL_DCB_TRUST_DSCP ? "dscp" : "pcp");
	ll_buf_init(&map);
	for (unsigned d = 0; d < 64; d++)
		if (st->dscp_prio[d] >= 0)
			ll_buf_addf(&map, "%s%u:%d", map.len ? "," : "", d, st->dscp_prio[d]);
	set_port_info(obj, LL_INFO_PORT_FMT_QOS_DSCP, port, map.s ? map.s : "");
	ll_buf_release(&map);
}

static void read_dcb(hwloc_obj_t obj, const char *fsroot, const char *netdev, unsigned port)
{
	_cleanup_free_ void *reply = NULL;
	struct ll_dcb_state st;
	size_t len = 0;
	int r;

	if (fsroot && *fsroot) {
		_cleanup_free_ char *f = ll_sysfs_path(fsroot, "/dcbnl/%s", netdev);
		char *bytes = NULL;

		r = ll_read_file_n(f, LL_DCB_REPLY_MAX, &bytes, &len);
		if (r < 0) {
			set_port_info(obj, LL_INFO_PORT_FMT_QOS_DCB, port, "not-recorded");
			return;
		}
		reply = bytes;
	} else {
		r = ll_dcb_query(netdev, &reply, &len);
		/* Out of descriptors or memory fails the whole probe, never "unknown". */
		ll_io_resource_note(r);
		if (r < 0) {
			_cleanup_free_ char *why = ll_asprintf("error: %s", strerror(-r));

			set_port_info(obj, LL_INFO_PORT_FMT_QOS_DCB, port, why);
			return;
		}
	}
	r = ll_dcb_parse_reply(reply, len, &st);
	if (r == -EOPNOTSUPP) {
		set_port_info(obj, LL_INFO_PORT_FMT_QOS_DCB, port, "unsupported");
	} else if (r < 0) {
		_cleanup_free_ char *why = ll_asprintf("error: %s", strerror(-r));

		set_port_info(obj, LL_INFO_PORT_FMT_QOS_DCB, port, why);
	} else {
		store_dcb(obj, port, &st);
	}
}

void ll_annotate_port_qos(hwloc_obj_t obj, const char *fsroot, const char *dev, unsigned port, const char *netdev)
{
	set_port_info(obj, LL_INFO_PORT_FMT_QOS_READ, port, "1");
	read_forced_class(obj, fsroot, dev, port);
	read_cm_tos(obj, fsroot, dev, port);
	if (!netdev)
		return;
	read_ecn(obj, fsroot, netdev, port);
	read_dcb(obj, fsroot, netdev, port);
}
