/* ll_profile_fetch(): hands the transfer to the fetch module, so libcurl and its TLS
 * stack (about thirty libraries) load only when a profile URL is really used. */
#include "llmlaunch/profile-fetch.h"
#include "llmlaunch/module.h"

/* Linked in directly by the unit tests of the module; absent from the binary. */
extern ll_fetch_module_run_fn ll_fetch_module_run __attribute__((weak));

int ll_profile_fetch(const char *url, const struct ll_fetch_opts *opts, struct ll_fetch_result *ret,
		     struct ll_error *err)
{
	static ll_fetch_module_run_fn *run;
	int r;

	if (!run)
		run = ll_fetch_module_run;
	if (!run) {
		void *sym;
		r = ll_module_symbol("fetch", "ll_fetch_module_run", &sym, err);
		if (r < 0)
			return r;
		run = (ll_fetch_module_run_fn *)sym;
	}
	return run(url, opts, ret, err);
}
