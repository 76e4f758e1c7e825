/* torch.distributed.run's options, listed once (llmlaunch/torchrun-options.h). The
 * kinds follow torch/distributed/run.py's argparse types and what torchrun then does
 * with the text (torch 1.13: parse_min_max_nnodes, Std.from_str,
 * parse_rendezvous_endpoint, _parse_rendezvous_config); the owners are
 * docs/security.md's "torchrun options". */
#include "llmlaunch/torchrun-options.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "llmlaunch/util.h"

#define T(name, short_name, kind, owner, what) \
	{ name, short_name, LL_TORCHRUN_##kind, LL_TORCHRUN_##owner, NULL, false, what, 0 }
#define T_SINCE(name, kind, owner, what, since) \
	{ name, 0, LL_TORCHRUN_##kind, LL_TORCHRUN_##owner, NULL, false, what, since }
#define HAND(name, kind, what) { name, 0, LL_TORCHRUN_##kind, LL_TORCHRUN_WORLD, NULL, true, what, 0 }

const struct ll_torchrun_option ll_torchrun_options[] = {
	HAND("nnodes", NNODES, "the number of nodes"),
	T("nproc_per_node", 0, NPROC, PROVED, "the workers per node"),
	/* plugins add backends: any name */
	{ "rdzv_backend", 0, LL_TORCHRUN_STRING, LL_TORCHRUN_WORLD, NULL, true, "the rendezvous backend", 0 },
	HAND("rdzv_endpoint", ENDPOINT, "the rendezvous endpoint"),
	T("rdzv_id", 0, STRING, WORLD, "the rendezvous id"),
	T("rdzv_conf", 0, KEYVALUES, WORLD, "the rendezvous configuration"),
	HAND("standalone", FLAG, "the rendezvous (a one-node store of its own)"),
	T("max_restarts", 0, UINT, TUNING, "the restarts"),
	T("monitor_interval", 0, NUMBER, TUNING, "the monitoring interval"),
	{ "start_method", 0, LL_TORCHRUN_ENUM, LL_TORCHRUN_TUNING, "spawn|fork|forkserver", false, "the start method",
	  0 },
	T("role", 0, STRING, TUNING, "the workers' role"),
	T("no_python", 0, FLAG, COMMAND, "how the script runs"),
	T("run_path", 0, FLAG, COMMAND, "how the script runs"),
	T("log_dir", 0, STRING, LOCAL, "the log directory"),
	T("redirects", 'r', STD, TUNING, "the workers' redirections"),
	T("tee", 't', STD, TUNING, "the workers' tee"),
	T("node_rank", 0, UINT, WORLD, "this node's rank"),
	HAND("master_addr", STRING, "the master address"),
	T("master_port", 0, PORT, PROVED, "the master port"),
	/* Newer than 1.13 (whose run.py has none of them), each from the pull request
	 * that added it to torch/distributed/run.py: --local_addr pytorch#88922 (2.0),
	 * --local_ranks_filter pytorch#118562 and --logs_specs pytorch#120942 (2.3);
	 * all three are in 2.6's run.py (Debian 13). */
	T_SINCE("local_addr", STRING, WORLD, "this node's address in the rendezvous", 200),
	T_SINCE("logs_specs", STRING, LOCAL, "the logs specification (an entry point: code torchrun loads)", 203),
	T_SINCE("local_ranks_filter", RANKS, TUNING, "the local ranks whose output is shown", 203),
	{ NULL, 0, LL_TORCHRUN_FLAG, LL_TORCHRUN_TUNING, NULL, false, NULL, 0 },
};

#undef T
#undef T_SINCE
#undef HAND

const char *ll_torchrun_owner_text(enum ll_torchrun_owner w)
{
	switch (w) {
	case LL_TORCHRUN_TUNING:
		return "how torchrun runs the workers";
	case LL_TORCHRUN_LOCAL:
		return "a path torchrun writes or code it loads";
	case LL_TORCHRUN_PROVED:
		return "an input every node must agree on";
	case LL_TORCHRUN_WORLD:
		return "the job's world, which the agreement decides under a launcher";
	case LL_TORCHRUN_COMMAND:
		return "how the script runs, the command line's alone";
	}
	return "?";
}

size_t ll_torchrun_n_options(void)
{
	return LL_ARRAY_SIZE(ll_torchrun_options) - 1;
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

const struct ll_torchrun_option *ll_torchrun_setting_option(const char *setting)
{
	return setting && ll_startswith(setting, "torchrun.") ? ll_torchrun_option_find(setting + strlen("torchrun."))
							      : NULL;
}

const char *const *ll_torchrun_profile_keys(bool remote, size_t *ret_n)
{
	static const char *keys[2][LL_ARRAY_SIZE(ll_torchrun_options)];
	static size_t n[2];
	int k = remote ? 1 : 0;

	if (!n[k])
		for (const struct ll_torchrun_option *o = ll_torchrun_options; o->name; o++)
			if (remote ? o->owner == LL_TORCHRUN_TUNING : o->owner != LL_TORCHRUN_COMMAND)
				keys[k][n[k]++] = o->name;
	*ret_n = n[k];
	return keys[k];
}

bool ll_torchrun_flag_on(const char *v)
{
	return v && (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0 ||
		     strcasecmp(v, "on") == 0);
}

static bool flag_off(const char *v)
{
	return strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0 || strcasecmp(v, "no") == 0 ||
	       strcasecmp(v, "off") == 0;
}

/* One line of printable text: torchrun reads a value to the end of its argument, and
 * what it prints of one must not be a terminal's command. */
static bool text_ok(const char *v)
{
	if (!*v)
		return false;
	for (const unsigned char *c = (const unsigned char *)v; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			return false;
	return true;
}

/* "D" or "D,D,..." with each D a number within [lo, hi]; sep_kv: "D:V" items whose V
 * is one digit 0-3 (Std's mapping: `^(\d:[0123],)*(\d:[0123])$`, a one-digit rank). */
static bool list_ok(const char *v, long lo, long hi, bool std_map)
{
	const char *p = v;

	if (!*p)
		return false;
	for (;;) {
		char *end;
		long x;

		if (!isdigit((unsigned char)*p))
			return false;
		errno = 0;
		x = strtol(p, &end, 10);
		if (errno || x < lo || x > hi)
			return false;
		if (std_map) {
			if (end != p + 1 || end[0] != ':' || end[1] < '0' || end[1] > '3')
				return false;
			end += 2;
		}
		if (!*end)
			return true;
		if (*end != ',')
			return false;
		p = end + 1;
	}
}

static bool endpoint_ok(const char *v)
{
	const char *colon = strrchr(v, ':');
	long port;

	if (!text_ok(v) || strchr(v, ' '))
		return false;
	/* "[fd00::1]" or "[fd00::1]:29400": IPv6 in brackets, as torchrun reads it. */
	if (v[0] == '[') {
		const char *close = strchr(v, ']');

		if (!close || close == v + 1)
			return false;
		if (!close[1])
			return true;
		return close[1] == ':' && ll_parse_long(close + 2, 1, 65535, &port) == 0;
	}
	if (!colon)
		return true;
	return colon != v && ll_parse_long(colon + 1, 1, 65535, &port) == 0;
}

static bool keyvalues_ok(const char *v)
{
	if (!text_ok(v))
		return false;
	for (const char *p = v; *p;) {
		size_t n = strcspn(p, ","), k = strcspn(p, "=,");
		bool blank = true;

		for (size_t i = 0; i < k; i++)
			if (p[i] != ' ')
				blank = false;
		if (blank)
			return false;
		p += n + (p[n] == ',');
	}
	return true;
}

char *ll_torchrun_value_check(const struct ll_torchrun_option *o, const char *v)
{
	long x, lo, hi;
	char *end;
	double d;

	switch (o->kind) {
	case LL_TORCHRUN_FLAG:
		return ll_torchrun_flag_on(v) || flag_off(v) ? NULL : ll_strdup("1, true, yes, on, 0, false, no or off");
	case LL_TORCHRUN_STRING:
		return text_ok(v) ? NULL : ll_strdup("one line of text");
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
	case LL_TORCHRUN_NNODES: {
		const char *colon = strchr(v, ':');
		_cleanup_free_ char *min = colon ? ll_strndup(v, (size_t)(colon - v)) : NULL;

		if (!colon && ll_parse_long(v, 1, 1 << 20, &x) == 0)
			return NULL;
		if (colon && ll_parse_long(min, 1, 1 << 20, &lo) == 0 && ll_parse_long(colon + 1, 1, 1 << 20, &hi) == 0 &&
		    lo <= hi)
			return NULL;
		return ll_strdup("N or MIN:MAX, node counts from 1");
	}
	case LL_TORCHRUN_STD:
		if ((v[0] >= '0' && v[0] <= '3' && !v[1]) || list_ok(v, 0, 9, true))
			return NULL;
		return ll_strdup("0-3, or LOCAL_RANK:0-3 pairs with one-digit local ranks (0:3,1:0)");
	case LL_TORCHRUN_RANKS:
		return list_ok(v, 0, LL_TORCHRUN_MAX_NPROC, false) ? NULL : ll_strdup("local ranks separated by commas (0,3)");
	case LL_TORCHRUN_KEYVALUES:
		return keyvalues_ok(v) ? NULL : ll_strdup("KEY=VALUE pairs separated by commas");
	case LL_TORCHRUN_ENDPOINT:
		return endpoint_ok(v) ? NULL : ll_strdup("HOST or HOST:PORT ([ADDRESS]:PORT for IPv6)");
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
	}
	return NULL;
}
