/* The profile loader: what it accepts, and every kind of error with its exact
 * FILE:LINE:COLUMN, key path and hint. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <string.h>

#include "llmlaunch/profile.h"

static struct ll_profile *parse_ok(const char *text, const struct ll_profile_load_opts *opts)
{
	struct ll_profile *p = NULL;
	struct ll_error err = { 0 };
	int r = ll_profile_parse("t.yaml", text, strlen(text), opts, &p, NULL, &err);

	if (r < 0)
		fail_msg("unexpected error: %s", err.message);
	ll_error_clear(&err);
	return p;
}

/* Parse text that must fail; check the first problem's message and hint exactly and
 * return how many problems there were. */
static size_t expect_error_n(const char *text, size_t len, const struct ll_profile_load_opts *opts, const char *message,
			     const char *hint)
{
	struct ll_profile_diags diags = { 0 };
	struct ll_profile *p = NULL;
	struct ll_error err = { 0 };
	size_t n;
	int r;

	r = ll_profile_parse("t.yaml", text, len, opts, &p, &diags, &err);
	assert_int_equal(r, -EINVAL);
	assert_null(p);
	assert_true(diags.n >= 1);
	assert_string_equal(diags.items[0].message, message);
	if (hint) {
		assert_non_null(diags.items[0].hint);
		assert_string_equal(diags.items[0].hint, hint);
	} else {
		assert_null(diags.items[0].hint);
	}
	/* The error record starts with the first message too. */
	assert_true(ll_startswith(err.message, message));
	n = diags.n;
	ll_profile_diags_release(&diags);
	ll_error_clear(&err);
	return n;
}

static void expect_error(const char *text, const char *message, const char *hint)
{
	assert_int_equal(expect_error_n(text, strlen(text), NULL, message, hint), 1);
}

static void test_full_profile(void **state)
{
	(void)state;
	struct ll_profile *p = parse_ok("name: site-a\n"
					"description: our cluster\n"
					"extends: [infiniband, ./base.yaml]\n"
					"match:\n"
					"  gpu_model: 'NVIDIA H100*'\n"
					"  gpu_count: 8\n"
					"  rdma_driver: [mlx5, irdma]\n"
					"  link_layer: infiniband\n"
					"  hostname: 'gpu-*'\n"
					"nccl:\n"
					"  NCCL_IB_HCA: auto\n"
					"  NCCL_NET_GDR_LEVEL: PHB\n"
					"env:\n"
					"  NCCL_IB_TC: 106\n"
					"  NCCL_TOPO_FILE:\n"
					"    value: /opt/topo.xml\n"
					"    when_exists: [/opt/topo.xml, /etc/topo.xml]\n"
					"  EMPTY: ''\n"
					"torchrun:\n"
					"  max_restarts: 3\n"
					"  rdzv_backend: c10d\n"
					"bind: core\n"
					"python: /opt/venv/bin/python\n"
					"expect:\n"
					"  gpus: 8\n"
					"  active_rdma_ports: 4\n"
					"  link_layer: Ethernet\n"
					"  gdr_required: yes\n"
					"  allreduce_busbw_gbps: 180.5\n"
					"  pair_latency_us: 12\n",
					NULL);

	assert_string_equal(p->name, "site-a");
	assert_string_equal(p->description, "our cluster");
	assert_int_equal(p->n_extends, 2);
	assert_string_equal(p->extends[1].target, "./base.yaml");
	assert_int_equal(p->extends[1].line, 3);
	assert_int_equal(p->extends[1].column, 23);
	assert_true(p->match.present);
	assert_int_equal(p->match.n_conditions, 5);
	assert_int_equal(p->match.gpu_count, 8);
	assert_int_equal(p->match.gpu_count_min, -1);
	assert_int_equal(p->match.n_rdma_driver, 2);
	assert_string_equal(p->match.rdma_driver[1], "irdma");
	assert_int_equal(p->match.link_layer, LL_LINK_LAYER_INFINIBAND);
	assert_int_equal(p->match.rdma, LL_UNKNOWN);

	assert_int_equal(p->n_values, 9);
	assert_string_equal(p->values[0].name, "NCCL_IB_HCA");
	assert_string_equal(p->values[0].value, "auto");
	assert_int_equal(p->values[0].section, LL_PROFILE_NCCL);
	assert_int_equal(p->values[0].line, 11);
	assert_int_equal(p->values[0].column, 3);
	assert_string_equal(p->values[2].name, "NCCL_IB_TC");
	assert_string_equal(p->values[2].value, "106");
	assert_int_equal(p->values[2].section, LL_PROFILE_ENV);
	assert_string_equal(p->values[3].name, "NCCL_TOPO_FILE");
	assert_string_equal(p->values[3].value, "/opt/topo.xml");
	assert_int_equal(p->values[3].line, 15);
	assert_int_equal(p->values[3].n_when_exists, 2);
	assert_string_equal(p->values[3].when_exists[1], "/etc/topo.xml");
	assert_string_equal(p->values[4].value, "");
	assert_string_equal(p->values[5].name, "torchrun.max_restarts");
	assert_int_equal(p->values[5].section, LL_PROFILE_TORCHRUN);
	assert_string_equal(p->values[7].name, "bind");
	assert_string_equal(p->values[7].value, "core");
	assert_string_equal(p->values[8].name, "python");
	assert_int_equal(p->expect.gpus, 8);
	assert_int_equal(p->expect.active_rdma_ports, 4);
	assert_int_equal(p->expect.link_layer, LL_LINK_LAYER_ETHERNET);
	assert_int_equal(p->expect.gdr_required, LL_YES);
	/* The preflight check's figures keep where they were written: their source. */
	assert_true(p->expect.allreduce_busbw_gbps.value == 180.5);
	assert_int_equal(p->expect.allreduce_busbw_gbps.line, 29);
	assert_string_equal(p->expect.allreduce_busbw_gbps.origin, p->origin);
	assert_true(p->expect.pair_latency_us.value == 12);
	assert_true(p->expect.pair_busbw_gbps.value < 0);
	ll_profile_free(p);
}

static void test_empty_and_defaults(void **state)
{
	(void)state;
	struct ll_profile *p = parse_ok("", NULL);

	assert_string_equal(p->name, "t"); /* the file's stem */
	assert_int_equal(p->n_values, 0);
	assert_false(p->match.present);
	assert_int_equal(p->expect.gpus, -1);
	assert_int_equal(p->expect.gdr_required, LL_UNKNOWN);
	assert_true(p->expect.allreduce_busbw_gbps.value < 0);
	ll_profile_free(p);

	p = parse_ok("# only a comment\n", NULL);
	assert_int_equal(p->n_values, 0);
	ll_profile_free(p);
}

static void test_unknown_keys(void **state)
{
	(void)state;
	expect_error("name: x\nncl:\n  NCCL_IB_HCA: auto\n", "t.yaml:2:1: ncl: unknown key 'ncl'", "did you mean 'nccl'?");
	expect_error("descripton: x\n", "t.yaml:1:1: descripton: unknown key 'descripton'",
		     "did you mean 'description'?");
	expect_error("bnid: numa\n", "t.yaml:1:1: bnid: unknown key 'bnid'", "did you mean 'bind'?");
	expect_error("expect:\n  pair_busbw_gbps: fast\n", "t.yaml:2:20: expect.pair_busbw_gbps: 'fast' is not a number above 0", NULL);
	expect_error("colour: blue\n", "t.yaml:1:1: colour: unknown key 'colour'", NULL);
	expect_error("match:\n  gpu_modle: x\n", "t.yaml:2:3: match.gpu_modle: unknown key 'gpu_modle'",
		     "did you mean 'gpu_model'?");
	expect_error("torchrun:\n  max_restart: 3\n", "t.yaml:2:3: torchrun.max_restart: unknown key 'max_restart'",
		     "did you mean 'max_restarts'?");
	expect_error("expect:\n  gpu: 8\n", "t.yaml:2:3: expect.gpu: unknown key 'gpu'", "did you mean 'gpus'?");
	/* ... and then the value itself is missing: two problems. */
	assert_int_equal(expect_error_n("env:\n  X:\n    valeu: 1\n", 20, NULL, "t.yaml:3:5: env.X.valeu: unknown key 'valeu'",
					"did you mean 'value'?"),
			 2);
	/* In `nccl`, one edit away is a misspelling; further is another variable for `env`. */
	expect_error("nccl:\n  NCCL_IB_HCAS: x\n",
		     "t.yaml:2:3: nccl.NCCL_IB_HCAS: 'NCCL_IB_HCAS' is not a variable the planner decides",
		     "did you mean 'NCCL_IB_HCA'?");
	expect_error("nccl:\n  NCCL_IB_TC: 41\n",
		     "t.yaml:2:3: nccl.NCCL_IB_TC: 'NCCL_IB_TC' is not a variable the planner decides",
		     "'nccl' holds only what the planner decides; put 'NCCL_IB_TC' under 'env'");
	expect_error("env:\n  NCCL_IB_HCA: mlx5_0\n", "t.yaml:2:3: env.NCCL_IB_HCA: 'NCCL_IB_HCA' is decided by the planner",
		     "move it under 'nccl', where 'auto' also works");
}

static void test_wrong_types(void **state)
{
	(void)state;
	expect_error("nccl: [a, b]\n", "t.yaml:1:7: nccl: expected a mapping, found a list", NULL);
	expect_error("- a\n- b\n", "t.yaml:1:1: expected a mapping, found a list", NULL);
	expect_error("name: [a]\n", "t.yaml:1:7: name: expected a name, found a list", NULL);
	expect_error("env:\n  A: {x: 1, value: 2}\n", "t.yaml:2:7: env.A.x: unknown key 'x'", NULL);
	expect_error("env:\n  A: [1, 2]\n", "t.yaml:2:6: env.A: expected a value, found a list", NULL);
	expect_error("env:\n  A:\n", "t.yaml:2:5: env.A: expected a value, found nothing",
		     "write '' for an empty string");
	expect_error("env:\n  A: ~\n", "t.yaml:2:6: env.A: expected a value, found nothing",
		     "write '' for an empty string");
	expect_error("expect:\n  gpus: eight\n", "t.yaml:2:9: expect.gpus: 'eight' is not an integer from 0 to 65536",
		     NULL);
	expect_error("expect:\n  gdr_required: maybe\n",
		     "t.yaml:2:17: expect.gdr_required: 'maybe' is not a boolean (true or false)", NULL);
	expect_error("match:\n  link_layer: OmniPath\n",
		     "t.yaml:2:15: match.link_layer: 'OmniPath' is not a link layer (InfiniBand or Ethernet)", NULL);
	expect_error("match:\n  gpu_model: []\n", "t.yaml:2:14: match.gpu_model: empty list", NULL);
	expect_error("match: {}\n", "t.yaml:1:8: match: an empty match would apply everywhere",
		     "remove 'match' to apply the profile only when asked for");
	expect_error("extends: [a, {b: c}]\n",
		     "t.yaml:1:14: extends[1]: expected a profile name, path or URL, found a mapping", NULL);
	expect_error("{[a]: b}\n", "t.yaml:1:2: keys must be plain names, found a list", NULL);
}

static void test_bad_values(void **state)
{
	(void)state;
	expect_error("nccl:\n  NCCL_NET_GDR_LEVEL: FAR\n",
		     "t.yaml:2:23: nccl.NCCL_NET_GDR_LEVEL: 'FAR' is not a valid value: expected LOC, PIX, PXB, PHB, "
		     "SYS or 0-5 or auto",
		     NULL);
	expect_error("nccl:\n  NCCL_IB_DISABLE: yes\n",
		     "t.yaml:2:20: nccl.NCCL_IB_DISABLE: 'yes' is not a valid value: expected 0 or 1 or auto", NULL);
	expect_error("nccl:\n  NCCL_IB_GID_INDEX: 300\n",
		     "t.yaml:2:22: nccl.NCCL_IB_GID_INDEX: '300' is not a valid value: expected a GID index from -1 to "
		     "255 or auto",
		     NULL);
	expect_error("env:\n  lower_case: 1\n",
		     "t.yaml:2:3: env.lower_case: 'lower_case' is not a valid variable name ([A-Z_][A-Z0-9_]*)", NULL);
	expect_error("env:\n  1ABC: 1\n", "t.yaml:2:3: env.1ABC: '1ABC' is not a valid variable name ([A-Z_][A-Z0-9_]*)",
		     NULL);
	expect_error("env:\n  A: \"x\\ny\"\n", "t.yaml:2:6: env.A: value contains a newline",
		     "values are one line: use a plain or quoted scalar, not a block");
	expect_error("env:\n  A: |\n    line one\n", "t.yaml:2:6: env.A: value contains a newline",
		     "values are one line: use a plain or quoted scalar, not a block");
	expect_error("env:\n  A: \"x\\0y\"\n", "t.yaml:2:6: env.A: value contains a NUL character", NULL);
	expect_error("env:\n  A: auto\n", "t.yaml:2:6: env.A: 'auto' is not a value for 'A'",
		     "'auto' means 'let the probe decide' and only works under 'nccl'");
	expect_error("torchrun:\n  max_restarts: -1\n",
		     "t.yaml:2:17: torchrun.max_restarts: '-1' is not a non-negative integer", NULL);
	expect_error("torchrun:\n  master_port: 70000\n",
		     "t.yaml:2:16: torchrun.master_port: '70000' is not a port number (1-65535)", NULL);
	expect_error("torchrun:\n  nproc_per_node: many\n",
		     "t.yaml:2:19: torchrun.nproc_per_node: 'many' is not auto, gpu, cpu or a positive integer up to 4096", NULL);
	expect_error("torchrun:\n  monitor_interval: 0\n",
		     "t.yaml:2:21: torchrun.monitor_interval: '0' is not a positive number", NULL);
	expect_error("bind: socket\n", "t.yaml:1:7: bind: 'socket' is not a binding (numa, core or none)", NULL);
	expect_error("hang_timeout: soon\n",
		     "t.yaml:1:15: hang_timeout: 'soon' is not a duration from 1 s to 30 days (30, 30s, 5m, 1h)", NULL);
	expect_error("on_hang: wait\n", "t.yaml:1:10: on_hang: 'wait' is not stop or dump", NULL);
	expect_error("name: My_Profile\n", "t.yaml:1:7: name: 'My_Profile' is not a profile name (a-z, 0-9, '-', '_', '.')",
		     NULL);
	expect_error("env:\n  A:\n    value: x\n    when_exists: opt/x\n",
		     "t.yaml:4:18: env.A.when_exists: 'opt/x' is not an absolute path", NULL);
	expect_error("env:\n  A:\n    when_exists: /x\n", "t.yaml:3:5: env.A: missing 'value'", NULL);
	expect_error("env:\n  A: 1\n  A: 2\n", "t.yaml:3:3: env.A: duplicate key 'A'", NULL);
}

static void test_loader_vars(void **state)
{
	(void)state;
	struct ll_profile_load_opts allow = { .allow_loader_vars = true }, remote = { .remote = true };
	struct ll_profile *p;
	const char *hint = "pass --allow-loader-vars if you trust this profile to choose code";

	expect_error("env:\n  LD_PRELOAD: /tmp/x.so\n",
		     "t.yaml:2:3: env.LD_PRELOAD: 'LD_PRELOAD' selects code the workers load; a profile may not set it",
		     hint);
	expect_error("env:\n  PYTHONPATH: /tmp\n",
		     "t.yaml:2:3: env.PYTHONPATH: 'PYTHONPATH' selects code the workers load; a profile may not set it",
		     hint);
	expect_error("env:\n  NCCL_NET_PLUGIN: /tmp/evil.so\n",
		     "t.yaml:2:3: env.NCCL_NET_PLUGIN: 'NCCL_NET_PLUGIN' selects code the workers load; a profile may "
		     "not set it",
		     hint);
	p = parse_ok("env:\n  NCCL_NET_PLUGIN: none\n", NULL); /* disabling plugins loads nothing */
	ll_profile_free(p);
	p = parse_ok("env:\n  LD_LIBRARY_PATH: /opt/x/lib\n  PATH: /opt/bin\n", &allow);
	assert_int_equal(p->n_values, 2);
	ll_profile_free(p);

	/* The interpreter is code too: a local file may choose it, a fetched one may not. */
	p = parse_ok("python: /opt/py\n", NULL);
	ll_profile_free(p);
	assert_int_equal(expect_error_n("hang_timeout: 5m\n", 16, &remote,
					"t.yaml:1:1: hang_timeout: a profile from the network may not set 'hang_timeout'",
					hint),
			 1);
	assert_int_equal(expect_error_n("python: /opt/py\n", 15, &remote,
					"t.yaml:1:1: python: a profile from the network may not choose the interpreter",
					hint),
			 1);

	assert_true(ll_profile_var_restricted("LD_AUDIT", "x"));
	assert_true(ll_profile_var_restricted("LD_BIND_NOW", "1"));
	assert_true(ll_profile_var_restricted("GCONV_PATH", "/x"));
	assert_true(ll_profile_var_restricted("CUDA_INJECTION64_PATH", "/x"));
	assert_true(ll_profile_var_restricted("NCCL_TUNER_PLUGIN", "libx.so"));
	assert_false(ll_profile_var_restricted("NCCL_TUNER_PLUGIN", "none"));
	assert_false(ll_profile_var_restricted("NCCL_IB_HCA", "mlx5_0"));
	assert_false(ll_profile_var_restricted("OLD_PATH", "/x"));
}

/* A profile fetched over the network may set an allow-list only (docs/security.md).
 * Each of these made both ranks of a job run code or touch files of the URL's
 * choosing, and each was accepted before. */
/* A fetched profile's when_exists may test only where software is installed, and is
 * refused as written: the answer is the same for a path that exists (/etc/passwd)
 * and one that does not, so it tells the server nothing about the node. */
static void test_remote_when_exists(void **state)
{
	static const char *const refused[] = {
		"/etc/passwd", "/nonexistent/secret", "/root/.ssh/id_rsa", "/opt/../etc/passwd", "/usr/lib/./x",
		"/opt//x", "/opt/..", "/usr/libx/y", "/proc/self/environ",
	};
	const char *hint = "a fetched profile may test only where software is installed: /usr/lib/, /usr/lib64/, "
			   "/usr/local/lib/, /usr/local/lib64/ or /opt/";
	struct ll_profile_load_opts remote = { .remote = true };
	struct ll_profile *p;

	(void)state;
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		_cleanup_free_ char *text =
			ll_asprintf("env:\n  NCCL_NET:\n    value: IB\n    when_exists: %s\n", refused[i]);
		_cleanup_free_ char *msg = ll_asprintf("t.yaml:4:18: env.NCCL_NET.when_exists: '%s' is outside the places "
						       "a profile from the network may test", refused[i]);

		assert_int_equal(expect_error_n(text, strlen(text), &remote, msg, hint), 1);
		/* The user's own file may test what it likes. */
		p = parse_ok(text, NULL);
		ll_profile_free(p);
	}
	p = parse_ok("env:\n  NCCL_NET:\n    value: AWS Libfabric\n    when_exists:\n"
		     "      - /opt/amazon/ofi-nccl/lib/libnccl-net.so\n      - /usr/lib64/libnccl-net.so\n",
		     &remote);
	assert_int_equal(p->values[0].n_when_exists, 2);
	ll_profile_free(p);
}

static void test_remote_allow_list(void **state)
{
	(void)state;
	static const char *const code[] = {
		"PYTHONPYCACHEPREFIX", "FI_PROVIDER_PATH", "UCX_MODULE_DIR", "HWLOC_PLUGINS_PATH",
		"TRITON_CACHE_DIR",    "TORCH_EXTENSIONS_DIR", "PYTHONBREAKPOINT", "NCCL_IBVERBS_LIB",
		"NCCL_CUDA_PATH",      "NCCL_GIN_PLUGIN",      "NCCL_RMA_PLUGIN",
	};
	static const char *const outside[] = {
		"NCCL_DEBUG_FILE", "HTTPS_PROXY", "SSL_CERT_FILE", "HOSTALIASES", "HOME", "NCCL_TOPO_FILE",
		"NCCL_GRAPH_DUMP_FILE", "NCCL_CONF_FILE", "NCCL_COMM_ID", "FI_EFA_SOMETHING_NEW", "UCX_LOG_FILE",
		"LLMLAUNCH_PYTHON", "CUDA_CACHE_PATH", "PYTHONWARNINGS", "OMPI_MCA_PLM",
		/* NCCL writes a trace where it points (src/misc/profiler.cc, 2.12 to 2.22) */
		"NCCL_PROXY_PROFILE", "NCCL_TUNER_CONFIG_FILE", "NCCL_PROFILE_DUMP_FILE", "NCCL_INSPECTOR_DUMP_DIR",
		"NCCL_NEW_THING_LIB",
	};
	static const char *const allowed[] = {
		"NCCL_IB_TC", "NCCL_DEBUG", "NCCL_IB_PCI_RELAXED_ORDERING", "NCCL_NET", "FI_PROVIDER",
		"FI_EFA_USE_DEVICE_RDMA", "UCX_TLS", "UCX_NET_DEVICES", "RDMAV_FORK_SAFE",
		"CUDA_DEVICE_MAX_CONNECTIONS", "TORCH_NCCL_ASYNC_ERROR_HANDLING",
	};
	const char *hint_code = "pass --allow-loader-vars if you trust this profile to choose code";
	const char *hint_remote = "a fetched profile may set NCCL tuning, known FI_*/UCX_* tuning and torchrun's tuning "
				  "(docs/security.md); pass --allow-loader-vars if you trust it with the rest";
	struct ll_profile_load_opts remote = { .remote = true }, trusted = { .remote = true, .allow_loader_vars = true };
	struct ll_profile *p;

	for (size_t i = 0; i < sizeof(code) / sizeof(code[0]); i++) {
		_cleanup_free_ char *text = ll_asprintf("env:\n  %s: /tmp/x\n", code[i]);
		_cleanup_free_ char *msg = ll_asprintf("t.yaml:2:3: env.%s: '%s' selects code the workers load; a profile "
						       "may not set it", code[i], code[i]);
		/* Refused from a URL and from a local file alike. */
		assert_int_equal(expect_error_n(text, strlen(text), &remote, msg, hint_code), 1);
		assert_int_equal(expect_error_n(text, strlen(text), NULL, msg, hint_code), 1);
	}
	for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
		_cleanup_free_ char *text = ll_asprintf("env:\n  %s: /etc/x\n", outside[i]);
		_cleanup_free_ char *msg = ll_asprintf("t.yaml:2:3: env.%s: '%s' is not among the variables a profile "
						       "from the network may set", outside[i], outside[i]);
		assert_int_equal(expect_error_n(text, strlen(text), &remote, msg, hint_remote), 1);
		/* A local file is the user's own: only the deny-list applies there. */
		p = parse_ok(text, NULL);
		assert_false(p->values[0].trusted);
		ll_profile_free(p);
		/* With the flag: accepted, and marked so that explain lists it. */
		p = parse_ok(text, &trusted);
		assert_true(p->values[0].trusted);
		ll_profile_free(p);
	}
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		_cleanup_free_ char *text = ll_asprintf("env:\n  %s: \"1\"\n", allowed[i]);

		p = parse_ok(text, &remote);
		assert_false(p->values[0].trusted);
		ll_profile_free(p);
	}
	/* Planner variables, torchrun's tuning, bind, expect and match: all allowed. */
	p = parse_ok("nccl:\n  NCCL_IB_HCA: mlx5_0\n  NCCL_SOCKET_IFNAME: eth0\n  OMP_NUM_THREADS: 4\n"
		     "env:\n  NCCL_NET_PLUGIN: none\ntorchrun:\n  max_restarts: 3\n  start_method: spawn\n"
		     "bind: core\nexpect:\n  gpus: 8\nmatch:\n  gpu_count: 8\n",
		     &remote);
	assert_int_equal(p->n_values, 7);
	ll_profile_free(p);
	/* torchrun's world, the paths it writes and the code it loads: never from the
	 * network, with or without --allow-loader-vars; a local profile may. */
	{
		static const char *const world[][2] = {
			{ "rdzv_endpoint", "203.0.113.66:29400" }, { "rdzv_backend", "c10d" }, { "rdzv_id", "x" },
			{ "master_addr", "203.0.113.66" }, { "master_port", "29500" }, { "nnodes", "4" },
			{ "node_rank", "1" }, { "nproc_per_node", "8" }, { "log_dir", "/etc" }, { "local_addr", "h" },
			{ "logs_specs", "evil" },
		};

		for (size_t i = 0; i < sizeof(world) / sizeof(world[0]); i++) {
			_cleanup_free_ char *text = ll_asprintf("torchrun:\n  %s: \"%s\"\n", world[i][0], world[i][1]);
			_cleanup_free_ char *msg = ll_asprintf("t.yaml:2:3: torchrun.%s: a profile fetched over the "
							       "network may not set '%s': it is ",
							       world[i][0], world[i][0]);
			struct ll_profile_diags diags = { 0 };
			struct ll_error err = { 0 };

			p = NULL;
			assert_int_equal(ll_profile_parse("t.yaml", text, strlen(text), &trusted, &p, &diags, &err), -EINVAL);
			assert_true(ll_startswith(diags.items[0].message, msg));
			ll_profile_diags_release(&diags);
			ll_error_clear(&err);
			p = parse_ok(text, NULL);
			assert_int_equal(p->n_values, 1);
			ll_profile_free(p);
		}
	}
	/* A plugin that is not "none" loads a library. */
	expect_error_n("env:\n  NCCL_NEW_PLUGIN: libx.so\n", 31, &remote,
		       "t.yaml:2:3: env.NCCL_NEW_PLUGIN: 'NCCL_NEW_PLUGIN' is not among the variables a profile from "
		       "the network may set",
		       hint_remote);
	/* The interpreter with the flag: accepted and marked. */
	p = parse_ok("python: /opt/py\n", &trusted);
	assert_true(p->values[0].trusted);
	ll_profile_free(p);

	assert_true(ll_profile_var_remote_allowed("NCCL_ALGO", "Ring"));
	assert_false(ll_profile_var_remote_allowed("NCCL_RAS_ADDR", "10.0.0.1:1"));
	assert_false(ll_profile_var_remote_allowed("LD_PRELOAD", "x"));
	assert_false(ll_profile_var_remote_allowed("A", "1"));
}

static void test_yaml_level_errors(void **state)
{
	(void)state;
	static const char nul[] = "env:\n  A: x\0y\n";

	expect_error("env:\n  A: &a x\n  B: *a\n", "t.yaml:3:6: aliases ('*a') are not supported in profiles", NULL);
	expect_error("name: a\n---\nname: b\n", "t.yaml:2:1: a profile is one YAML document, found a second one", NULL);
	expect_error("env:\n  A: [1, 2\n",
		     "t.yaml:3:1: syntax error: did not find expected ',' or ']' (while parsing a flow sequence at line 2)",
		     NULL);
	expect_error("env:\n\tA: 1\n",
		     "t.yaml:2:1: syntax error: found character that cannot start any token (while scanning for the "
		     "next token at line 2)",
		     NULL);
	assert_int_equal(expect_error_n(nul, sizeof(nul) - 1, NULL, "t.yaml: contains a NUL byte: not a YAML text file",
					NULL),
			 1);
	/* Deep nesting is refused before it costs anything. */
	{
		struct ll_buf b;
		ll_buf_init(&b);
		ll_buf_add(&b, "env: ");
		for (int i = 0; i < 40; i++)
			ll_buf_add(&b, "[");
		expect_error(b.s, "t.yaml:1:37: nested deeper than 32 levels", NULL);
		ll_buf_release(&b);
	}
}

static void test_all_problems_reported(void **state)
{
	(void)state;
	const char *text = "name: x\n"
			   "nccl:\n"
			   "  NCCL_IB_HCAS: a\n"
			   "env:\n"
			   "  bad: 1\n"
			   "bnid: numa\n";

	assert_int_equal(expect_error_n(text, strlen(text), NULL,
					"t.yaml:3:3: nccl.NCCL_IB_HCAS: 'NCCL_IB_HCAS' is not a variable the planner decides",
					"did you mean 'NCCL_IB_HCA'?"),
			 3);
}

static void test_edit_distance(void **state)
{
	(void)state;
	assert_int_equal(ll_edit_distance("", ""), 0);
	assert_int_equal(ll_edit_distance("kitten", "sitting"), 3);
	assert_int_equal(ll_edit_distance("bnid", "bind"), 1);   /* transposition */
	assert_int_equal(ll_edit_distance("NCCL", "nccl"), 0);   /* case-insensitive */
	assert_int_equal(ll_edit_distance("abc", ""), 3);
}

static void test_shipped_profiles_validate(void **state)
{
	(void)state;
	const char *src = getenv("LL_SRCDIR");
	_cleanup_free_ char *dir = NULL;
	struct dirent *de;
	DIR *d;
	int n = 0;

	if (!src)
		skip();
	dir = ll_asprintf("%s/profiles", src);
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d))) {
		_cleanup_free_ char *path = NULL, *stem = NULL;
		struct ll_profile *p = NULL;
		struct ll_error err = { 0 };
		size_t len = strlen(de->d_name);

		if (len < 6 || strcmp(de->d_name + len - 5, ".yaml") != 0)
			continue;
		path = ll_asprintf("%s/%s", dir, de->d_name);
		if (ll_profile_load_file(path, NULL, &p, NULL, &err) < 0)
			fail_msg("%s", err.message);
		/* The name inside is the name users type. */
		stem = ll_strndup(de->d_name, len - 5);
		/* Served from a URL, each would load too, but for the one value that
		 * names a file (NCCL_TOPO_FILE, azure-nd-h100-v5) ... */
		{
			struct ll_profile_load_opts remote = { .remote = true };
			struct ll_profile_diags diags = { 0 };
			struct ll_profile *q = NULL;
			struct ll_error e = { 0 };

			if (ll_profile_load_file(path, &remote, &q, &diags, &e) < 0 && strcmp(stem, "gcp-a3-ultra") == 0) {
				/* ... and gcp-a3-ultra's when_exists, which tests a script outside
				 * the library locations a fetched profile may test. */
				assert_int_equal(diags.n, 1);
				assert_non_null(strstr(diags.items[0].message, "env.NCCL_NET.when_exists: "
										   "'/usr/local/gib/scripts/set_nccl_env.sh' is outside"));
			} else if (e.message) {
				assert_string_equal(stem, "azure-nd-h100-v5");
				assert_int_equal(diags.n, 1);
				assert_non_null(strstr(diags.items[0].message, "env.NCCL_TOPO_FILE: 'NCCL_TOPO_FILE' is not "
										   "among the variables"));
			}
			ll_profile_diags_release(&diags);
			ll_error_clear(&e);
			ll_profile_free(q);
		}
		assert_string_equal(p->name, stem);
		assert_non_null(p->description);
		ll_profile_free(p);
		n++;
	}
	closedir(d);
	assert_int_equal(n, 11);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_profile),
		cmocka_unit_test(test_empty_and_defaults),
		cmocka_unit_test(test_unknown_keys),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_loader_vars),
		cmocka_unit_test(test_remote_allow_list),
		cmocka_unit_test(test_remote_when_exists),
		cmocka_unit_test(test_yaml_level_errors),
		cmocka_unit_test(test_all_problems_reported),
		cmocka_unit_test(test_edit_distance),
		cmocka_unit_test(test_shipped_profiles_validate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
