/* Where llmlaunch finds its own files. Everything is found relative to the running
 * binary, so an installed tree works wherever it lands (/usr, /usr/local, a `dpkg -x`
 * root, a container image), and a binary in a build tree uses the source tree's files. */
#ifndef LLMLAUNCH_PATHS_H
#define LLMLAUNCH_PATHS_H

#include <stdbool.h>
#include "llmlaunch/util.h"

/* Directory of the running executable (malloc'ed), NULL if /proc/self/exe is unreadable. */
char *ll_exe_dir(void);

/* True when the binary sits in a CMake build tree (CMakeCache.txt in its directory or
 * the one above). */
bool ll_running_from_build_tree(void);

/* Directory of the shipped profiles: the source tree's profiles/ from a build tree,
 * else BINDIR/../share/llmlaunch/profiles relative to the binary. */
char *ll_installed_profile_dir(void);

/* Heavy libraries (libcurl with its TLS stack, PMIx with libevent and munge) stay out of
 * llmlaunch's start-up: each lives in a module linked against it and loaded on the one
 * path that needs it. Finds MODULE ("fetch", "pmix") in $LLMLAUNCH_MODULE_DIR, the
 * installed module directory relative to the binary, or the binary's own directory
 * (build tree), and returns the address of SYMBOL in it. The module stays loaded. */
int ll_module_symbol(const char *module, const char *symbol, void **ret, struct ll_error *err);

/* Marks a module's entry point; modules are built with hidden visibility. */
#define LL_MODULE_EXPORT __attribute__((visibility("default")))

#endif
