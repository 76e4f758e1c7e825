/* IMEX channels: the character devices through which CUDA imports memory another
 * node exported over multi-node NVLink. NVIDIA's IMEX guide ("IMEX Channels"): the
 * driver registers nvidia-caps-imex-channels, but the nodes
 * /dev/nvidia-caps-imex-channels/channelN are not created by default, do not survive
 * a reboot, and without one the CUDA calls fail with an insufficient-permission
 * error; NCCL then stops with "Check the IMEX channel configuration
 * (/dev/nvidia-caps-imex-channels)" (NCCL 2.30, src/mnnvl.cc).
 *
 * Read on every probe, with the other dynamic facts: an administrator creates the
 * channels after boot (mknod), so a cached value could be stale, and the read is one
 * directory listing (one failing open() on nodes without the directory). */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "annotate.h"
#include "annotations.h"
#include "llmlaunch/addr.h"
#include "llmlaunch/file.h"
#include "sysfs.h"

/* NVIDIA's IMEX guide ("IMEX Service Config Options"): the service reads
 * config.cfg at start; IMEX_NODE_CONFIG_FILE names the list of the domain's node
 * addresses, one a line, and with BIND_INTERFACE_IP empty the service takes this
 * node's address from that list. A node whose address is not in it cannot join. */
#define IMEX_CONFIG "/etc/nvidia-imex/config.cfg"
#define IMEX_NODES_DEFAULT "/etc/nvidia-imex/nodes_config.cfg"
/* A 72-GPU domain lists 18 nodes; the cap only keeps a wrong path from reading a disk. */
#define IMEX_FILE_MAX (64u << 10)
#define IMEX_NODES_MAX 4096

static bool is_channel_name(const char *name)
{
	unsigned n;

	return ll_startswith(name, "channel") && ll_parse_uint(name + 7, &n);
}

/* Value of KEY in config text (KEY=VALUE lines, '#' comments, the last one wins),
 * trimmed; NULL when absent or empty. */
static char *config_value(const char *text, const char *key)
{
	size_t klen = strlen(key);
	char *value = NULL;

	for (const char *line = text, *next; *line; line = next) {
		const char *p = line + strspn(line, " \t"), *end;

		next = line + strcspn(line, "\n");
		if (*next)
			next++;

		if (strncmp(p, key, klen) != 0)
			continue;
		p += klen;
		p += strspn(p, " \t");
		if (*p != '=')
			continue;
		p++;
		p += strspn(p, " \t");
		end = p + strcspn(p, "#\r\n");
		while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		free(value);
		value = end > p ? ll_strndup(p, (size_t)(end - p)) : NULL;
	}
	return value;
}

/* The IMEX service's node list, where this user may read it: IMEXNodesFile and
 * IMEXNodes (or IMEXNodesMissing), IMEXBindAddress. Nothing when IMEX is not
 * installed, or its config cannot be read: unknown, never guessed. Read on every
 * probe (a per-job deployment writes the list in each job's prolog); one failing
 * open() where IMEX is absent. */
static void annotate_imex_config(hwloc_obj_t root, const char *fsroot)
{
	_cleanup_free_ char *config_path = ll_sysfs_path(fsroot, IMEX_CONFIG), *config = NULL;
	_cleanup_free_ char *nodes_file = NULL, *nodes_path = NULL, *nodes = NULL, *bind = NULL;
	struct ll_buf list;
	size_t n = 0;
	int r;

	if (ll_read_file(config_path, IMEX_FILE_MAX, &config) < 0)
		return;
	nodes_file = config_value(config, "IMEX_NODE_CONFIG_FILE");
	if (!nodes_file)
		nodes_file = ll_strdup(IMEX_NODES_DEFAULT);
	if (nodes_file[0] != '/')
		return; /* relative to the service's working directory: not knowable here */
	bind = config_value(config, "BIND_INTERFACE_IP");
	ll_obj_info_once(root, LL_INFO_IMEX_NODES_FILE, nodes_file);
	if (bind) {
		_cleanup_free_ char *canon = ll_addr_canonical(bind, strlen(bind));

		ll_obj_info_once(root, LL_INFO_IMEX_BIND, canon);
	}
	nodes_path = ll_sysfs_path(fsroot, "%s", nodes_file);
	r = ll_read_file(nodes_path, IMEX_FILE_MAX, &nodes);
	if (r == -ENOENT) {
		ll_obj_info_once(root, LL_INFO_IMEX_NODES_MISSING, "yes");
		return;
	}
	if (r < 0)
		return;
	ll_buf_init(&list);
	for (const char *p = nodes; *p && n < IMEX_NODES_MAX;) {
		size_t len;

		p += strspn(p, " \t\r\n");
		if (*p == '#') {
			p += strcspn(p, "\n");
			continue;
		}
		len = strcspn(p, " \t\r\n#");
		if (len) {
			_cleanup_free_ char *canon = ll_addr_canonical(p, len);

			ll_buf_addf(&list, "%s%s", n++ ? "," : "", canon);
		}
		p += len;
	}
	ll_obj_info_once(root, LL_INFO_IMEX_NODES, list.s);
	ll_buf_release(&list);
}

int ll_annotate_imex(hwloc_topology_t topo, const char *fsroot, struct ll_error *err)
{
	hwloc_obj_t root = hwloc_get_root_obj(topo);
	_cleanup_free_ char *dev = ll_sysfs_path(fsroot, "/dev");
	_cleanup_free_ char *dir = ll_sysfs_path(fsroot, "/dev/nvidia-caps-imex-channels");
	char **names = NULL;
	size_t n = 0, channels = 0;
	const char *first = NULL;

	(void)err;
	/* Gathered trees (--fsroot of a copied /sys) have no /dev: unknown, not "none". */
	if (!ll_sysfs_is_dir(dev))
		return 0;
	if (ll_sysfs_list(dir, &names, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (is_channel_name(names[i])) {
				channels++;
				if (!first)
					first = names[i];
			}
	ll_obj_info_oncef(root, LL_INFO_IMEX_CHANNELS, "%zu", channels);
	if (first) {
		_cleanup_free_ char *path = ll_sysfs_path(fsroot, "/dev/nvidia-caps-imex-channels/%s", first);
		/* CUDA opens the channel for reading and writing (the guide's channel0 is
		 * crw-rw-rw-). */
		ll_obj_info_once(root, LL_INFO_IMEX_ACCESS, access(path, R_OK | W_OK) == 0 ? "ok" : "denied");
	}
	ll_strv_free(names, n);
	annotate_imex_config(root, fsroot);
	return 0;
}
