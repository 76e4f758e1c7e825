/* Internal helpers of the sysfs annotators (host.c, sysfs-rdma.c, netif.c): read
 * attributes below a root prefix and store what they say as hwloc infos.
 *
 * Sysfs values are untrusted text (a --fsroot may hold anything): every reader
 * returns only short printable ASCII and reports anything else as -EINVAL, so
 * garbage becomes "unknown" and never reaches a snapshot. */
#ifndef LLMLAUNCH_PROBE_SYSFS_H
#define LLMLAUNCH_PROBE_SYSFS_H

#include <stdbool.h>
#include <stddef.h>

#include <hwloc.h>

#include "llmlaunch/util.h"

/* Longest attribute value kept; longer files are garbage for our purposes. */
#define LL_SYSFS_VALUE_MAX 255

/* Marker info on a Misc object, below the topology root, that stands in for an OS
 * device hwloc did not create; its value is the hwloc OS device type it would have
 * had ("Network", "OpenFabrics") and the object's name is the device's name. */
#define LL_STANDIN_NETWORK     "Network"
#define LL_STANDIN_OPENFABRICS "OpenFabrics"

/* "FSROOT/rest" or "/rest" when fsroot is NULL or empty; the caller frees. */
char *ll_sysfs_path(const char *fsroot, const char *fmt, ...) LL_PRINTF(2, 3);

/* First line of a regular file, trailing blanks removed. -EINVAL when it is empty,
 * longer than LL_SYSFS_VALUE_MAX or not printable ASCII; -errno when unreadable
 * (sysfs answers EINVAL for some attributes that have no value right now). */
int ll_sysfs_read(const char *path, char **ret);

/* Integer attributes: base 0 accepts "0x1003" and "1500"; -EINVAL for trailing junk. */
int ll_sysfs_read_long(const char *path, int base, long *ret);

/* Target of a symbolic link; -EINVAL when path is not a link. */
int ll_sysfs_readlink(const char *path, char **ret);

bool ll_sysfs_is_dir(const char *path);

/* Entry names of a directory (no "." or ".."), in natural order (mlx5_2 before
 * mlx5_10). *ret and *n untouched on error; free with ll_strv_free. */
int ll_sysfs_list(const char *path, char ***ret, size_t *n);


/* The dynamic linker's search path (probe/netplugin.c): ld_library_path's directories
 * (':' and ';' separate), those of /etc/ld.so.conf below fsroot and its includes,
 * then glibc's trusted ones; each once, absolute. Free with ll_strv_free. */
void ll_ld_search_path(const char *fsroot, const char *ld_library_path, char ***ret, size_t *n);

/* Parse a whole string as an unsigned decimal number (no sign, no junk). */
bool ll_parse_uint(const char *s, unsigned *ret);

/* Add info name=value unless obj already has an info of that name (hwloc's own
 * readers may have set it; annotating twice must not duplicate). */
void ll_obj_info_once(hwloc_obj_t obj, const char *name, const char *value);
void ll_obj_info_oncef(hwloc_obj_t obj, const char *name, const char *fmt, ...) LL_PRINTF(3, 4);

/* hwloc 2.9 can add an info but neither change nor remove one. These two edit
 * obj->infos directly: its strings are malloc'ed and hwloc frees them with free(),
 * and hwloc's own add recomputes the array size from infos_count, so shrinking the
 * count is safe. Every other file goes through them, never through the array. */
/* Give the first info `name` this value (in place: the order of infos is kept),
 * or add it when obj has none of that name. */
void ll_obj_info_set(hwloc_obj_t obj, const char *name, const char *value);
/* Remove every info whose name `drop` accepts; returns how many went. */
unsigned ll_obj_infos_drop(hwloc_obj_t obj, bool (*drop)(const char *name));

/* The Misc stand-in named `name` of kind `standin` below the root, created when
 * missing; NULL when the topology filters Misc objects out. */
hwloc_obj_t ll_topo_standin(hwloc_topology_t topo, const char *name, const char *standin);

#endif
