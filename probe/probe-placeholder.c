/* PLACEHOLDER: replaced by probe/probe.c and probe/facts.c. */
#include <errno.h>
#include "llmlaunch/probe.h"

int ll_probe(const struct ll_probe_options *opts, hwloc_topology_t *ret_topo, struct ll_facts **ret,
	     struct ll_error *err)
{
	(void)opts; (void)ret_topo; (void)ret;
	return ll_error_set(err, -ENOSYS, "probe is not built yet");
}

void ll_facts_free(struct ll_facts *f)
{
	(void)f;
}
