/* Network interfaces from /sys/class/net: kind, virtual or not, operstate, flags,
 * MTU, speed; and, on the live machine only, the IP addresses (getifaddrs), which
 * no file under /sys records. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "llmlaunch/addr.h"
#include "llmlaunch/file.h"
#include "annotate.h"
#include "annotations.h"
#include "sysfs.h"

/* ARPHRD_* values (linux/if_arp.h) the kinds depend on. */
enum {
	ARPHRD_ETHER_ = 1,
	ARPHRD_INFINIBAND_ = 32,
	ARPHRD_TUNNEL_ = 768,
	ARPHRD_TUNNEL6_ = 769,
	ARPHRD_LOOPBACK_ = 772,
	ARPHRD_SIT_ = 776,
	ARPHRD_IPGRE_ = 778,
	ARPHRD_IP6GRE_ = 823,
	ARPHRD_NONE_ = 0xfffe,
};

/* dev->flags as /sys/class/net/IF/flags shows them, in bit order (ip link's
 * names). RUNNING, LOWER_UP and DORMANT are never set there: the kernel computes
 * them for ioctl/netlink, so RUNNING is derived below the way the kernel does. */
static const struct {
	unsigned long bit;
	const char *name;
} net_flags[] = {
	{ IFF_UP, "UP" },
	{ IFF_BROADCAST, "BROADCAST" },
	{ IFF_DEBUG, "DEBUG" },
	{ IFF_LOOPBACK, "LOOPBACK" },
	{ IFF_POINTOPOINT, "POINTOPOINT" },
	{ IFF_NOTRAILERS, "NOTRAILERS" },
	{ IFF_RUNNING, "RUNNING" },
	{ IFF_NOARP, "NOARP" },
	{ IFF_PROMISC, "PROMISC" },
	{ IFF_ALLMULTI, "ALLMULTI" },
	{ IFF_MASTER, "MASTER" },
	{ IFF_SLAVE, "SLAVE" },
	{ IFF_MULTICAST, "MULTICAST" },
	{ IFF_PORTSEL, "PORTSEL" },
	{ IFF_AUTOMEDIA, "AUTOMEDIA" },
	{ IFF_DYNAMIC, "DYNAMIC" },
};

struct netif_sysfs {
	char *dir;        /* FSROOT/sys/class/net/IF */
	const char *name;
	int virtual_;     /* -1 unknown */
	long type;        /* ARPHRD_*, -1 unknown */
	char *operstate;
	char *devtype;    /* DEVTYPE= from uevent */
};

static bool has_prefix_then(const char *name, const char *prefix, bool need_more)
{
	size_t n = strlen(prefix);

	return strncmp(name, prefix, n) == 0 && (!need_more || name[n] != '\0');
}

static bool exists_below(const struct netif_sysfs *n, const char *what)
{
	_cleanup_free_ char *p = ll_asprintf("%s/%s", n->dir, what);

	return access(p, F_OK) == 0;
}

/* Most specific kind first: the kernel's own DEVTYPE and type, then the
 * directories only some drivers create, then the names tools give their
 * devices (docker0, virbr0, veth*), which gathered trees keep even when the
 * virtual device directories are missing. NULL: no kind can be told. */
static const char *netif_kind(const struct netif_sysfs *n)
{
	const char *nm = n->name, *dt = n->devtype;

	if (n->type == ARPHRD_LOOPBACK_ || (n->type < 0 && !strcmp(nm, "lo")))
		return "loopback";
	if (n->type == ARPHRD_INFINIBAND_)
		return "infiniband";
	if (ll_startswith(nm, "docker"))
		return "docker";
	if (ll_startswith(nm, "virbr") && !exists_below(n, "tun_flags"))
		return "virbr";
	if (ll_streq(dt, "bridge") || exists_below(n, "bridge"))
		return "bridge";
	if (ll_streq(dt, "vlan"))
		return "vlan";
	if (ll_streq(dt, "bond") || exists_below(n, "bonding"))
		return "bond";
	if (dt && (!strcmp(dt, "wireguard") || !strcmp(dt, "vxlan") || !strcmp(dt, "geneve") ||
		   !strcmp(dt, "gretap") || !strcmp(dt, "ip6gretap") || !strcmp(dt, "ipip")))
		return "tunnel";
	if (exists_below(n, "tun_flags"))
		return "tunnel";
	if (n->type == ARPHRD_TUNNEL_ || n->type == ARPHRD_TUNNEL6_ || n->type == ARPHRD_SIT_ ||
	    n->type == ARPHRD_IPGRE_ || n->type == ARPHRD_IP6GRE_ || n->type == ARPHRD_NONE_)
		return "tunnel";
	if (n->virtual_ == 1) {
		if (has_prefix_then(nm, "veth", false))
			return "veth";
		if (has_prefix_then(nm, "br-", true) || (has_prefix_then(nm, "br", true) && isdigit((unsigned char)nm[2])))
			return "bridge";
		if (has_prefix_then(nm, "bond", true))
			return "bond";
		if (has_prefix_then(nm, "tun", true) || has_prefix_then(nm, "tap", true))
			return "tunnel";
		if (strchr(nm, '.') || has_prefix_then(nm, "vlan", true))
			return "vlan";
		return "virtual";
	}
	if (n->virtual_ == 0 && n->type == ARPHRD_ETHER_)
		return "ethernet";
	return NULL;
}

static char *uevent_devtype(const char *dir)
{
	_cleanup_free_ char *path = ll_asprintf("%s/uevent", dir);
	_cleanup_free_ char *text = NULL;
	char *line, *save = NULL;

	if (ll_read_file(path, 4096, &text) < 0)
		return NULL;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (ll_startswith(line, "DEVTYPE=")) {
			const char *v = line + strlen("DEVTYPE=");
			for (const char *p = v; *p; p++)
				if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
					return NULL;
			return *v ? ll_strdup(v) : NULL;
		}
	}
	return NULL;
}

static void annotate_flags(hwloc_obj_t obj, const struct netif_sysfs *n)
{
	_cleanup_free_ char *path = ll_asprintf("%s/flags", n->dir);
	struct ll_buf b;
	long flags;

	if (ll_sysfs_read_long(path, 16, &flags) < 0 || flags < 0)
		return;
	if (flags & IFF_UP) {
		/* IFF_RUNNING = running and operstate UP or UNKNOWN (dev_get_flags);
		 * without operstate the flag is unknown, so write nothing rather
		 * than a list that would read as "not running". */
		if (!n->operstate)
			return;
		if (!strcmp(n->operstate, "up") || !strcmp(n->operstate, "unknown"))
			flags |= IFF_RUNNING;
	}
	ll_buf_init(&b);
	for (size_t i = 0; i < LL_ARRAY_SIZE(net_flags); i++)
		if ((unsigned long)flags & net_flags[i].bit)
			ll_buf_addf(&b, "%s%s", b.len ? "," : "", net_flags[i].name);
	ll_obj_info_once(obj, LL_INFO_NET_FLAGS, b.s);
	ll_buf_release(&b);
}

static bool is_mac(const char *s)
{
	/* 6 bytes for Ethernet, 20 for IPoIB; always "xx:" groups. */
	size_t n = strlen(s);

	if (n < 2 || (n + 1) % 3)
		return false;
	for (size_t i = 0; i < n; i++)
		if (i % 3 == 2 ? s[i] != ':' : !isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

static void add_addresses(hwloc_obj_t obj, const char *ifname, const struct ifaddrs *ifa_list)
{
	if (hwloc_obj_get_info_by_name(obj, LL_INFO_NET_ADDRS_KNOWN))
		return;
	for (const struct ifaddrs *ifa = ifa_list; ifa; ifa = ifa->ifa_next) {
		char text[INET6_ADDRSTRLEN], full[INET6_ADDRSTRLEN + 8];
		size_t name_len;
		unsigned prefix;
		int family;

		if (!ifa->ifa_addr || !ifa->ifa_name)
			continue;
		/* IPv4 labels read "eth0:1": the address still belongs to eth0. */
		name_len = strcspn(ifa->ifa_name, ":");
		if (name_len != strlen(ifname) || strncmp(ifa->ifa_name, ifname, name_len))
			continue;
		family = ifa->ifa_addr->sa_family;
		if ((family != AF_INET && family != AF_INET6) || !ll_addr_text(ifa->ifa_addr, text))
			continue;
		/* no mask: a host address */
		prefix = ifa->ifa_netmask ? ll_addr_prefix_len(ifa->ifa_netmask) : family == AF_INET ? 32 : 128;
		snprintf(full, sizeof(full), "%s/%u", text, prefix);
		hwloc_obj_add_info(obj, LL_INFO_NET_ADDR, full);
	}
	hwloc_obj_add_info(obj, LL_INFO_NET_ADDRS_KNOWN, "1");
}

static void annotate_netif(hwloc_obj_t obj, const char *fsroot, const char *ifname, const struct ifaddrs *ifa,
			   bool addrs_known, bool standin)
{
	_cleanup_free_ char *link = NULL, *path = NULL;
	struct netif_sysfs n = { .name = ifname, .virtual_ = -1, .type = -1 };
	const char *kind;
	long v;

	n.dir = ll_sysfs_path(fsroot, "/sys/class/net/%s", ifname);
	/* Every entry of /sys/class/net is a link to the device; only interfaces
	 * without a device behind them live below /sys/devices/virtual. */
	if (ll_sysfs_readlink(n.dir, &link) == 0)
		n.virtual_ = strstr(link, "/virtual/") || ll_startswith(link, "virtual/") ? 1 : 0;
	path = ll_asprintf("%s/type", n.dir);
	if (ll_sysfs_read_long(path, 10, &v) == 0 && v >= 0)
		n.type = v;
	free(path);
	path = ll_asprintf("%s/operstate", n.dir);
	if (ll_sysfs_read(path, &n.operstate) == 0) {
		for (const char *p = n.operstate; *p; p++)
			if (!islower((unsigned char)*p)) {
				free(n.operstate);
				n.operstate = NULL;
				break;
			}
	}
	n.devtype = uevent_devtype(n.dir);

	kind = netif_kind(&n);
	if (kind)
		ll_obj_info_once(obj, LL_INFO_NET_KIND, kind);
	if (n.virtual_ >= 0)
		ll_obj_info_once(obj, LL_INFO_NET_VIRTUAL, n.virtual_ ? "1" : "0");
	if (n.operstate)
		ll_obj_info_once(obj, LL_INFO_NET_OPERSTATE, n.operstate);
	annotate_flags(obj, &n);

	free(path);
	path = ll_asprintf("%s/mtu", n.dir);
	if (ll_sysfs_read_long(path, 10, &v) == 0 && v > 0 && v <= 0x7fffffff)
		ll_obj_info_oncef(obj, LL_INFO_NET_MTU, "%ld", v);
	/* speed: -1 (SPEED_UNKNOWN) or EINVAL while the link is down; both unknown. */
	free(path);
	path = ll_asprintf("%s/speed", n.dir);
	if (ll_sysfs_read_long(path, 10, &v) == 0 && v > 0 && v < 0x7fffffff)
		ll_obj_info_oncef(obj, LL_INFO_NET_SPEED, "%ld", v);
	if (standin) {
		_cleanup_free_ char *mac = NULL;

		free(path);
		path = ll_asprintf("%s/address", n.dir);
		if (ll_sysfs_read(path, &mac) == 0 && is_mac(mac))
			ll_obj_info_once(obj, LL_INFO_NET_ADDRESS, mac);
	}
	if (addrs_known)
		add_addresses(obj, ifname, ifa);

	free(n.dir);
	free(n.operstate);
	free(n.devtype);
}

static void freeifaddrsp(struct ifaddrs **p)
{
	if (*p)
		freeifaddrs(*p);
}

int ll_annotate_netifs(hwloc_topology_t topo, const char *fsroot, struct ll_error *err)
{
	_cleanup_free_ char *classdir = ll_sysfs_path(fsroot, "/sys/class/net");
	_cleanup_(freeifaddrsp) struct ifaddrs *ifa = NULL;
	bool addrs_known = false;
	char **names = NULL;
	size_t n = 0;
	hwloc_obj_t obj;
	int r;

	/* Addresses only exist in the kernel of the machine we run on: under
	 * --fsroot they are unknown, not absent. A failing getifaddrs leaves them
	 * unknown too rather than failing the whole probe. */
	if (!fsroot && getifaddrs(&ifa) == 0)
		addrs_known = true;
	else if (!fsroot)
		ll_io_resource_note(-errno);

	r = ll_sysfs_list(classdir, &names, &n);
	if (r == -ENOENT || r == -ENOTDIR) {
		names = NULL;
		n = 0;
	} else if (r < 0) {
		return ll_error_set(err, r, "cannot read '%s': %s", classdir, strerror(-r));
	}

	for (obj = NULL; (obj = hwloc_get_next_osdev(topo, obj));)
		if (obj->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && obj->name && !strchr(obj->name, '/'))
			annotate_netif(obj, fsroot, obj->name, ifa, addrs_known, false);

	/* Interfaces hwloc did not create an OS device for: the virtual ones (live
	 * probes load without HWLOC_VIRTUAL_LINUX_OSDEV). */
	for (size_t i = 0; i < n; i++) {
		bool seen = false;

		if (strlen(names[i]) > 15 || strchr(names[i], ':'))
			continue;
		for (obj = NULL; !seen && (obj = hwloc_get_next_osdev(topo, obj));)
			seen = obj->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && ll_streq(obj->name, names[i]);
		if (seen)
			continue;
		obj = ll_topo_standin(topo, names[i], LL_STANDIN_NETWORK);
		if (obj)
			annotate_netif(obj, fsroot, names[i], ifa, addrs_known, true);
	}
	ll_strv_free(names, n);
	return 0;
}
