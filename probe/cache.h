/* The per-boot probe cache (probe/cache.c, docs/snapshot-format.md "The probe
 * cache"): the static part of a live topology as hwloc XML, so that a live probe
 * parses one small file instead of rediscovering the PCI tree. The dynamic facts
 * are read again on every load (ll_annotate_dynamic). A cache problem is never an
 * error: the caller falls back to the full probe and records why. */
#ifndef LLMLAUNCH_PROBE_CACHE_H
#define LLMLAUNCH_PROBE_CACHE_H

#include <sys/types.h>

#include <hwloc.h>

#include "llmlaunch/probe.h"

/* Root infos of the cache file holding its validity key; removed on load, so a
 * topology restored from the cache equals a freshly probed one. */
#define LL_INFO_CACHE_BOOT_ID "LLMLaunchCacheBootID"   /* /proc/sys/kernel/random/boot_id */
#define LL_INFO_CACHE_VERSION "LLMLaunchCacheVersion"  /* llmlaunch, snapshot, cache, hwloc versions; NVML on/off */
#define LL_INFO_CACHE_DEVICES "LLMLaunchCacheDevices"  /* FNV-1a of the device directories' entry names */
#define LL_INFO_CACHE_CONTEXT "LLMLaunchCacheContext"  /* FNV-1a of what else steers hwloc: cgroup, CPUs online, HWLOC_* ... */

#define LL_CACHE_FILE "topology.xml"

struct ll_cache_key {
	char *boot_id;
	char *version;
	char *devices;
	char *context;
};

struct ll_cache {
	char *path; /* DIR/topology.xml */
	struct ll_cache_key key;
};

/* The cache directory (created 0700 and checked), malloc'ed; NULL when there is
 * none that is ours alone: *ret_r is then -errno with *ret_bad the directory at
 * fault (describe it with ll_cache_dir_error), or 0 (no candidate). */
char *ll_cache_dir(int *ret_r, char **ret_bad);
const char *ll_cache_dir_error(int r);

/* May this live probe use the cache? 0 and c filled (directory created 0700 and
 * checked: ours, no symlink, not writable by others), or -errno with the reason in
 * the cache status (struct ll_probe_report). Call ll_cache_close either way. */
int ll_cache_open(struct ll_cache *c, const struct ll_probe_options *opts);
void ll_cache_close(struct ll_cache *c);

/* The key of this boot, process and build. -errno when there is no boot id. */
int ll_cache_key_compute(const struct ll_probe_options *opts, struct ll_cache_key *key);
void ll_cache_key_release(struct ll_cache_key *key);

/* The cache file's text: opened without following a symlink, a regular file of
 * ours that nobody else may write. -ENOENT (none yet), -ELOOP (a symlink), -EPERM
 * (another owner, or writable by others), -EINVAL (not a regular file), -EFBIG. */
int ll_cache_read(const struct ll_cache *c, char **ret);

/* Compare the key infos of a topology loaded from the cache with c's key and
 * remove them. NULL when they match, else which part differs. */
const char *ll_cache_key_mismatch(const struct ll_cache *c, hwloc_topology_t topo);

/* Write topo with c's key into the cache file (atomically); 0 or -errno. */
int ll_cache_write(const struct ll_cache *c, hwloc_topology_t topo);

/* Set the cache status of opts->report (struct ll_probe_report), if any. */
void ll_cache_status_set(const struct ll_probe_options *opts, const char *fmt, ...) LL_PRINTF(2, 3);

#endif
