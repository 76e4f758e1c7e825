/* Which NCCL the job will load, and its version, without initialising CUDA and
 * without importing torch (probe/nccl-lib.c): the right NCCL variables depend on it
 * (docs/roce.md, "Know the NCCL"). Also the NCCL plugins NCCL would load beside it. */
#ifndef LLMLAUNCH_NCCL_LIB_H
#define LLMLAUNCH_NCCL_LIB_H

#include <stdbool.h>
#include <stddef.h>

struct ll_nccl_search {
	const char *fsroot;          /* read below this tree (its python and linker paths), NULL live */
	const char *python;          /* the interpreter the workers run (a path, or a name on PATH) */
	const char *path;            /* PATH, to find a bare interpreter name */
	const char *ld_library_path; /* the workers' LD_LIBRARY_PATH; ignored under fsroot */
	const char *home;            /* HOME, for the user's own site-packages */
	const char *env_plugin;      /* NCCL_ENV_PLUGIN as the workers get it */
};

enum ll_nccl_plugin_kind { LL_NCCL_PLUGIN_NET, LL_NCCL_PLUGIN_TUNER, LL_NCCL_PLUGIN_PROFILER, LL_NCCL_PLUGIN_ENV };
const char *ll_nccl_plugin_kind_name(enum ll_nccl_plugin_kind k); /* "net", "tuner", "profiler", "env" */

struct ll_nccl_plugin {
	enum ll_nccl_plugin_kind kind;
	char *path;                  /* a library on the search path, or NCCL_ENV_PLUGIN's value */
};

struct ll_nccl_lib {
	bool searched;               /* the search ran (false: a snapshot, nothing to search) */
	char *path;                  /* the library, NULL none found */
	const char *source;          /* static text: which rule found it ("LD_LIBRARY_PATH", ...) */
	int major, minor, patch;     /* -1 unknown */
	const char *version_from;    /* static text: "file name", "wheel metadata", "the library's version string" */
	char *why_unknown;           /* when the version is unknown: why */
	struct ll_nccl_plugin *plugins;
	size_t n_plugins;
};

/* Fill ret; never fails (what cannot be read is unknown, with why). */
void ll_nccl_lib_find(const struct ll_nccl_search *in, struct ll_nccl_lib *ret);
void ll_nccl_lib_release(struct ll_nccl_lib *l);

/* "NCCL version 2.21.5" or "NCCL version 2.21.5+cuda12.4" anywhere in buf: 0 and the
 * three numbers, -ENOENT when absent. The string NCCL prints at init (src/init.cc,
 * VERSION_STRING), compiled into every libnccl and every static link of it. */
int ll_nccl_version_in(const char *buf, size_t len, int *major, int *minor, int *patch);

#endif
