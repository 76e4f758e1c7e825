/* The preflight check: the pair schedule, its cost, the script's lines and the verdict. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "llmlaunch/check.h"

/* Every ring edge is tested exactly once, partners agree, no node is in more than two
 * pairs, and the number of rounds does not grow with the job. */
static void test_schedule(void **state)
{
	static const size_t sizes[] = { 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 1000, 1001, 10000 };

	(void)state;
	assert_int_equal(ll_check_rounds(0), 0);
	assert_int_equal(ll_check_rounds(1), 0);
	assert_int_equal(ll_check_partner(1, 0, 0), -1);
	for (size_t s = 0; s < LL_ARRAY_SIZE(sizes); s++) {
		size_t n = sizes[s];
		int rounds = ll_check_rounds(n);
		unsigned char *edge = calloc(n, 1), *tests = calloc(n, 1);

		assert_true(rounds <= 3);
		for (int r = 0; r < rounds; r++)
			for (size_t i = 0; i < n; i++) {
				long p = ll_check_partner(n, r, i);

				if (p < 0)
					continue;
				assert_true((size_t)p < n && (size_t)p != i);
				assert_int_equal(ll_check_partner(n, r, (size_t)p), (long)i);
				tests[i]++;
				/* the ring edge (i, i+1 mod n), counted from its lower end */
				if ((size_t)p == (i + 1) % n)
					edge[i]++;
			}
		for (size_t i = 0; i < n; i++) {
			assert_true(tests[i] <= 2);
			if (n > 2)
				assert_int_equal(edge[i], 1);
		}
		free(edge);
		free(tests);
	}
	/* four nodes: (0,1) (2,3), then (1,2) (3,0) */
	assert_int_equal(ll_check_partner(4, 0, 2), 3);
	assert_int_equal(ll_check_partner(4, 1, 0), 3);
	assert_int_equal(ll_check_partner(4, 1, 2), 1);
}

static void test_estimate_flat(void **state)
{
	struct ll_check_params p;
	struct ll_check_model m = { .alpha_us = 10, .node_gbps = 400, .nproc = 8 };
	struct ll_check_estimate e1, e2, e3;

	(void)state;
	ll_check_params_default(&p, true);
	ll_check_estimate(1000, &p, &m, &e1);
	ll_check_estimate(10000, &p, &m, &e2);
	ll_check_estimate(4, &p, &m, &e3);
	assert_int_equal(e1.rounds, 2);
	assert_int_equal(e1.pair_tests_per_node, 2);
	assert_int_equal(e2.pair_tests_per_node, 2);
	/* the pair rounds cost about the same at any size (only the barrier grows, as log) */
	assert_true(e2.pairs_s < e1.pairs_s * 1.1);
	assert_true(e1.pairs_s < e3.pairs_s * 1.2);
	/* well under a minute at 1,000 nodes */
	assert_true(e1.total_s < 30);
	assert_true(e2.total_s > e1.total_s);
}

/* Four nodes, one line per thing; node `slow` (or -1) gets pair times x `factor`. */
static char *four_nodes(int slow, double factor, bool end)
{
	struct ll_buf b;

	ll_buf_init(&b);
	ll_buf_add(&b, "{\"phase\":\"allreduce\",\"step\":1,\"of\":4}\n");
	ll_buf_add(&b, "{\"check\":1,\"backend\":\"gloo\",\"world\":4,\"nnodes\":4,\"nproc\":1,\"rounds\":2}\n");
	for (int i = 0; i < 4; i++)
		ll_buf_addf(&b, "{\"node\":%d,\"name\":\"n%d\"}\n", i, i + 1);
	ll_buf_add(&b, "{\"allreduce\":{\"bytes\":1048576,\"iters\":5,\"time_us\":[1100,1000,900,5000,1000]}}\n");
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < 4; i++) {
			long p = ll_check_partner(4, r, (size_t)i);
			double t = 1000 + 10 * i; /* 4 MiB in about 1 ms: 4.2 GB/s */

			if (i == slow || p == slow)
				t *= factor;
			/* the best repetition counts: the others are noise */
			ll_buf_addf(&b,
				    "{\"pair\":{\"round\":%d,\"node\":%d,\"bytes\":4194304,\"iters\":3,"
				    "\"time_us\":[%g,%g,%g],\"lat_us\":[%g,%g]}}\n",
				    r, i, t * 3, t, t * 1.5, 50.0 + i, 500.0);
		}
	if (end)
		ll_buf_add(&b, "{\"end\":true}\n");
	return ll_buf_detach(&b);
}

static void parse_ok(const char *text, struct ll_check_result *r)
{
	struct ll_error err = { 0 };

	if (ll_check_parse(text, "out", r, &err) < 0)
		fail_msg("unexpected error: %s", err.message);
}

static void test_one_slow_node(void **state)
{
	_cleanup_free_ char *text = four_nodes(2, 20, true);
	struct ll_check_result r;
	struct ll_check_verdict v;
	_cleanup_free_ char *ex = NULL;

	(void)state;
	parse_ok(text, &r);
	assert_true(r.complete);
	assert_int_equal(r.n_sizes, 1);
	/* median of the repetitions: 1000 us for 1 MiB; busbw = algbw * 2(n-1)/n */
	assert_true(r.sizes[0].time_us == 1000);
	assert_true(r.sizes[0].busbw_gbps > 1.57 && r.sizes[0].busbw_gbps < 1.58);
	ll_check_decide(&r, NULL, NULL, &v);
	assert_false(v.ok);
	assert_int_equal(v.n_named, 1);
	assert_int_equal(v.named[0], 2);
	assert_string_equal(r.nodes[2].name, "n3");
	assert_true(r.nodes[2].slow);
	assert_non_null(strstr(r.nodes[2].why, "of the median"));
	assert_non_null(strstr(v.slow_gbps.source, "50% of the job's median"));
	/* its neighbours each kept one good pair */
	assert_false(r.nodes[1].slow);
	assert_false(r.nodes[3].slow);
	ex = ll_check_exclude_list(&r, &v);
	assert_string_equal(ex, "n3");
	ll_check_verdict_release(&v);
	ll_check_result_release(&r);
}

static void test_noise_is_not_slow(void **state)
{
	_cleanup_free_ char *text = four_nodes(1, 1.9, true); /* half as fast again: noise on a busy machine, not a fault */
	struct ll_check_result r;
	struct ll_check_verdict v;

	(void)state;
	parse_ok(text, &r);
	ll_check_decide(&r, NULL, NULL, &v);
	assert_true(v.ok);
	assert_int_equal(v.n_named, 0);
	ll_check_verdict_release(&v);
	ll_check_result_release(&r);
}

static void test_expectation_and_fallback(void **state)
{
	_cleanup_free_ char *text = four_nodes(-1, 1, true);
	struct ll_check_result r;
	struct ll_check_verdict v;
	struct ll_profile_expect e;
	struct ll_nccl_host host = { .name = "n2", .fallback = true, .fallback_reason = "NET/IB found no usable device" };
	struct ll_nccl_verdict nccl = { .fallback = true, .fallback_reason = "NET/IB found no usable device",
					.expect = LL_NET_EXPECT_IB, .hosts = &host, .n_hosts = 1 };

	(void)state;
	ll_profile_expect_init(&e);
	e.pair_busbw_gbps = (struct ll_profile_figure){ .value = 4.12, .origin = "/etc/site.yaml", .line = 7 };
	e.allreduce_busbw_gbps = (struct ll_profile_figure){ .value = 100, .origin = "/etc/site.yaml", .line = 6 };
	parse_ok(text, &r);
	ll_check_decide(&r, &e, NULL, &v);
	/* 4 MiB / 1.0x ms: n1 and n2 reach 4.12 GB/s with their best pair, n3 and n4 do not */
	assert_int_equal(v.n_named, 2);
	assert_int_equal(v.named[0], 2);
	assert_int_equal(v.named[1], 3);
	assert_string_equal(v.slow_gbps.source, "profile /etc/site.yaml:7");
	assert_true(v.job_slow);
	assert_non_null(strstr(v.job_why, "profile /etc/site.yaml:6"));
	ll_check_verdict_release(&v);

	/* a figure most nodes miss names no node: the job is slow */
	e.pair_busbw_gbps.value = 100;
	ll_check_decide(&r, &e, NULL, &v);
	assert_int_equal(v.n_named, 0);
	assert_true(v.job_slow);
	assert_non_null(strstr(v.job_why, "4 of 4 nodes miss the profile's figures (profile /etc/site.yaml:7)"));
	assert_false(r.nodes[0].slow);
	ll_check_verdict_release(&v);

	/* The same figures from a profile fetched over the network: nothing is named,
	 * the job is not slow because of them, and the verdict says what they would
	 * have said, as a warning. */
	e.pair_busbw_gbps = (struct ll_profile_figure){ .value = 4.12, .origin = "https://x/p.yaml", .line = 7,
							.fetched = true };
	e.allreduce_busbw_gbps = (struct ll_profile_figure){ .value = 100, .origin = "https://x/p.yaml", .line = 6,
							     .fetched = true };
	ll_check_decide(&r, &e, NULL, &v);
	assert_int_equal(v.n_named, 0);
	assert_false(v.job_slow);
	assert_true(v.ok);
	assert_false(r.nodes[2].slow);
	assert_non_null(v.advice);
	assert_non_null(strstr(v.advice, "2 nodes miss a fetched profile's figures (profile https://x/p.yaml:7): n3, n4"));
	assert_non_null(strstr(v.advice, "below a fetched profile's 100 GB/s (profile https://x/p.yaml:6)"));
	assert_non_null(strstr(v.advice, "cannot name, exclude or drain nodes"));
	ll_check_verdict_release(&v);

	/* figures fine, but sockets where InfiniBand was planned: not ok, whatever the numbers */
	ll_check_decide(&r, NULL, &nccl, &v);
	assert_int_equal(v.n_named, 0);
	assert_true(v.transport_fallback);
	assert_false(v.ok);
	assert_string_equal(v.transport_why, "NCCL ran over sockets where the plan expected InfiniBand; NCCL on n2: unknown "
					     "transport, GPUDirect RDMA off, FALLBACK: NET/IB found no usable device; the "
					     "figures measure sockets, not the planned network");
	ll_check_verdict_release(&v);
	ll_check_result_release(&r);
}

/* The verdict of a real scan: the project's fixture of a RoCE job where one node ran
 * over sockets (tests/fixtures/nccl/mpirun-roce-one-node-sockets.log). */
static void test_fallback_from_a_scanned_log(void **state)
{
	_cleanup_free_ char *text = four_nodes(-1, 1, true);
	const char *fixtures = getenv("LL_FIXTURES");
	_cleanup_free_ char *log = NULL;
	struct ll_ncclscan *scan;
	struct ll_check_result r;
	struct ll_check_verdict v;
	struct ll_error err = { 0 };

	(void)state;
	if (!fixtures)
		skip();
	log = ll_asprintf("%s/nccl/mpirun-roce-one-node-sockets.log", fixtures);
	scan = ll_ncclscan_new(LL_NET_EXPECT_ROCE);
	assert_int_equal(ll_ncclscan_file(scan, log, &err), 0);
	parse_ok(text, &r);
	ll_check_decide(&r, NULL, ll_ncclscan_result(scan), &v);
	assert_true(v.transport_fallback);
	assert_false(v.ok);
	assert_int_equal(v.n_named, 0);
	assert_string_equal(v.transport_why, "NCCL ran over sockets where the plan expected RoCE; NCCL on gpu02: sockets over "
					     "eth0, GPUDirect RDMA off, FALLBACK: RoCE was expected; the figures measure "
					     "sockets, not the planned network");
	ll_check_verdict_release(&v);
	ll_check_result_release(&r);
	ll_ncclscan_free(scan);
}

/* Another node's llmlaunch saw the fallback in its own logs: the figures carry it,
 * and every node's verdict says so. */
static void test_fallback_seen_elsewhere(void **state)
{
	_cleanup_free_ char *text = four_nodes(-1, 1, true);
	char *p = strstr(text, "\"name\":\"n3\"}");
	struct ll_buf b;
	struct ll_check_result r;
	struct ll_check_verdict v;

	(void)state;
	assert_non_null(p);
	ll_buf_init(&b);
	ll_buf_addf(&b, "%.*s\"name\":\"n3\",\"nccl_fallback\":true}%s", (int)(p - text), text,
		    p + strlen("\"name\":\"n3\"}"));
	parse_ok(b.s, &r);
	assert_true(r.nodes[2].nccl_fallback);
	assert_false(r.nodes[1].nccl_fallback);
	ll_check_decide(&r, NULL, NULL, &v);
	assert_true(v.transport_fallback);
	assert_false(v.ok);
	assert_int_equal(v.n_named, 0);
	assert_string_equal(v.transport_why, "NCCL ran over sockets where the plan expected RDMA (seen in the logs of n3); "
					     "the figures measure sockets, not the planned network");
	ll_check_verdict_release(&v);
	ll_check_result_release(&r);
	ll_buf_release(&b);
}

static void test_stopped_and_bad_lines(void **state)
{
	_cleanup_free_ char *text = four_nodes(-1, 1, false);
	struct ll_check_result r;
	struct ll_check_verdict v;
	struct ll_error err = { 0 };

	(void)state;
	parse_ok(text, &r);
	assert_false(r.complete);
	assert_string_equal(r.last_phase, "allreduce, step 1 of 4");
	ll_check_decide(&r, NULL, NULL, &v);
	assert_false(v.ok);
	ll_check_verdict_release(&v);
	ll_check_result_release(&r);

	parse_ok("{\"phase\":\"pairs\",\"step\":2,\"of\":3}\n{\"phase\":\"pai", &r);
	assert_string_equal(r.last_phase, "pairs, step 2 of 3");
	assert_null(r.nodes);
	ll_check_result_release(&r);

	assert_int_equal(ll_check_parse("{\"node\":0,\"name\":\"n1\"}\n", "out", &r, &err), -EINVAL);
	assert_string_equal(err.message, "out:1: results before the check's header");
	ll_error_clear(&err);
	assert_int_equal(ll_check_parse("{\"check\":1,\"backend\":\"gloo\",\"world\":4,\"nnodes\":4,"
					"\"nproc\":1,\"rounds\":3}\n",
					"out", &r, &err),
			 -EINVAL);
	assert_string_equal(err.message, "out:1: not a valid check header");
	ll_error_clear(&err);
	assert_int_equal(ll_check_parse("[1]\n", "out", &r, &err), -EINVAL);
	ll_error_clear(&err);
}

/* Hostile results: counts whose product overflows an int, node names that are no
 * host names, and a node without a name, which is never written as a placeholder. */
static void test_counts_and_names(void **state)
{
	static const char *const headers[] = {
		/* 65,536 x 65,537 is 2^32 + 65,536: as ints, world 65,536 "matched" */
		"{\"check\":1,\"backend\":\"gloo\",\"world\":65536,\"nnodes\":65536,\"nproc\":65537,\"rounds\":2}\n",
		"{\"check\":1,\"backend\":\"gloo\",\"world\":4,\"nnodes\":4294967300,\"nproc\":1,\"rounds\":2}\n",
		"{\"check\":1,\"backend\":\"gloo\",\"world\":20000,\"nnodes\":4,\"nproc\":5000,\"rounds\":2}\n",
	};
	static const char *const bad_names[] = {
		"n1;reboot", "n[1-3]", "n1,n2", "-n1", "n1-", "a..b", ".n1", "n 1", "n1\\u001b]52;c;x\\u0007",
		"\\u00e9t\\u00e9", "x1234567890123456789012345678901234567890123456789012345678901234",
	};
	struct ll_check_result r;
	struct ll_check_verdict v;
	struct ll_error err = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
		assert_int_equal(ll_check_parse(headers[i], "out", &r, &err), -EINVAL);
		assert_string_equal(err.message, "out:1: not a valid check header");
		ll_error_clear(&err);
	}
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		_cleanup_free_ char *text = ll_asprintf("{\"check\":1,\"backend\":\"gloo\",\"world\":2,\"nnodes\":2,"
							"\"nproc\":1,\"rounds\":1}\n{\"node\":0,\"name\":\"%s\"}\n",
							bad_names[i]);

		assert_int_equal(ll_check_parse(text, "out", &r, &err), -EINVAL);
		assert_string_equal(err.message, "out:2: not a valid node line");
		ll_error_clear(&err);
	}
	assert_true(ll_check_node_name_valid("gpu-a100-017.cluster_1.example"));
	assert_true(ll_check_node_name_valid("n1"));

	/* Node 2 said no name (""), node 3 never said: both stay unnamed; node 2 is
	 * slow, and the exclude list is no list rather than "n1,node 2". */
	{
		_cleanup_free_ char *text = four_nodes(2, 20, true);
		char *line2 = strstr(text, "{\"node\":2,\"name\":\"n3\"}"), *line3 = strstr(text, "{\"node\":3,");

		assert_non_null(line2);
		memcpy(line2, "{\"node\":2,\"name\":\"\"}  ", strlen("{\"node\":2,\"name\":\"n3\"}"));
		memcpy(line3, "{\"phase\":\"p\"}         ", strlen("{\"node\":3,\"name\":\"n4\"}"));
		parse_ok(text, &r);
		assert_null(r.nodes[2].name);
		assert_null(r.nodes[3].name);
		ll_check_decide(&r, NULL, NULL, &v);
		assert_int_equal(v.n_named, 1);
		assert_null(ll_check_exclude_list(&r, &v));
		ll_check_verdict_release(&v);
		ll_check_result_release(&r);
	}
}

static void test_on_slow_names(void **state)
{
	enum ll_check_on_slow p;

	(void)state;
	assert_int_equal(ll_check_on_slow_parse("exclude", &p), 0);
	assert_int_equal(p, LL_ON_SLOW_EXCLUDE);
	assert_int_equal(ll_check_on_slow_parse("drain", &p), -EINVAL);
	assert_string_equal(ll_check_on_slow_name(LL_ON_SLOW_STOP), "stop");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schedule),
		cmocka_unit_test(test_estimate_flat),
		cmocka_unit_test(test_one_slow_node),
		cmocka_unit_test(test_noise_is_not_slow),
		cmocka_unit_test(test_expectation_and_fallback),
		cmocka_unit_test(test_fallback_from_a_scanned_log),
		cmocka_unit_test(test_fallback_seen_elsewhere),
		cmocka_unit_test(test_stopped_and_bad_lines),
		cmocka_unit_test(test_counts_and_names),
		cmocka_unit_test(test_on_slow_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
