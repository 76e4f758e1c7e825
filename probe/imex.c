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
#include <string.h>
#include <unistd.h>

#include "annotate.h"
#include "annotations.h"
#include "sysfs.h"

static bool is_channel_name(const char *name)
{
	unsigned n;

	return ll_startswith(name, "channel") && ll_parse_uint(name + 7, &n);
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
	return 0;
}
