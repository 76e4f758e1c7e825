/* Entry point of the fetch module (launcher/modules/fetch.c, built as llmlaunch-fetch.so
 * with libcurl). ll_profile_fetch() in the core calls it directly when the module's code
 * is linked in (unit tests), else loads the module on first use. */
#ifndef LLMLAUNCH_PROFILE_FETCH_H
#define LLMLAUNCH_PROFILE_FETCH_H

#include "llmlaunch/module.h"
#include "llmlaunch/profile.h"

typedef int ll_fetch_module_run_fn(const char *spec, const struct ll_fetch_opts *opts, struct ll_fetch_result *ret,
				   struct ll_error *err);
ll_fetch_module_run_fn ll_fetch_module_run;

#endif
