/* agree_pmix_run(): hands the exchange to the PMIx module, so libpmix and what it
 * brings (libevent, munge, its progress thread) load only under a PMIx launcher. */
#include "agree-internal.h"
#include "llmlaunch/module.h"

/* Linked in directly by programs that carry the module's code; absent from the binary. */
extern ll_pmix_module_run_fn ll_pmix_module_run __attribute__((weak));

int agree_pmix_run(const struct ll_agree_pmix_args *a, struct ll_cluster *ret, struct ll_error *err)
{
	static ll_pmix_module_run_fn *run;
	int r;

	if (!run)
		run = ll_pmix_module_run;
	if (!run) {
		void *sym;
		r = ll_module_symbol("pmix", "ll_pmix_module_run", &sym, err);
		if (r < 0)
			return r;
		run = (ll_pmix_module_run_fn *)sym;
	}
	return run(a, ret, err);
}
