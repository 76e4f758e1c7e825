/* torch.distributed.run's options, listed once (llmlaunch/torchrun-options.h). The
 * kinds of the values a profile may set follow torch/distributed/run.py's argparse
 * types; rendezvous sizes and the node rank are the agreement's, not a profile's. */
#include "llmlaunch/torchrun-options.h"

#include <string.h>

const struct ll_torchrun_option ll_torchrun_options[] = {
	{ "nnodes", 0, true },
	{ "nproc_per_node", 0, true, LL_TORCHRUN_NPROC },
	{ "rdzv_backend", 0, true, LL_TORCHRUN_ENUM, "c10d|static|etcd|etcd-v2" },
	{ "rdzv_endpoint", 0, true, LL_TORCHRUN_STRING },
	{ "rdzv_id", 0, true, LL_TORCHRUN_STRING },
	{ "rdzv_conf", 0, true, LL_TORCHRUN_STRING },
	{ "standalone", 0, false },
	{ "max_restarts", 0, true, LL_TORCHRUN_UINT },
	{ "monitor_interval", 0, true, LL_TORCHRUN_NUMBER },
	{ "start_method", 0, true, LL_TORCHRUN_ENUM, "spawn|fork|forkserver" },
	{ "role", 0, true, LL_TORCHRUN_STRING },
	{ "no_python", 0, false },
	{ "run_path", 0, false },
	{ "log_dir", 0, true, LL_TORCHRUN_STRING },
	{ "redirects", 'r', true, LL_TORCHRUN_STRING },
	{ "tee", 't', true, LL_TORCHRUN_STRING },
	{ "node_rank", 0, true },
	{ "master_addr", 0, true },
	{ "master_port", 0, true, LL_TORCHRUN_PORT },
	{ "local_addr", 0, true, LL_TORCHRUN_STRING },
	{ "logs_specs", 0, true },
	{ "local_ranks_filter", 0, true },
	{ NULL, 0, false, LL_TORCHRUN_NONE, NULL },
};

const struct ll_torchrun_option *ll_torchrun_option_find(const char *name)
{
	for (const struct ll_torchrun_option *o = ll_torchrun_options; o->name; o++) {
		size_t i;

		for (i = 0; o->name[i] && name[i]; i++) {
			char c = name[i] == '-' ? '_' : name[i];
			if (c != o->name[i])
				break;
		}
		if (!o->name[i] && !name[i])
			return o;
	}
	return NULL;
}

const char *const *ll_torchrun_profile_keys(size_t *ret_n)
{
	static const char *keys[sizeof(ll_torchrun_options) / sizeof(ll_torchrun_options[0])];
	static size_t n;

	if (!n)
		for (const struct ll_torchrun_option *o = ll_torchrun_options; o->name; o++)
			if (o->profile != LL_TORCHRUN_NONE)
				keys[n++] = o->name;
	*ret_n = n;
	return keys;
}
