/* Loading a topology: the live machine (hwloc + the annotators in annotate.h, the
 * static part from the per-boot cache of cache.c when it is valid), a fake /sys
 * under --fsroot, or a saved snapshot. Everything the probe learns is stored in
 * the topology, so the facts come from ll_probe_facts() alone. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <hwloc.h>

#include "llmlaunch/file.h"
#include "llmlaunch/probe.h"
#include "annotate.h"
#include "cache.h"
#include "sysfs.h"
#include "annotations.h"
#include "xml-check.h"

/* Snapshots of real machines are at most a few MB; the cap only keeps a wrong
 * path (a disk image, /dev/zero) from eating memory. */
#define XML_MAX_SIZE (256u << 20)

static void topo_destroyp(hwloc_topology_t *t)
{
	if (*t)
		hwloc_topology_destroy(*t);
}

/* hwloc reads some settings only from the environment. Set them for one load and
 * put the old values back, so they never reach the processes we launch later. */
struct env_save {
	const char *name;
	char *old;
	bool had;
};

static void env_push(struct env_save *s, const char *name, const char *value)
{
	const char *old = getenv(name);

	s->name = name;
	s->had = old != NULL;
	s->old = ll_strdup(old);
	setenv(name, value, 1);
}

static void env_pop(struct env_save *s)
{
	if (!s->name)
		return;
	if (s->had)
		setenv(s->name, s->old, 1);
	else
		unsetenv(s->name);
	free(s->old);
	s->name = NULL;
}

/* hwloc dlopens every plugin it finds at the first init of a process: the gl
 * one pulls in X11, libxml2 pulls in ICU, opencl and libpciaccess their own
 * stacks. None of them adds a fact we use (hwloc's built-in XML parser and its
 * Linux sysfs PCI discovery do the same work), and together they cost more
 * than the whole replay, so keep them out. */
static int topo_init(hwloc_topology_t *topo)
{
	static const char ours[] = "hwloc_gl,hwloc_opencl,hwloc_xml_libxml,hwloc_pci";
	const char *user = getenv("HWLOC_PLUGINS_BLACKLIST");
	_cleanup_free_ char *list = user && *user ? ll_asprintf("%s,%s", ours, user) : NULL;
	struct env_save save = { 0 };
	int r;

	env_push(&save, "HWLOC_PLUGINS_BLACKLIST", list ? list : ours);
	r = hwloc_topology_init(topo);
	if (r < 0)
		r = -errno;
	env_pop(&save);
	return r;
}

/* Load hwloc XML text (buf, as read from path) the way every replay does, with
 * extra hwloc topology flags. */
static int load_xml_buffer(const char *path, const char *buf, unsigned long flags, hwloc_topology_t *ret,
			   struct ll_error *err)
{
	_cleanup_(topo_destroyp) hwloc_topology_t topo = NULL;
	struct env_save save = { 0 };
	const char *p, *why = NULL;
	int r, major;

	for (p = buf; *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'; p++)
		;
	if (*p == '\0')
		return ll_error_set(err, -EINVAL, "cannot load '%s': the file is empty", path);
	if (*p != '<')
		return ll_error_set(err, -EINVAL, "cannot load '%s': not an XML file", path);
	major = probe_xml_format_major(p);
	if (major < 0) {
		/* One line on purpose: scripts read the first stderr line. */
		if (strstr(p, "<system"))
			return ll_error_set(err, -EINVAL,
					    "cannot load '%s': an NCCL topology file, not an hwloc topology "
					    "(give one from 'llmlaunch probe --save' or 'lstopo --of xml')", path);
		return ll_error_set(err, -EINVAL, "cannot load '%s': not an hwloc topology (no <topology> element)",
				    path);
	}
	if (major == 0)
		return ll_error_set(err, -EINVAL, "cannot load '%s': invalid or truncated hwloc XML", path);
	if (major > 2) {
		return ll_error_set(err, -EPROTONOSUPPORT,
				    "cannot load '%s': hwloc %d.x XML format, this build reads hwloc 1.x and 2.x files "
				    "(export it with hwloc 2's lstopo)", path, major);
	}

	r = probe_xml_check(p, major, &why);
	if (r == -E2BIG)
		return ll_error_set(err, -EINVAL,
				    "cannot load '%s': elements nested more than %d deep, deeper than any real topology",
				    path, XML_MAX_DEPTH);
	if (r == -EBADR)
		return ll_error_set(err, -EINVAL, "cannot load '%s': %s (not hwloc's own XML)", path, why);
	if (r < 0)
		return ll_error_set(err, -EINVAL, "cannot load '%s': invalid or truncated hwloc XML", path);

	r = topo_init(&topo);
	if (r < 0)
		return ll_error_set(err, r, "cannot initialize hwloc: %s", strerror(-r));
	/* Keep every object the file has: filters apply to XML imports too, and a
	 * snapshot saved with our live filters must come back unchanged. */
	hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
	hwloc_topology_set_type_filter(topo, HWLOC_OBJ_MISC, HWLOC_TYPE_FILTER_KEEP_ALL);
	if (flags && hwloc_topology_set_flags(topo, flags) < 0)
		return ll_error_set(err, -errno, "cannot load '%s': hwloc refuses the flags 0x%lx", path, flags);
	/* probe_xml_check() mirrors hwloc's own reader: make sure that is the one used, even
	 * where libxml2 is built into hwloc or the user asks for it. hwloc reads the
	 * setting once per process, at the first import. */
	env_push(&save, "HWLOC_LIBXML", "0");
	r = hwloc_topology_set_xmlbuffer(topo, buf, (int)strlen(buf) + 1) < 0 || hwloc_topology_load(topo) < 0;
	env_pop(&save);
	if (r)
		return ll_error_set(err, -EINVAL, "cannot load '%s': invalid or truncated hwloc XML", path);
	*ret = LL_TAKE(topo);
	return 0;
}

static int load_xml(const char *path, hwloc_topology_t *ret, struct ll_error *err)
{
	_cleanup_free_ char *buf = NULL;
	int r;

	r = ll_read_file(path, XML_MAX_SIZE, &buf);
	if (r == -EFBIG)
		return ll_error_set(err, r, "cannot load '%s': larger than %u MB, not a topology snapshot", path,
				    XML_MAX_SIZE >> 20);
	if (r == -EBADMSG) /* NUL bytes */
		return ll_error_set(err, -EINVAL, "cannot load '%s': not an XML file (binary data)", path);
	if (r < 0)
		return ll_error_set(err, r, "cannot open '%s': %s", path, ll_file_strerror(r));
	return load_xml_buffer(path, buf, 0, ret, err);
}

int ll_probe_load_xml_text(const char *name, const char *text, hwloc_topology_t *ret, struct ll_error *err)
{
	return load_xml_buffer(name, text, 0, ret, err);
}

/* hwloc fills these from uname() of the machine it runs on, even under
 * HWLOC_FSROOT; there they would describe the wrong machine. */
static bool is_uname_info(const char *name)
{
	static const char *const names[] = { "HostName", "OSName", "OSRelease", "OSVersion", "Architecture" };

	for (size_t k = 0; k < LL_ARRAY_SIZE(names); k++)
		if (strcmp(name, names[k]) == 0)
			return true;
	return false;
}

/* Whether this host has neither NVIDIA's driver (NVML opens its control device,
 * which containers get too) nor an NVIDIA PCI device: NVML would answer nothing. */
static bool nvidia_absent(hwloc_topology_t topo)
{
	if (access("/dev/nvidiactl", F_OK) == 0)
		return false;
	for (hwloc_obj_t o = NULL; (o = hwloc_get_next_pcidev(topo, o));)
		if (o->attr->pcidev.vendor_id == 0x10de)
			return false;
	return true;
}

static int annotate_nvml(hwloc_topology_t topo, const struct ll_probe_options *opts, struct ll_error *err)
{
	const char *lib = opts->nvml_library;

	if (opts->skip_nvml)
		return 0;
	if (!lib)
		lib = getenv("LLMLAUNCH_NVML_LIBRARY");
	/* Under --fsroot the machine is someone else's: this host's NVML would
	 * describe the wrong GPUs. Only a library named on purpose is used there. */
	if (!lib && opts->fsroot)
		return 0;
	/* A CPU node: no library search (where the library is absent, some hundred
	 * failed opens, a tenth of a cold probe), and no "Driver Not Loaded" warning
	 * where it is installed without a driver (a login node). With an NVIDIA device
	 * and no driver, NVML is still asked: its warning is the news. */
	if (!lib && nvidia_absent(topo))
		return 0;
	return ll_annotate_nvml(topo, lib ? lib : "libnvidia-ml.so.1",
				opts->report ? &opts->report->nvml_warning : NULL, err);
}

/* AMD GPUs: the kernel's KFD topology, then ROCm SMI where it is (a library named
 * on purpose only under --fsroot, as for NVML). */
static int annotate_gpus(hwloc_topology_t topo, const struct ll_probe_options *opts, struct ll_error *err)
{
	const char *lib = getenv("LLMLAUNCH_ROCM_SMI_LIBRARY");
	int r;

	r = ll_annotate_kfd(topo, opts->fsroot, err);
	if (r < 0 || opts->skip_nvml || (opts->fsroot && !lib))
		return r;
	return ll_annotate_rsmi(topo, lib, opts->report ? &opts->report->rsmi_warning : NULL, err);
}

/* Under --fsroot: the annotators on top of hwloc's own infos, which they never
 * overwrite (what a gathered tree shows is kept as hwloc read it). */
static int annotate_fsroot(hwloc_topology_t topo, const struct ll_probe_options *opts, struct ll_error *err)
{
	int r;

	r = ll_annotate_host(topo, opts->fsroot, err);
	if (r < 0)
		return r;
	r = ll_annotate_rdma(topo, opts->fsroot, err);
	if (r < 0)
		return r;
	r = ll_annotate_netifs(topo, opts->fsroot, err);
	if (r < 0)
		return r;
	r = annotate_gpus(topo, opts, err);
	if (r < 0)
		return r;
	return annotate_nvml(topo, opts, err);
}

static void cache_closep(struct ll_cache *c)
{
	ll_cache_close(c);
}

/* The static part of the live topology from the cache file, when the file is
 * sound and its key is this boot's, process's and build's. Anything else is a
 * miss, recorded in the status and never an error. */
static bool cache_load(const struct ll_cache *c, hwloc_topology_t *ret, const char **why)
{
	_cleanup_(topo_destroyp) hwloc_topology_t topo = NULL;
	_cleanup_free_ char *buf = NULL;
	struct ll_error xerr = { 0 };
	static char reason[256];
	int r;

	r = ll_cache_read(c, &buf);
	if (r < 0) {
		*why = r == -ENOENT ? "no cache file yet"
		       : r == -ELOOP ? "the cache file is a symbolic link, not followed"
		       : r == -EPERM ? "the cache file is another user's or writable by others"
		       : r == -EINVAL ? "the cache file is not a regular file"
				      : strerror(-r);
		return false;
	}
	/* The cached topology is this machine's: binding works on it, and it keeps
	 * the support flags hwloc found (they are part of what a snapshot holds). */
	if (load_xml_buffer(c->path, buf, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM | HWLOC_TOPOLOGY_FLAG_IMPORT_SUPPORT, &topo,
			    &xerr) < 0) {
		snprintf(reason, sizeof(reason), "%s", xerr.message ? xerr.message : "unreadable");
		ll_error_clear(&xerr);
		*why = reason;
		return false;
	}
	*why = ll_cache_key_mismatch(c, topo);
	if (*why)
		return false;
	*ret = LL_TAKE(topo);
	return true;
}
/* As root, hwloc reads the whole 256-byte header of every PCI device's config
 * space; without CAP_SYS_ADMIN the kernel gives the first 64 bytes, as it does to
 * every unprivileged user. Where a hypervisor emulates config space one 4-byte
 * port access at a time (tens of microseconds each), the full header costs about
 * 2 ms a device: more than all the rest of a cold probe together. What we take
 * from hwloc's PCI objects lies in the first 64 bytes (header type, bridge bus
 * numbers, revision; ids and class come from sysfs files), and hwloc then takes
 * the link speed from sysfs (current_link_speed/width, the same link status
 * register), so root and other users get the same topology. Only the effective
 * set of this thread is lowered, and only while hwloc loads. */
struct sys_admin_save {
	struct __user_cap_header_struct header;
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	bool lowered;
};

static void sys_admin_lower(struct sys_admin_save *s)
{
	struct __user_cap_data_struct lowered[_LINUX_CAPABILITY_U32S_3];

	s->lowered = false;
	s->header = (struct __user_cap_header_struct){ .version = _LINUX_CAPABILITY_VERSION_3 };
	if (syscall(SYS_capget, &s->header, s->data) < 0 ||
	    !(s->data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective & CAP_TO_MASK(CAP_SYS_ADMIN)))
		return;
	memcpy(lowered, s->data, sizeof(lowered));
	lowered[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
	s->lowered = syscall(SYS_capset, &s->header, lowered) == 0;
}

/* Raising the effective set back within the permitted one cannot fail. */
static void sys_admin_restore(struct sys_admin_save *s)
{
	if (s->lowered)
		(void)syscall(SYS_capset, &s->header, s->data);
	s->lowered = false;
}

/* hwloc's discovery of the machine (or of the tree under fsroot), nothing added. */
static int load_hwloc(const struct ll_probe_options *opts, hwloc_topology_t *ret, struct ll_error *err)
{
	_cleanup_(topo_destroyp) hwloc_topology_t topo = NULL;
	struct env_save fsroot = { 0 };
	struct sys_admin_save caps;
	struct stat st;
	int r;

	if (opts->fsroot) {
		if (stat(opts->fsroot, &st) < 0)
			return ll_error_set(err, -errno, "cannot use fsroot '%s': %s", opts->fsroot, strerror(errno));
		if (!S_ISDIR(st.st_mode))
			return ll_error_set(err, -ENOTDIR, "cannot use fsroot '%s': not a directory", opts->fsroot);
		/* Without it hwloc gives up on the tree, prints so on stderr, and
		 * falls back to this machine's CPUs: the wrong machine again. */
		_cleanup_free_ char *cpu = ll_asprintf("%s/sys/devices/system/cpu", opts->fsroot);
		if (stat(cpu, &st) < 0 || !S_ISDIR(st.st_mode))
			return ll_error_set(err, -ENOENT,
					    "cannot use fsroot '%s': no sys/devices/system/cpu, not a copy of a Linux /sys",
					    opts->fsroot);
	}
	r = topo_init(&topo);
	if (r < 0)
		return ll_error_set(err, r, "cannot initialize hwloc: %s", strerror(-r));
	/* lstopo's default: devices that matter (GPUs, NICs, NVSwitches) and the
	 * bridges above them, which the PCIe path classes need. */
	hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	/* NVSwitches are PCI devices of class 0680 ("other bridge") that the
	 * important-only filter drops, and NVML's NVLink peers must be found after
	 * the load (probe/nvml.c marks them subtype NVSwitch, as hwloc does). */
	hwloc_topology_set_type_filter(topo, HWLOC_OBJ_PCI_DEVICE, HWLOC_TYPE_FILTER_KEEP_ALL);
	/* The annotators add Misc stand-ins for devices hwloc makes no OS device
	 * of (scif0, RDMA without PCI); hwloc refuses Misc objects by default. */
	hwloc_topology_set_type_filter(topo, HWLOC_OBJ_MISC, HWLOC_TYPE_FILTER_KEEP_ALL);
	/* hwloc's Linux backend reads PCI from sysfs by itself; the libpciaccess
	 * plugin would ignore --fsroot (it always reads the real /sys) and leaks
	 * its device list on every load. */
	hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
	if (opts->fsroot) {
		/* Without this the real CPU's cpuid data leaks into the fake tree. */
		hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
		hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "opencl");
		hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "gl");
		env_push(&fsroot, "HWLOC_FSROOT", opts->fsroot);
	}
	/* No HWLOC_VIRTUAL_LINUX_OSDEV: with it hwloc also walks every virtual block
	 * device (loop0-7, zram, dm-N: some 60 system calls each, more than half of a
	 * cold probe on a plain VM), and nothing here needs a block device. The
	 * virtual interfaces (lo, docker0, veth, bridges) and RDMA devices (rxe, siw)
	 * it would add, NCCL_SOCKET_IFNAME and the HCA decisions do need: netif.c and
	 * sysfs-rdma.c add those as stand-ins, as for a snapshot saved without it. */
	sys_admin_lower(&caps);
	r = hwloc_topology_load(topo);
	if (r < 0)
		r = -errno;
	sys_admin_restore(&caps);
	env_pop(&fsroot);
	if (r < 0) {
		if (opts->fsroot)
			return ll_error_set(err, r, "cannot load the topology under fsroot '%s': %s", opts->fsroot,
					    strerror(-r));
		return ll_error_set(err, r, "cannot load this machine's topology: %s", strerror(-r));
	}
	*ret = LL_TAKE(topo);
	return 0;
}

/* Descriptors a probe needs free at once, with room to spare: hwloc's Linux
 * backend holds the root, a directory and a file open while it walks /sys, NVML
 * and dlopen() a few more. Fewer, and hwloc silently reads no PCI device (seen
 * under `ulimit -n 5`: "known, no GPUs"). */
#define PROBE_MIN_FREE_FDS 32

/* Descriptors open below `limit`, counted in /proc/self/fd (less the one reading
 * it): -errno where /proc cannot tell (not mounted), or no descriptor is free to
 * read it (-EMFILE). */
static int open_fds_below(rlim_t limit, rlim_t *ret)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	rlim_t n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char *end;
		unsigned long fd = strtoul(e->d_name, &end, 10);

		if (e->d_name[0] != '.' && *end == '\0' && fd < limit && (int)fd != dirfd(d))
			n++;
	}
	closedir(d);
	*ret = n;
	return 0;
}

/* Take PROBE_MIN_FREE_FDS descriptors and give them back: 0, or -EMFILE (-ENFILE). */
static int take_fds(void)
{
	int fds[PROBE_MIN_FREE_FDS], n = 0, r = 0;

	for (; n < PROBE_MIN_FREE_FDS; n++) {
		fds[n] = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
		if (fds[n] < 0 && errno == EBADF)
			fds[n] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fds[n] < 0) {
			r = -errno;
			break;
		}
	}
	while (n > 0)
		close(fds[--n]);
	return r;
}

/* Whether PROBE_MIN_FREE_FDS descriptors can be had; -EMFILE (or -ENFILE) else.
 * A new descriptor takes the lowest free number below RLIMIT_NOFILE, so the room
 * left is the limit less those open below it: one read of /proc/self/fd (5 system
 * calls) rather than taking and giving back 32 descriptors (64), which every probe,
 * warm ones too, would pay. Without /proc, or without a limit, they are taken. */
static int fd_headroom(struct ll_error *err)
{
	struct rlimit rl;
	rlim_t open_now = 0;
	int r = -ENOENT;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		r = open_fds_below(rl.rlim_cur, &open_now);
		if (r == 0 && rl.rlim_cur < open_now + PROBE_MIN_FREE_FDS)
			r = -EMFILE;
	}
	if (r < 0 && r != -EMFILE && r != -ENFILE)
		r = take_fds();
	if (r == 0)
		return 0;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		ll_error_set(err, r, "cannot probe this machine: fewer than %d file descriptors are free (ulimit -n %llu): "
			     "what cannot be opened would be reported as absent", PROBE_MIN_FREE_FDS,
			     (unsigned long long)rl.rlim_cur);
	else
		ll_error_set(err, r, "cannot probe this machine: fewer than %d file descriptors are free (%s)",
			     PROBE_MIN_FREE_FDS, strerror(-r));
	return ll_error_hint(err, "raise the limit (ulimit -n 1024) or close descriptors"), r;
}

/* A read that ran out of descriptors or memory during the probe: the facts would
 * say "none" where the truth is "could not look". */
static int resource_failure(struct ll_error *err)
{
	int r = ll_io_resource_take();

	if (r == 0)
		return 0;
	ll_error_set(err, r, "cannot probe this machine: a read failed: %s; its devices would be reported as absent",
		     strerror(-r));
	return ll_error_hint(err, "raise the limit (ulimit -n, ulimit -v) or free memory, then probe again"), r;
}

/* The machine itself. The static part (hwloc's discovery and NVML's answers)
 * comes from the cache when it is valid, else from a full probe that then
 * rewrites the cache; the dynamic facts are read afterwards in both cases, the
 * same way, so that a hit and a full probe give the same topology. */
static int load_machine(const struct ll_probe_options *opts, hwloc_topology_t *ret, struct ll_error *err)
{
	_cleanup_(topo_destroyp) hwloc_topology_t topo = NULL;
	_cleanup_(cache_closep) struct ll_cache cache = { 0 };
	const char *miss = NULL;
	bool use_cache;
	int r;

	use_cache = ll_cache_open(&cache, opts) == 0;
	if (use_cache && cache_load(&cache, &topo, &miss)) {
		ll_cache_status_set(opts, "hit '%s'", cache.path);
	} else {
		r = load_hwloc(opts, &topo, err);
		if (r < 0)
			return r;
		r = annotate_gpus(topo, opts, err);
		if (r < 0)
			return r;
		r = annotate_nvml(topo, opts, err);
		if (r < 0)
			return r;
		/* Never cache "none" for "could not look". */
		r = resource_failure(err);
		if (r < 0)
			return r;
		if (use_cache) {
			/* A broken NVML is retried (and warned about) at every
			 * probe until it works, not frozen into the cache. */
			if (opts->report && (opts->report->nvml_warning || opts->report->rsmi_warning))
				ll_cache_status_set(opts, "miss '%s' (%s); not written: NVML gave a warning", cache.path, miss);
			/* Right after boot the fabric manager is still registering GPUs:
			 * the state is read again at every probe until it settles. */
			else if (ll_topo_fabric_pending(topo))
				ll_cache_status_set(opts, "miss '%s' (%s); not written: NVLink fabric registration in progress",
						    cache.path, miss);
			else if ((r = ll_cache_write(&cache, topo)) < 0)
				ll_cache_status_set(opts, "miss '%s' (%s); cannot write it: %s", cache.path, miss,
						    strerror(-r));
			else
				ll_cache_status_set(opts, "miss '%s' (%s); written", cache.path, miss);
		}
	}
	r = ll_annotate_dynamic(topo, NULL, err);
	if (r < 0)
		return r;
	*ret = LL_TAKE(topo);
	return 0;
}

static int load_live(const struct ll_probe_options *opts, hwloc_topology_t *ret, struct ll_error *err)
{
	_cleanup_(topo_destroyp) hwloc_topology_t topo = NULL;
	int r;

	ll_io_resource_take();
	r = fd_headroom(err);
	if (r < 0)
		return r;
	if (opts->fsroot) {
		r = load_hwloc(opts, &topo, err);
		if (r < 0)
			return r;
		ll_obj_infos_drop(hwloc_get_root_obj(topo), is_uname_info);
		r = annotate_fsroot(topo, opts, err);
	} else {
		r = load_machine(opts, &topo, err);
	}
	if (r == 0)
		r = resource_failure(err);
	if (r < 0)
		return r;
	if (hwloc_obj_add_info(hwloc_get_root_obj(topo), LL_INFO_SNAPSHOT, "1") < 0)
		return ll_error_set(err, -ENOMEM, "cannot annotate the topology: out of memory");
	*ret = LL_TAKE(topo);
	return 0;
}

void ll_probe_report_release(struct ll_probe_report *r)
{
	if (!r)
		return;
	free(r->nvml_warning);
	free(r->rsmi_warning);
	free(r->cache_status);
	r->nvml_warning = r->rsmi_warning = r->cache_status = NULL;
}

int ll_probe_load(const struct ll_probe_options *opts, hwloc_topology_t *ret, struct ll_error *err)
{
	ll_probe_report_release(opts->report);
	if (opts->topology_file)
		return load_xml(opts->topology_file, ret, err);
	return load_live(opts, ret, err);
}

int ll_probe(const struct ll_probe_options *opts, hwloc_topology_t *ret_topo, struct ll_facts **ret,
	     struct ll_error *err)
{
	_cleanup_(topo_destroyp) hwloc_topology_t topo = NULL;
	_cleanup_free_ char *source = NULL;
	int r;

	r = ll_probe_load(opts, &topo, err);
	if (r < 0)
		return r;
	if (opts->topology_file)
		source = ll_asprintf("snapshot:%s", opts->topology_file);
	else if (opts->fsroot)
		source = ll_asprintf("fsroot:%s", opts->fsroot);
	else
		source = ll_strdup("live");
	r = ll_probe_facts(topo, source, ret, err);
	if (r < 0)
		return r;
	if (ret_topo)
		*ret_topo = LL_TAKE(topo);
	return 0;
}

int ll_probe_save_at(hwloc_topology_t topo, int dirfd, const char *name, const char *shown, struct ll_error *err)
{
	char *xml = NULL;
	int len, r;

	if (hwloc_topology_export_xmlbuffer(topo, &xml, &len, 0) < 0)
		return ll_error_set(err, -EIO, "cannot save '%s': hwloc could not export the topology", shown);
	r = ll_file_replace_at(dirfd, name, xml, len > 0 ? (size_t)len - 1 : 0, 0644);
	hwloc_free_xmlbuffer(topo, xml);
	if (r < 0)
		return ll_error_set(err, r, "cannot save '%s': %s", shown, strerror(-r));
	return 0;
}

int ll_probe_save(hwloc_topology_t topo, const char *path, struct ll_error *err)
{
	char *xml = NULL;
	int len, r;

	if (hwloc_topology_export_xmlbuffer(topo, &xml, &len, 0) < 0)
		return ll_error_set(err, -EIO, "cannot save '%s': hwloc could not export the topology", path);
	/* Written next to the target and renamed, so an interrupted save never
	 * leaves a truncated snapshot that later fails to replay. len counts the
	 * terminating NUL, which does not belong in the file. */
	r = ll_file_replace(path, xml, len > 0 ? (size_t)len - 1 : 0, 0644);
	hwloc_free_xmlbuffer(topo, xml);
	if (r < 0)
		return ll_error_set(err, r, "cannot save '%s': %s", path, strerror(-r));
	return 0;
}
