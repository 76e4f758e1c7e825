/* The seam between the agreement (launcher/agree/agree-pmix.c) and the PMIx module
 * (launcher/modules/pmix.c, built as llmlaunch-pmix.so against libpmix): the one
 * entry the module exports. The module exchanges the records and summaries and
 * calls back into the pure decision (llmlaunch/agree.h), which the binary exports. */
#ifndef LLMLAUNCH_AGREE_PMIX_H
#define LLMLAUNCH_AGREE_PMIX_H

#include "llmlaunch/agree.h"

/* Publish `rec` and `self` under PMIx, fence with o->timeout_s, fetch the summaries
 * the decision asks for, decide, and fill `ret`. */
typedef int ll_pmix_module_run_fn(const struct ll_summary *self, const struct ll_agree_node *rec,
				  const struct ll_agree_options *o, struct ll_cluster *ret, struct ll_error *err);
ll_pmix_module_run_fn ll_pmix_module_run;

#endif
