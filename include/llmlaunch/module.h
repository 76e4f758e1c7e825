/* Modules: code that needs a heavy library, in a shared object of its own. */
#ifndef LLMLAUNCH_MODULE_H
#define LLMLAUNCH_MODULE_H

#include "llmlaunch/util.h"

/* Heavy libraries (libcurl with its TLS stack, PMIx with libevent and munge) stay out of
 * llmlaunch's start-up: each lives in a module linked against it and loaded on the one
 * path that needs it. Finds MODULE ("fetch", "pmix") in $LLMLAUNCH_MODULE_DIR, the
 * installed module directory relative to the binary, or the binary's own directory
 * (build tree), and returns the address of SYMBOL in it. The module stays loaded. */
int ll_module_symbol(const char *module, const char *symbol, void **ret, struct ll_error *err);

/* Marks a module's entry point; modules are built with hidden visibility. */
#define LL_MODULE_EXPORT __attribute__((visibility("default")))

#endif
