/* The per-boot probe cache: where it lives, its validity key, reading and writing
 * the file safely. What goes into it and how a hit is completed is load.c's. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llmlaunch/file.h"
#include "cache.h"
#include "llmlaunch/hash.h"
#include "annotations.h"
#include "sysfs.h"
#include "llmlaunch/version.h"

/* Bump when what the cache holds changes meaning (the stages before it, or the
 * key), so files of an older llmlaunch of the same version string are rewritten. */
#define CACHE_FORMAT 2
/* A cached topology is the size of a snapshot: some MB at most. */
#define CACHE_MAX_SIZE (64u << 20)

extern char **environ;

void ll_cache_status_set(const struct ll_probe_options *opts, const char *fmt, ...)
{
	va_list ap;

	if (!opts->report)
		return;
	free(opts->report->cache_status);
	va_start(ap, fmt);
	opts->report->cache_status = ll_vasprintf(fmt, ap);
	va_end(ap);
}

/* ---- the key ---- */

struct fnv {
	uint64_t h;
};

static void fnv_init(struct fnv *f)
{
	f->h = LL_HASH_INIT;
}

/* Each part is followed by a NUL, so ("ab","c") and ("a","bc") differ. */
static void fnv_add(struct fnv *f, const char *s)
{
	f->h = ll_hash_add_part(f->h, s);
}

static char *fnv_hex(const struct fnv *f)
{
	return ll_asprintf("%016" PRIx64, f->h);
}

/* A file's whole text as one part; NULL (its own value) when unreadable. */
static void fnv_add_file(struct fnv *f, const char *path)
{
	_cleanup_free_ char *text = NULL;

	fnv_add(f, path);
	fnv_add(f, ll_read_file(path, 1u << 20, &text) == 0 ? text : NULL);
}

/* The entry names of the directories whose devices hwloc turns into objects. A
 * device that comes or goes (hotplug, a driver loaded, an SR-IOV VF, a new
 * interface or loop device) changes the set; one that changes state does not. */
static char *devices_fingerprint(void)
{
	static const char *const dirs[] = {
		"/sys/bus/pci/devices", "/sys/class/infiniband", "/sys/class/net",
		"/sys/class/block", "/sys/class/drm",
	};
	struct fnv f;

	fnv_init(&f);
	for (size_t i = 0; i < LL_ARRAY_SIZE(dirs); i++) {
		char **names = NULL;
		size_t n = 0;

		fnv_add(&f, dirs[i]);
		if (ll_sysfs_list(dirs[i], &names, &n) < 0) {
			fnv_add(&f, NULL);
			continue;
		}
		for (size_t k = 0; k < n; k++)
			fnv_add(&f, names[k]);
		fnv_add(&f, "");
		ll_strv_free(names, n);
	}
	return fnv_hex(&f);
}

static int env_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* What else makes hwloc (or NVML) see this machine differently without a device
 * coming or going. Conservative: a change here costs one full probe, a missing
 * item a wrong topology. */
static char *context_fingerprint(void)
{
	_cleanup_free_ char *status = NULL;
	const char **hwloc_env = NULL;
	size_t n_env = 0;
	struct stat st;
	struct fnv f;

	fnv_init(&f);
	/* hwloc leaves out the CPUs and NUMA nodes the process's cgroup forbids;
	 * the cgroup path and the allowed lists name that restriction. */
	fnv_add_file(&f, "/proc/self/cgroup");
	if (ll_read_file("/proc/self/status", 1u << 20, &status) == 0) {
		char *save = NULL;

		for (char *line = strtok_r(status, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			if (ll_startswith(line, "Cpus_allowed_list:") || ll_startswith(line, "Mems_allowed_list:"))
				fnv_add(&f, line);
	}
	/* CPU and memory hotplug. */
	fnv_add_file(&f, "/sys/devices/system/cpu/online");
	fnv_add_file(&f, "/sys/devices/system/node/online");
	/* HWLOC_XMLFILE, HWLOC_COMPONENTS, HWLOC_ALLOW ... change what a load gives. */
	for (char **e = environ; e && *e; e++)
		if (ll_startswith(*e, "HWLOC_"))
			*(const char **)ll_array_push(&hwloc_env, &n_env, sizeof(char *)) = *e;
	if (n_env)
		qsort(hwloc_env, n_env, sizeof(*hwloc_env), env_cmp);
	for (size_t i = 0; i < n_env; i++)
		fnv_add(&f, hwloc_env[i]);
	free(hwloc_env);
	fnv_add(&f, "");
	/* NVML's answers are cached with the topology: a driver loaded, reloaded or
	 * upgraded changes the module's version file, a newly installed NVML library
	 * rewrites ld.so.cache (through which dlopen finds it). */
	fnv_add_file(&f, "/sys/module/nvidia/version");
	if (stat("/etc/ld.so.cache", &st) == 0) {
		char buf[128];

		snprintf(buf, sizeof(buf), "%ju:%ju:%jd.%09ld:%jd", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
			 (intmax_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (intmax_t)st.st_size);
		fnv_add(&f, buf);
	} else {
		fnv_add(&f, NULL);
	}
	return fnv_hex(&f);
}

int ll_cache_key_compute(const struct ll_probe_options *opts, struct ll_cache_key *key)
{
	char *boot_id = NULL;
	int r;

	r = ll_read_line("/proc/sys/kernel/random/boot_id", &boot_id);
	if (r < 0)
		return r;
	if (!*boot_id) {
		free(boot_id);
		return -ENODATA;
	}
	key->boot_id = boot_id;
	key->version = ll_asprintf("llmlaunch %s, snapshot 1, cache %d, hwloc %s (API 0x%x), NVML %s",
				   LLMLAUNCH_VERSION, CACHE_FORMAT, HWLOC_VERSION, hwloc_get_api_version(),
				   opts->skip_nvml ? "off" : "on");
	key->devices = devices_fingerprint();
	key->context = context_fingerprint();
	return 0;
}

void ll_cache_key_release(struct ll_cache_key *key)
{
	free(key->boot_id);
	free(key->version);
	free(key->devices);
	free(key->context);
	memset(key, 0, sizeof(*key));
}

/* ---- the directory ---- */

/* dir exists (created with `mode` when missing), is a directory and not a link,
 * belongs to us and nobody else may write it: else a planted file could be
 * swapped in between our check and our read. */
static int dir_ensure(const char *dir, mode_t mode)
{
	struct stat st;

	if (mkdir(dir, mode) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_uid != geteuid() || (st.st_mode & 022))
		return -EPERM;
	return 0;
}

static const char *dir_error(int r)
{
	return r == -EPERM ? "owned by another user or writable by others" : strerror(-r);
}

/* $LLMLAUNCH_CACHE_DIR; $XDG_RUNTIME_DIR/llmlaunch (a per-user tmpfs that
 * systemd empties at logout); /run/llmlaunch/cache for root (/run empties at
 * boot). NULL: no place that is ours alone, so no cache. */
static char *cache_dir(int *ret_r, char **ret_bad)
{
	const char *env = getenv("LLMLAUNCH_CACHE_DIR"), *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	char *dir;
	int r;

	*ret_r = 0;
	if (env && *env) {
		dir = ll_strdup(env);
	} else if (xdg && xdg[0] == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
		   !(st.st_mode & 022)) {
		dir = ll_asprintf("%s/llmlaunch", xdg);
	} else if (geteuid() == 0) {
		/* /run/llmlaunch is also the Slurm prolog's state directory, whose
		 * snapshot the job's tasks read: it stays 0755 as the prolog makes it. */
		r = dir_ensure("/run/llmlaunch", 0755);
		if (r < 0) {
			*ret_r = r;
			*ret_bad = ll_strdup("/run/llmlaunch");
			return NULL;
		}
		dir = ll_strdup("/run/llmlaunch/cache");
	} else {
		return NULL;
	}
	r = dir_ensure(dir, 0700);
	if (r < 0) {
		*ret_r = r;
		*ret_bad = dir;
		return NULL;
	}
	return dir;
}

char *ll_cache_dir(int *ret_r, char **ret_bad)
{
	return cache_dir(ret_r, ret_bad);
}

const char *ll_cache_dir_error(int r)
{
	return dir_error(r);
}

int ll_cache_open(struct ll_cache *c, const struct ll_probe_options *opts)
{
	_cleanup_free_ char *dir = NULL, *bad = NULL;
	const char *lib = getenv("LLMLAUNCH_NVML_LIBRARY");
	int r;

	memset(c, 0, sizeof(*c));
	if (opts->no_cache) {
		ll_cache_status_set(opts, "off (--no-cache)");
		return -ECANCELED;
	}
	/* A library named on purpose is one under test or being debugged: its
	 * answers may change from one run to the next. */
	if (opts->nvml_library || (lib && *lib && !opts->skip_nvml)) {
		ll_cache_status_set(opts, "off (an NVML library is named explicitly)");
		return -ECANCELED;
	}
	lib = getenv("LLMLAUNCH_ROCM_SMI_LIBRARY");
	if (lib && *lib && !opts->skip_nvml) {
		ll_cache_status_set(opts, "off (a ROCm SMI library is named explicitly)");
		return -ECANCELED;
	}
	dir = cache_dir(&r, &bad);
	if (!dir) {
		if (r < 0)
			ll_cache_status_set(opts, "off (cannot use '%s': %s)", bad, dir_error(r));
		else
			ll_cache_status_set(opts, "off (no cache directory: set XDG_RUNTIME_DIR or LLMLAUNCH_CACHE_DIR)");
		return r < 0 ? r : -ENOENT;
	}
	r = ll_cache_key_compute(opts, &c->key);
	if (r < 0) {
		ll_cache_status_set(opts, "off (cannot read the boot id: %s)", strerror(-r));
		return r;
	}
	c->path = ll_asprintf("%s/%s", dir, LL_CACHE_FILE);
	return 0;
}

void ll_cache_close(struct ll_cache *c)
{
	free(c->path);
	ll_cache_key_release(&c->key);
	c->path = NULL;
}

/* ---- the file ---- */

int ll_cache_read(const struct ll_cache *c, char **ret)
{
	struct ll_buf b;
	struct stat st;
	char chunk[65536];
	int fd, r = 0;

	fd = open(c->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = -EINVAL;
	else if (st.st_uid != geteuid() || (st.st_mode & 022))
		r = -EPERM;
	else if ((uintmax_t)st.st_size > CACHE_MAX_SIZE)
		r = -EFBIG;
	if (r < 0) {
		close(fd);
		return r;
	}
	ll_buf_init(&b);
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		if (b.len + (size_t)n > CACHE_MAX_SIZE) {
			r = -EFBIG;
			break;
		}
		ll_buf_addn(&b, chunk, (size_t)n);
	}
	close(fd);
	if (r == 0 && memchr(b.s, '\0', b.len))
		r = -EBADMSG;
	if (r < 0) {
		ll_buf_release(&b);
		return r;
	}
	*ret = ll_buf_detach(&b);
	return 0;
}

static bool is_cache_key_info(const char *name)
{
	return ll_startswith(name, "LLMLaunchCache");
}

const char *ll_cache_key_mismatch(const struct ll_cache *c, hwloc_topology_t topo)
{
	static const struct {
		const char *info, *what;
		size_t offset;
	} parts[] = {
		{ LL_INFO_CACHE_BOOT_ID, "written before the last boot", offsetof(struct ll_cache_key, boot_id) },
		{ LL_INFO_CACHE_VERSION, "written by another llmlaunch or hwloc version",
		  offsetof(struct ll_cache_key, version) },
		{ LL_INFO_CACHE_DEVICES, "the set of devices changed", offsetof(struct ll_cache_key, devices) },
		{ LL_INFO_CACHE_CONTEXT, "written under another cgroup, CPU set, HWLOC_* setting or NVML driver",
		  offsetof(struct ll_cache_key, context) },
	};
	hwloc_obj_t root = hwloc_get_root_obj(topo);
	const char *why = NULL;

	for (size_t i = 0; i < LL_ARRAY_SIZE(parts) && !why; i++) {
		const char *want = *(char *const *)((const char *)&c->key + parts[i].offset);
		const char *have = hwloc_obj_get_info_by_name(root, parts[i].info);

		if (!have)
			why = "not a cache file (no key)";
		else if (!ll_streq(have, want))
			why = parts[i].what;
	}
	ll_obj_infos_drop(root, is_cache_key_info);
	return why;
}

int ll_cache_write(const struct ll_cache *c, hwloc_topology_t topo)
{
	hwloc_obj_t root = hwloc_get_root_obj(topo);
	char *xml = NULL;
	int len, r;

	hwloc_obj_add_info(root, LL_INFO_CACHE_BOOT_ID, c->key.boot_id);
	hwloc_obj_add_info(root, LL_INFO_CACHE_VERSION, c->key.version);
	hwloc_obj_add_info(root, LL_INFO_CACHE_DEVICES, c->key.devices);
	hwloc_obj_add_info(root, LL_INFO_CACHE_CONTEXT, c->key.context);
	r = hwloc_topology_export_xmlbuffer(topo, &xml, &len, 0);
	ll_obj_infos_drop(root, is_cache_key_info);
	if (r < 0)
		return -EIO;
	/* len counts the terminating NUL. */
	r = ll_file_replace(c->path, xml, len > 0 ? (size_t)len - 1 : 0, 0600);
	hwloc_free_xmlbuffer(topo, xml);
	return r;
}
