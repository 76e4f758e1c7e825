/* The rules about variables: which ones the planner decides (the `nccl` section),
 * which values it accepts for them, which names no profile may set without
 * --allow-loader-vars, the few a profile fetched over the network may set at all
 * (docs/security.md), and the edit distance behind "did you mean". */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "llmlaunch/profile.h"
#include "profile-internal.h"

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

/* Variables the planner decides (launcher/plan/plan.c): only these belong under `nccl`,
 * where `auto` hands the decision back to the probe. */
const char *const ll_planner_vars[] = {
	"CUDA_DEVICE_ORDER",  "GLOO_SOCKET_IFNAME", "NCCL_IB_DISABLE",    "NCCL_IB_GID_INDEX",
	"NCCL_IB_HCA",        "NCCL_NET_GDR_LEVEL", "NCCL_SOCKET_IFNAME", "OMP_NUM_THREADS",
};

const size_t ll_n_planner_vars = LL_ARRAY_SIZE(ll_planner_vars);

bool ll_profile_parse_long(const char *s, long min, long max, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*ret = v;
	return true;
}

bool ll_profile_var_name_valid(const char *name)
{
	if (!name || !(*name == '_' || (*name >= 'A' && *name <= 'Z')))
		return false;
	for (const char *c = name + 1; *c; c++)
		if (!(*c == '_' || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
			return false;
	return true;
}

bool ll_profile_var_restricted(const char *name, const char *value)
{
	/* Each of these makes the workers load or run code chosen by whoever wrote the
	 * profile: the dynamic loader (LD_*, GCONV_PATH), the interpreter's module
	 * search and byte-code cache (PYTHON*), the search path for programs, shell
	 * start-up files, CUDA's injection hook, the plugin directories of libfabric,
	 * UCX and hwloc, the kernel caches of Triton and torch's C++ extensions (a
	 * planted .so or .cubin is loaded as is) and NCCL's plugin libraries (their
	 * value "none" only disables). docs/security.md gives each one's reason. */
	static const char *const exact[] = {
		"PATH", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONEXECUTABLE",
		"PYTHONPLATLIBDIR", "PYTHONPYCACHEPREFIX", "PYTHONBREAKPOINT", "GCONV_PATH", "BASH_ENV", "ENV",
		"CUDA_INJECTION64_PATH", "CUDA_INJECTION32_PATH", "FI_PROVIDER_PATH", "UCX_MODULE_DIR",
		"HWLOC_PLUGINS_PATH", "TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR",
		/* NCCL dlopen()s what these name: the verbs library
		 * (src/misc/ibvsymbols.cc, 2.19+) and libcuda (src/misc/cudawrap.cc,
		 * 2.18 and earlier). */
		"NCCL_IBVERBS_LIB", "NCCL_CUDA_PATH",
	};
	/* NCCL's plugin loaders (src/plugin/, one file a kind): the value names a library,
	 * "libnccl-KIND-VALUE.so" or a path. GIN and RMA came with 2.28. */
	static const char *const plugins[] = {
		"NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN", "NCCL_PROFILER_PLUGIN", "NCCL_ENV_PLUGIN",
		"NCCL_GIN_PLUGIN", "NCCL_RMA_PLUGIN",
	};

	if (ll_startswith(name, "LD_"))
		return true;
	if (in_list(name, exact, LL_ARRAY_SIZE(exact)))
		return true;
	if (in_list(name, plugins, LL_ARRAY_SIZE(plugins)))
		return !(value && strcmp(value, "none") == 0);
	return false;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* libfabric and UCX tuning that cloud and site guides set for NCCL's net plugins
 * (aws-ofi-nccl, HPE Slingshot's CXI, UCX-based collectives): numbers, switches and
 * the names of devices or providers already installed. None names a file. */
static const char *const remote_fi_ucx[] = {
	"FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "FI_EFA_FORK_SAFE", "FI_EFA_USE_HUGE_PAGE",
	"FI_EFA_ENABLE_SHM_TRANSFER", "FI_EFA_SET_CUDA_SYNC_MEMOPS", "FI_EFA_TX_MIN_CREDITS",
	"FI_EFA_RECVWIN_SIZE", "FI_EFA_RNR_RETRY", "FI_HMEM_CUDA_USE_GDRCOPY", "FI_HMEM_DISABLE_P2P",
	"FI_MR_CACHE_MONITOR", "FI_MR_CACHE_MAX_COUNT", "FI_LOG_LEVEL", "FI_UNIVERSE_SIZE",
	"FI_CXI_DISABLE_HOST_REGISTER", "FI_CXI_DEFAULT_CQ_SIZE", "FI_CXI_DEFAULT_TX_SIZE",
	"FI_CXI_RX_MATCH_MODE", "FI_CXI_RDZV_PROTO", "FI_CXI_RDZV_GET_MIN", "FI_CXI_RDZV_EAGER_SIZE",
	"FI_CXI_OFLOW_BUF_SIZE", "FI_CXI_OFLOW_BUF_COUNT", "FI_CXI_REQ_BUF_SIZE",
	"UCX_TLS", "UCX_NET_DEVICES", "UCX_IB_GID_INDEX", "UCX_IB_SL", "UCX_IB_TRAFFIC_CLASS",
	"UCX_IB_PCI_RELAXED_ORDERING", "UCX_RNDV_THRESH", "UCX_RNDV_SCHEME", "UCX_ZCOPY_THRESH",
	"UCX_MEMTYPE_CACHE", "UCX_MAX_RNDV_RAILS", "UCX_MAX_EAGER_RAILS", "UCX_LOG_LEVEL",
	"UCX_WARN_UNUSED_ENV_VARS", "UCX_UNIFIED_MODE", "UCX_RC_TIMEOUT", "UCX_RC_RETRY_COUNT",
};

/* Other tuning a platform profile sets beside NCCL's: fork safety of the verbs
 * library, CUDA's connection count, and torch's NCCL error handling switches. */
static const char *const remote_other[] = {
	"RDMAV_FORK_SAFE", "IBV_FORK_SAFE", "CUDA_DEVICE_MAX_CONNECTIONS",
	"TORCH_NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_BLOCKING_WAIT", "TORCH_NCCL_HIGH_PRIORITY",
	"TORCH_NCCL_AVOID_RECORD_STREAMS", "TORCH_DISTRIBUTED_DEBUG",
};

/* NCCL variables whose value is a path (a file NCCL or one of its plugins writes or
 * reads) or an address, reviewed against every string NCCL reads with getenv(),
 * ncclGetEnv() or DEFINE_NCCL_PARAM(const char*) in NVIDIA/nccl v2.12 to v2.29
 * (src/, plugins/): NCCL_DEBUG_FILE (src/debug.cc), NCCL_TOPO_FILE,
 * NCCL_TOPO_DUMP_FILE, NCCL_GRAPH_FILE, NCCL_GRAPH_DUMP_FILE (src/graph/),
 * NCCL_CONF_FILE (src/misc/param.cc), NCCL_TUNER_CONFIG_FILE (plugins/tuner),
 * NCCL_PROFILE_DUMP_FILE (plugins/profiler/example), NCCL_INSPECTOR_DUMP_DIR
 * (plugins/profiler/inspector), NCCL_IBVERBS_LIB, NCCL_CUDA_PATH (loaded, so
 * restricted above), the *_PLUGIN libraries, and the two the suffixes miss:
 * NCCL_PROXY_PROFILE (src/misc/profiler.cc before 2.23 fopen()s it for writing)
 * and the addresses NCCL_COMM_ID and NCCL_RAS_ADDR. A new name with one of the
 * suffixes is refused unseen. */
static const char *const remote_nccl_denied[] = { "NCCL_PROXY_PROFILE", "NCCL_COMM_ID", "NCCL_RAS_ADDR" };

static bool nccl_names_path(const char *name)
{
	static const char *const suffixes[] = { "_FILE", "_PATH", "_DIR", "_PREFIX", "_LIB" };

	for (size_t i = 0; i < LL_ARRAY_SIZE(suffixes); i++)
		if (ends_with(name, suffixes[i]))
			return true;
	return in_list(name, remote_nccl_denied, LL_ARRAY_SIZE(remote_nccl_denied));
}

bool ll_profile_var_remote_allowed(const char *name, const char *value)
{
	if (ll_profile_var_restricted(name, value))
		return false;
	/* The planner's variables: only values it validated (profile.c). */
	if (in_list(name, ll_planner_vars, ll_n_planner_vars))
		return true;
	if (ll_startswith(name, "NCCL_")) {
		/* Files NCCL reads (NCCL_TOPO_FILE, NCCL_GRAPH_FILE, NCCL_CONF_FILE)
		 * or writes anywhere the user may write (NCCL_DEBUG_FILE into /etc
		 * as root, ~/.bashrc otherwise; the dump files; NCCL_PROXY_PROFILE),
		 * libraries it loads (*_PLUGIN unless "none", *_LIB), addresses its
		 * bootstrap and RAS connect to: remote_nccl_denied above. */
		if (ends_with(name, "_PLUGIN"))
			return value && strcmp(value, "none") == 0;
		return !nccl_names_path(name);
	}
	return in_list(name, remote_fi_ucx, LL_ARRAY_SIZE(remote_fi_ucx)) ||
	       in_list(name, remote_other, LL_ARRAY_SIZE(remote_other));
}

/* Where software is installed: the only places a fetched profile's `when_exists` may
 * test (docs/security.md). Whether /home/x/.ssh/id_rsa or /etc/shadow exists is
 * nobody's business but the node's; whether an NCCL plugin is installed under
 * /opt or /usr/lib is what when_exists is for. */
const char *const ll_when_exists_remote_dirs[] = { "/usr/lib/", "/usr/lib64/", "/usr/local/lib/", "/usr/local/lib64/",
						   "/opt/" };
const size_t ll_n_when_exists_remote_dirs = LL_ARRAY_SIZE(ll_when_exists_remote_dirs);

bool ll_profile_when_exists_remote_allowed(const char *path)
{
	bool inside = false;

	for (size_t i = 0; i < ll_n_when_exists_remote_dirs && !inside; i++)
		inside = ll_startswith(path, ll_when_exists_remote_dirs[i]);
	/* No way out of the list: no "..", ".", empty component or link name games
	 * that a text prefix would miss. */
	return inside && !strstr(path, "/../") && !strstr(path, "/./") && !strstr(path, "//") &&
	       !ends_with(path, "/..") && !ends_with(path, "/.");
}

bool ll_profile_nccl_value_valid(const char *name, const char *v, const char **expected)
{
	long x;

	if (strcmp(name, "NCCL_IB_DISABLE") == 0) {
		*expected = "0 or 1";
		return strcmp(v, "0") == 0 || strcmp(v, "1") == 0;
	}
	if (strcmp(name, "NCCL_NET_GDR_LEVEL") == 0) {
		static const char *const lv[] = { "LOC", "PIX", "PXB", "PHB", "SYS" };
		*expected = "LOC, PIX, PXB, PHB, SYS or 0-5";
		return in_list(v, lv, LL_ARRAY_SIZE(lv)) || ll_profile_parse_long(v, 0, 5, &x);
	}
	if (strcmp(name, "NCCL_IB_GID_INDEX") == 0) {
		*expected = "a GID index from -1 to 255";
		return ll_profile_parse_long(v, -1, 255, &x);
	}
	if (strcmp(name, "CUDA_DEVICE_ORDER") == 0) {
		*expected = "PCI_BUS_ID or FASTEST_FIRST";
		return strcmp(v, "PCI_BUS_ID") == 0 || strcmp(v, "FASTEST_FIRST") == 0;
	}
	if (strcmp(name, "OMP_NUM_THREADS") == 0) {
		*expected = "a positive integer";
		return ll_profile_parse_long(v, 1, 1 << 20, &x);
	}
	*expected = "a non-empty value";
	return *v != '\0';
}
