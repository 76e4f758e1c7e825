/* Which libnccl the workers will load, and its version, from files alone: no CUDA,
 * no import of torch, no dlopen (llmlaunch/nccl-lib.h).
 *
 * PyTorch's libtorch_cuda.so needs libnccl.so.2 (or carries NCCL linked in); the
 * dynamic linker looks in LD_LIBRARY_PATH first, then in the library's own run path,
 * which in PyTorch's pip wheels points at the nvidia-nccl-cu* wheel's nvidia/nccl/lib
 * beside torch/, then in the directories of ld.so.conf and the default ones
 * (ld.so(8)). So the search, first found wins:
 *   1. LD_LIBRARY_PATH (live only),
 *   2. SITE/nvidia/nccl/lib/libnccl.so.2 in the interpreter's site-packages,
 *   3. SITE/torch/lib/libnccl.so.2 (wheels that bundled it),
 *   4. the linker's other directories,
 *   5. SITE/torch/lib/libtorch_cuda.so alone: NCCL linked into it.
 * The version, first that tells: the file name (libnccl.so.2.21.5, as NCCL's own
 * packages install it), the wheel's METADATA ("Version: 2.21.5" in
 * nvidia_nccl_cu12-2.21.5.dist-info), the "NCCL version X.Y.Z" string NCCL compiles
 * into itself (src/init.cc, VERSION_STRING). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llmlaunch/file.h"
#include "llmlaunch/nccl-lib.h"
#include "sysfs.h"

const char *ll_nccl_plugin_kind_name(enum ll_nccl_plugin_kind k)
{
	static const char *const names[] = {
		[LL_NCCL_PLUGIN_NET] = "net", [LL_NCCL_PLUGIN_TUNER] = "tuner",
		[LL_NCCL_PLUGIN_PROFILER] = "profiler", [LL_NCCL_PLUGIN_ENV] = "env",
	};

	return (unsigned)k < LL_ARRAY_SIZE(names) ? names[k] : NULL;
}

/* "2.21.5" at s: the three numbers, and where they end. */
static bool parse_version(const char *s, int *a, int *b, int *c, const char **end)
{
	int v[3];

	for (int i = 0; i < 3; i++) {
		char *e;
		long n;

		if (!isdigit((unsigned char)*s))
			return false;
		n = strtol(s, &e, 10);
		if (n > 999 || (i < 2 && *e != '.'))
			return false;
		v[i] = (int)n;
		s = i < 2 ? e + 1 : e;
	}
	*a = v[0];
	*b = v[1];
	*c = v[2];
	if (end)
		*end = s;
	return true;
}

int ll_nccl_version_in(const char *buf, size_t len, int *major, int *minor, int *patch)
{
	static const char marker[] = "NCCL version ";
	const char *p = buf, *stop = buf + len;

	while ((p = memmem(p, (size_t)(stop - p), marker, sizeof(marker) - 1))) {
		char tail[16];
		size_t n;

		p += sizeof(marker) - 1;
		n = (size_t)(stop - p) < sizeof(tail) - 1 ? (size_t)(stop - p) : sizeof(tail) - 1;
		memcpy(tail, p, n);
		tail[n] = '\0';
		/* The format string "NCCL version %s" (logs) is no version: digits must follow. */
		if (parse_version(tail, major, minor, patch, NULL))
			return 0;
	}
	return -ENOENT;
}

static bool is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The version from what the file is named after links are followed: libnccl.so.2.21.5. */
static bool version_from_name(const char *path, struct ll_nccl_lib *l)
{
	char real[PATH_MAX];
	const char *base, *v;

	if (!realpath(path, real))
		return false;
	base = strrchr(real, '/');
	base = base ? base + 1 : real;
	v = strstr(base, ".so.");
	if (!v || !parse_version(v + 4, &l->major, &l->minor, &l->patch, &v) || *v != '\0')
		return false;
	l->version_from = "file name";
	return true;
}

/* nvidia_nccl_cu12-2.21.5.dist-info/METADATA in SITE: "Version: 2.21.5". */
static bool version_from_wheel(const char *site, struct ll_nccl_lib *l)
{
	_cleanup_free_ char *pat = ll_asprintf("%s/nvidia_nccl_cu*.dist-info/METADATA", site);
	bool found = false;
	glob_t g;

	if (glob(pat, 0, NULL, &g) != 0)
		return false;
	for (size_t i = 0; i < g.gl_pathc && !found; i++) {
		_cleanup_free_ char *text = NULL;
		const char *v;

		if (ll_read_file(g.gl_pathv[i], 1 << 20, &text) < 0)
			continue;
		for (v = text; v && !found; v = strchr(v, '\n'), v = v ? v + 1 : NULL)
			if (strncmp(v, "Version: ", 9) == 0)
				found = parse_version(v + 9, &l->major, &l->minor, &l->patch, NULL);
	}
	globfree(&g);
	if (found)
		l->version_from = "wheel metadata";
	return found;
}

/* The libraries are hundreds of megabytes: mapped, never read into memory. */
static bool version_from_string(const char *path, struct ll_nccl_lib *l)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	void *map;
	bool found;

	if (fd < 0)
		return false;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
		close(fd);
		return false;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return false;
	found = ll_nccl_version_in(map, (size_t)st.st_size, &l->major, &l->minor, &l->patch) == 0;
	munmap(map, (size_t)st.st_size);
	if (found)
		l->version_from = "the library's version string";
	return found;
}

/* The interpreter's file: a path, or a name found on PATH (below fsroot). */
static char *find_python(const struct ll_nccl_search *in)
{
	const char *name = in->python && *in->python ? in->python : "python3";

	if (strchr(name, '/'))
		return ll_sysfs_path(in->fsroot, "%s", name);
	for (const char *p = in->path; p && *p;) {
		size_t len = strcspn(p, ":");
		_cleanup_free_ char *cand = NULL;

		if (len > 0 && p[0] == '/') {
			_cleanup_free_ char *dir = ll_strndup(p, len);

			cand = ll_sysfs_path(in->fsroot, "%s/%s", dir, name);
			if (is_file(cand))
				return LL_TAKE(cand);
		}
		p += len;
		p += *p != '\0';
	}
	return NULL;
}

static void add_glob(char ***v, size_t *n, const char *pat)
{
	glob_t g;

	if (glob(pat, GLOB_ONLYDIR, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc; i++)
		*(char **)ll_array_push(v, n, sizeof(char *)) = ll_strdup(g.gl_pathv[i]);
	globfree(&g);
}

/* site-packages and dist-packages of the interpreter's prefix (a venv's bin/.. or
 * /usr), Debian's /usr/local ones, and the user's own. */
static void site_dirs(const struct ll_nccl_search *in, const char *python, char ***v, size_t *n)
{
	_cleanup_free_ char *prefix = ll_strdup(python);
	char *slash;

	for (int up = 0; up < 2; up++) {
		slash = strrchr(prefix, '/');
		if (!slash)
			return;
		*slash = '\0';
	}
	{
		static const char *const pats[] = {
			"%s/lib/python3*/site-packages", "%s/lib64/python3*/site-packages",
			"%s/lib/python3*/dist-packages", "%s/lib/python3/dist-packages",
			"%s/local/lib/python3*/dist-packages",
		};

		for (size_t i = 0; i < LL_ARRAY_SIZE(pats); i++) {
			_cleanup_free_ char *pat = ll_asprintf(pats[i], *prefix ? prefix : "");

			add_glob(v, n, pat);
		}
	}
	if (in->home && *in->home == '/') {
		_cleanup_free_ char *pat = ll_sysfs_path(in->fsroot, "%s/.local/lib/python3*/site-packages", in->home);

		add_glob(v, n, pat);
	}
}

static bool take(struct ll_nccl_lib *l, const char *path, const char *source)
{
	if (!is_file(path))
		return false;
	l->path = ll_strdup(path);
	l->source = source;
	return true;
}

static void plugin_add(struct ll_nccl_lib *l, enum ll_nccl_plugin_kind kind, const char *path)
{
	struct ll_nccl_plugin *p;

	for (size_t i = 0; i < l->n_plugins; i++)
		if (strcmp(l->plugins[i].path, path) == 0)
			return;
	p = ll_array_push(&l->plugins, &l->n_plugins, sizeof(*p));
	p->kind = kind;
	p->path = ll_strdup(path);
}

/* NCCL's plugin libraries in dir: libnccl-net*.so, libnccl-tuner*.so,
 * libnccl-profiler*.so, libnccl-env*.so (NCCL src/plugin/plugin_open.cc). */
static void plugins_in(struct ll_nccl_lib *l, const char *dir)
{
	static const struct {
		const char *prefix;
		enum ll_nccl_plugin_kind kind;
	} kinds[] = {
		{ "libnccl-net", LL_NCCL_PLUGIN_NET },
		{ "libnccl-tuner", LL_NCCL_PLUGIN_TUNER },
		{ "libnccl-profiler", LL_NCCL_PLUGIN_PROFILER },
		{ "libnccl-env", LL_NCCL_PLUGIN_ENV },
	};
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		for (size_t k = 0; k < LL_ARRAY_SIZE(kinds); k++)
			if (ll_startswith(e->d_name, kinds[k].prefix) && strstr(e->d_name, ".so")) {
				_cleanup_free_ char *p = ll_asprintf("%s/%s", dir, e->d_name);

				if (is_file(p))
					plugin_add(l, kinds[k].kind, p);
			}
	closedir(d);
}

void ll_nccl_lib_find(const struct ll_nccl_search *in, struct ll_nccl_lib *ret)
{
	struct ll_nccl_lib l = { .searched = true, .major = -1, .minor = -1, .patch = -1 };
	_cleanup_free_ char *python = find_python(in);
	char **sites = NULL, **ldirs = NULL, **ldp = NULL;
	size_t n_sites = 0, n_ldirs = 0, n_ldp = 0;
	const char *wheel_site = NULL;
	size_t skip = in->fsroot && *in->fsroot ? strlen(in->fsroot) : 0;

	if (python)
		site_dirs(in, python, &sites, &n_sites);
	/* Under fsroot the workers' environment is not this process's. The linker
	 * splits LD_LIBRARY_PATH at ':' and ';'. */
	for (const char *p = skip ? NULL : in->ld_library_path; p && *p;) {
		size_t len = strcspn(p, ":;");

		if (len > 0 && p[0] == '/')
			*(char **)ll_array_push(&ldp, &n_ldp, sizeof(char *)) = ll_strndup(p, len);
		p += len;
		p += *p != '\0';
	}
	ll_ld_search_path(in->fsroot, NULL, &ldirs, &n_ldirs);

	for (size_t i = 0; i < n_ldp && !l.path; i++) {
		_cleanup_free_ char *p = ll_asprintf("%s/libnccl.so.2", ldp[i]);

		take(&l, p, "LD_LIBRARY_PATH");
	}
	for (size_t i = 0; i < n_sites && !l.path; i++) {
		_cleanup_free_ char *p = ll_asprintf("%s/nvidia/nccl/lib/libnccl.so.2", sites[i]);

		if (take(&l, p, "the nvidia-nccl wheel beside torch (libtorch_cuda.so's run path)"))
			wheel_site = sites[i];
	}
	for (size_t i = 0; i < n_sites && !l.path; i++) {
		_cleanup_free_ char *p = ll_asprintf("%s/torch/lib/libnccl.so.2", sites[i]);

		take(&l, p, "torch's own lib/ directory");
	}
	for (size_t i = 0; i < n_ldirs && !l.path; i++) {
		_cleanup_free_ char *p = ll_sysfs_path(in->fsroot, "%s/libnccl.so.2", ldirs[i]);

		take(&l, p, "the dynamic linker's system directories");
	}
	for (size_t i = 0; i < n_sites && !l.path; i++) {
		_cleanup_free_ char *p = ll_asprintf("%s/torch/lib/libtorch_cuda.so", sites[i]);

		take(&l, p, "linked into libtorch_cuda.so (no libnccl.so.2 to load)");
	}

	if (l.path && !version_from_name(l.path, &l) && !(wheel_site && version_from_wheel(wheel_site, &l)) &&
	    !version_from_string(l.path, &l))
		l.why_unknown = ll_asprintf("no version in the file name, wheel metadata or contents of '%s'", l.path + skip);
	if (!l.path)
		l.why_unknown = python ? ll_asprintf("no libnccl.so.2 on LD_LIBRARY_PATH, beside torch for '%s' or "
						     "in the linker's directories", python + skip)
				       : ll_asprintf("the interpreter '%s' is not on PATH, and no libnccl.so.2 in "
						     "the linker's directories",
						     in->python && *in->python ? in->python : "python3");
	if (l.path && skip) {
		/* Paths as the tree's machine names them. */
		char *p = ll_strdup(l.path + skip);

		free(l.path);
		l.path = p;
	}

	/* Plugins: where NCCL's dlopen looks (the same linker path), and its own directory. */
	for (size_t i = 0; i < n_ldp; i++)
		plugins_in(&l, ldp[i]);
	for (size_t i = 0; i < n_ldirs; i++) {
		_cleanup_free_ char *d = ll_sysfs_path(in->fsroot, "%s", ldirs[i]);

		plugins_in(&l, d);
	}
	if (wheel_site) {
		_cleanup_free_ char *d = ll_asprintf("%s/nvidia/nccl/lib", wheel_site);

		plugins_in(&l, d);
	}
	if (skip)
		for (size_t i = 0; i < l.n_plugins; i++)
			if (strncmp(l.plugins[i].path, in->fsroot, skip) == 0)
				memmove(l.plugins[i].path, l.plugins[i].path + skip, strlen(l.plugins[i].path + skip) + 1);
	if (in->env_plugin && *in->env_plugin && strcmp(in->env_plugin, "none") != 0)
		plugin_add(&l, LL_NCCL_PLUGIN_ENV, in->env_plugin);

	ll_strv_free(sites, n_sites);
	ll_strv_free(ldirs, n_ldirs);
	ll_strv_free(ldp, n_ldp);
	*ret = l;
}

void ll_nccl_lib_release(struct ll_nccl_lib *l)
{
	free(l->path);
	free(l->why_unknown);
	for (size_t i = 0; i < l->n_plugins; i++)
		free(l->plugins[i].path);
	free(l->plugins);
	*l = (struct ll_nccl_lib){ 0 };
}
