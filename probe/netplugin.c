/* Which NCCL net plugin libraries this node has, where the dynamic linker finds
 * them: NCCL dlopen()s "libnccl-net.so", or NCCL_NET_PLUGIN's value, or
 * "libnccl-net-<value>.so" (NCCL src/plugin/plugin_open.cc, openPluginLib), so
 * what matters is the linker's search: LD_LIBRARY_PATH, the directories of
 * /etc/ld.so.conf (what ld.so.cache is built from), then the default ones.
 * aws-ofi-nccl installs libnccl-net-ofi.so and, to be NCCL's default,
 * libnccl-net.so (aws-ofi-nccl src/Makefile.am; libnccl-net-aws-ofi.so in older NGC
 * images). The same names in a vendor directory the linker does not search are
 * recorded apart: installed, but NCCL will not find them.
 *
 * A fact about the node's software, read on every probe (a package install does
 * not reboot). A few stat() calls: far below the cost of the probe itself. */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "llmlaunch/file.h"
#include "annotate.h"
#include "annotations.h"
#include "sysfs.h"

/* RCCL looks for librccl-net.so and librccl-net-NAME.so the same way (ROCm/rccl
 * src/net.cc); aws-ofi-nccl built for ROCm installs librccl-net-ofi.so and
 * librccl-net.so (src/Makefile.am, HAVE_ROCM). */
static const char *const plugin_names[] = {
	"libnccl-net.so", "libnccl-net-ofi.so", "libnccl-net-aws-ofi.so", "librccl-net.so", "librccl-net-ofi.so",
};

/* Where vendors install aws-ofi-nccl outside the linker's path (the AWS EFA
 * installer and Deep Learning AMIs: /opt/amazon/ofi-nccl; source builds of the
 * plugin's INSTALL.md with --prefix=/opt/aws-ofi-nccl). */
static const char *const vendor_dirs[] = {
	"/opt/amazon/ofi-nccl/lib", "/opt/amazon/ofi-nccl/lib64", "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu",
	"/opt/aws-ofi-nccl/lib",
};

/* glibc's trusted directories on x86_64 and aarch64 (the rest come from ld.so.conf). */
static const char *const default_dirs[] = { "/lib64", "/usr/lib64", "/lib", "/usr/lib" };

struct dirlist {
	char **v;
	size_t n;
};

static void dir_add(struct dirlist *l, const char *dir, size_t len)
{
	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (len == 0 || dir[0] != '/' || len >= PATH_MAX)
		return;
	for (size_t i = 0; i < l->n; i++)
		if (strlen(l->v[i]) == len && strncmp(l->v[i], dir, len) == 0)
			return;
	*(char **)ll_array_push(&l->v, &l->n, sizeof(char *)) = ll_strndup(dir, len);
}

/* ld.so.conf(5): one directory per line, '#' comments, "include GLOB" (relative
 * globs are relative to /etc). depth bounds include loops. */
static void read_ld_conf(const char *fsroot, const char *path, struct dirlist *l, int depth)
{
	_cleanup_free_ char *full = ll_sysfs_path(fsroot, "%s", path);
	_cleanup_free_ char *text = NULL;
	char *save = NULL;

	if (depth > 4 || ll_read_file(full, 1 << 20, &text) < 0)
		return;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *hash = strchr(line, '#');

		if (hash)
			*hash = '\0';
		line += strspn(line, " \t");
		ll_strstrip_end(line);
		if (strncmp(line, "include", 7) == 0 && (line[7] == ' ' || line[7] == '\t')) {
			const char *pat = line + 8 + strspn(line + 8, " \t");
			_cleanup_free_ char *gpat = *pat == '/' ? ll_sysfs_path(fsroot, "%s", pat)
								: ll_sysfs_path(fsroot, "/etc/%s", pat);
			size_t skip = fsroot && *fsroot ? strlen(fsroot) : 0;
			glob_t g;

			if (glob(gpat, 0, NULL, &g) != 0)
				continue;
			for (size_t i = 0; i < g.gl_pathc; i++)
				read_ld_conf(fsroot, g.gl_pathv[i] + skip, l, depth + 1);
			globfree(&g);
		} else if (*line == '/') {
			dir_add(l, line, strcspn(line, " \t"));
		}
	}
}

static bool is_file(const char *fsroot, const char *dir, const char *name)
{
	_cleanup_free_ char *p = ll_sysfs_path(fsroot, "%s/%s", dir, name);
	struct stat st;

	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

void ll_ld_search_path(const char *fsroot, const char *ld_library_path, char ***ret, size_t *ret_n)
{
	struct dirlist path = { 0 };

	/* The linker splits LD_LIBRARY_PATH at ':' and ';'. */
	for (const char *p = ld_library_path; p && *p;) {
		size_t len = strcspn(p, ":;");

		dir_add(&path, p, len);
		p += len;
		p += *p != '\0';
	}
	read_ld_conf(fsroot, "/etc/ld.so.conf", &path, 0);
	for (size_t i = 0; i < LL_ARRAY_SIZE(default_dirs); i++)
		dir_add(&path, default_dirs[i], strlen(default_dirs[i]));
	*ret = path.v;
	*ret_n = path.n;
}

int ll_annotate_net_plugins(hwloc_topology_t topo, const char *fsroot, struct ll_error *err)
{
	hwloc_obj_t root = hwloc_get_root_obj(topo);
	struct dirlist path = { 0 };
	const char *ldp = fsroot ? NULL : getenv("LD_LIBRARY_PATH");

	(void)err;
	if (hwloc_obj_get_info_by_name(root, LL_INFO_NET_PLUGINS_KNOWN))
		return 0;
	/* A gathered tree (a copy of /sys and /proc) holds no libraries: unknown. */
	if (fsroot) {
		_cleanup_free_ char *usr = ll_sysfs_path(fsroot, "/usr/lib");
		_cleanup_free_ char *lib = ll_sysfs_path(fsroot, "/lib");

		if (!ll_sysfs_is_dir(usr) && !ll_sysfs_is_dir(lib))
			return 0;
	}
	/* Under --fsroot this process's environment says nothing about the tree's machine. */
	ll_ld_search_path(fsroot, ldp, &path.v, &path.n);

	for (size_t d = 0; d < path.n; d++)
		for (size_t k = 0; k < LL_ARRAY_SIZE(plugin_names); k++)
			if (is_file(fsroot, path.v[d], plugin_names[k])) {
				_cleanup_free_ char *v = ll_asprintf("%s/%s", path.v[d], plugin_names[k]);

				hwloc_obj_add_info(root, LL_INFO_NET_PLUGIN, v);
			}
	for (size_t d = 0; d < LL_ARRAY_SIZE(vendor_dirs); d++) {
		bool on_path = false;

		for (size_t i = 0; i < path.n; i++)
			on_path |= strcmp(path.v[i], vendor_dirs[d]) == 0;
		for (size_t k = 0; !on_path && k < LL_ARRAY_SIZE(plugin_names); k++)
			if (is_file(fsroot, vendor_dirs[d], plugin_names[k])) {
				_cleanup_free_ char *v = ll_asprintf("%s/%s", vendor_dirs[d], plugin_names[k]);

				hwloc_obj_add_info(root, LL_INFO_NET_PLUGIN_OFF_PATH, v);
			}
	}
	hwloc_obj_add_info(root, LL_INFO_NET_PLUGINS_KNOWN, "1");
	ll_strv_free(path.v, path.n);
	return 0;
}
