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

/* A Python file llmlaunch ships (the preflight check's llmlaunch_check.py): the source
 * tree's python/NAME from a build tree, else BINDIR/../share/llmlaunch/python/NAME. */
char *ll_installed_python_file(const char *name);

/* `name` as execvp() would find it: itself when it holds a '/', else the first
 * executable regular file of that name in $PATH (/usr/local/bin:/usr/bin:/bin when
 * unset). Malloc'ed, NULL when there is none. */
char *ll_find_program(const char *name);

#endif
