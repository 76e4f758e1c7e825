/* Bandwidth matrices between GPUs (hwloc distances), written the way hwloc's own
 * NVML and RSMI backends write theirs: kind FROM_USER | MEANS_BANDWIDTH, MB/s, a
 * large value on the diagonal (local memory is faster than any link). */
#include <errno.h>
#include <string.h>

#include "annotate.h"

bool ll_topo_has_distances(hwloc_topology_t topo, const char *name)
{
	unsigned nr = 0;

	return hwloc_distances_get_by_name(topo, name, &nr, NULL, 0) == 0 && nr > 0;
}

int ll_topo_add_bandwidth(hwloc_topology_t topo, const char *name, hwloc_obj_t *objs, size_t n, const long *bw,
			  size_t stride, long diagonal, struct ll_error *err)
{
	_cleanup_free_ hwloc_uint64_t *values = ll_calloc(n * n + 1, sizeof(*values));
	hwloc_distances_add_handle_t h;

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			values[i * n + j] = i == j ? (hwloc_uint64_t)diagonal : (hwloc_uint64_t)bw[i * stride + j];
	h = hwloc_distances_add_create(topo, name, HWLOC_DISTANCES_KIND_FROM_USER | HWLOC_DISTANCES_KIND_MEANS_BANDWIDTH,
				       0);
	if (!h)
		return ll_error_set(err, -errno ? -errno : -EINVAL, "cannot create the '%s' distances: %s", name,
				    strerror(errno));
	/* hwloc releases the handle itself when add_values or add_commit fail. */
	if (hwloc_distances_add_values(topo, h, (unsigned)n, objs, values, 0) < 0 ||
	    hwloc_distances_add_commit(topo, h, 0) < 0)
		return ll_error_set(err, -errno ? -errno : -EINVAL, "cannot add the '%s' distances: %s", name,
				    strerror(errno));
	return 0;
}
