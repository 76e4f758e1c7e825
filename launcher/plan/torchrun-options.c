/* torch.distributed.run's options, listed once (llmlaunch/torchrun-options.h). The
 * kinds of the values a profile may set follow torch/distributed/run.py's argparse
 * types; rendezvous sizes and the node rank are the agreement's, not a profile's. */
#include "llmlaunch/torchrun-options.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llmlaunch/util.h"

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

size_t ll_torchrun_n_options(void)
{
	return sizeof(ll_torchrun_options) / sizeof(ll_torchrun_options[0]) - 1;
}

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

char *ll_torchrun_value_check(const struct ll_torchrun_option *o, const char *v)
{
	long x;
	char *end;
	double d;

	switch (o->profile) {
	case LL_TORCHRUN_UINT:
		return ll_parse_long(v, 0, INT_MAX, &x) == 0 ? NULL : ll_strdup("a non-negative integer");
	case LL_TORCHRUN_PORT:
		return ll_parse_long(v, 1, 65535, &x) == 0 ? NULL : ll_strdup("a port number (1-65535)");
	case LL_TORCHRUN_NUMBER:
		errno = 0;
		d = strtod(v, &end);
		return end != v && !*end && !errno && isfinite(d) && d > 0 ? NULL : ll_strdup("a positive number");
	case LL_TORCHRUN_NPROC:
		if (!strcmp(v, "auto") || !strcmp(v, "gpu") || !strcmp(v, "cpu") ||
		    ll_parse_long(v, 1, LL_TORCHRUN_MAX_NPROC, &x) == 0)
			return NULL;
		return ll_asprintf("auto, gpu, cpu or a positive integer up to %d", LL_TORCHRUN_MAX_NPROC);
	case LL_TORCHRUN_ENUM: {
		size_t n = strlen(v);

		for (const char *c = o->choices; c && *c;) {
			size_t k = strcspn(c, "|");

			if (k == n && strncmp(c, v, n) == 0)
				return NULL;
			c += k + (c[k] == '|');
		}
		return ll_asprintf("one of %s", o->choices);
	}
	case LL_TORCHRUN_STRING:
	case LL_TORCHRUN_NONE:
		break;
	}
	return NULL;
}
