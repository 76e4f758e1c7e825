/* NCCL log scanner and watcher: every real log in LL_REALDATA/nccl_logs with the
 * verdict a person reading it would reach, and each line shape and prefix style. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "llmlaunch/nccl-scan.h"
#include "llmlaunch/nccl-watch.h"

enum { T_UNK = LL_NCCL_TRANSPORT_UNKNOWN, T_NONE = LL_NCCL_TRANSPORT_NONE, T_SOCK = LL_NCCL_TRANSPORT_SOCKET,
       T_PLUG = LL_NCCL_TRANSPORT_PLUGIN, T_ROCE = LL_NCCL_TRANSPORT_ROCE, T_IB = LL_NCCL_TRANSPORT_IB };

/* ---- helpers ------------------------------------------------------------------ */

static struct ll_ncclscan *scan_text(enum ll_net_expect expect, const char *text)
{
	struct ll_ncclscan *s = ll_ncclscan_new(expect);
	struct ll_ncclscan_stream *st = ll_ncclscan_stream_new(s, "mem.log");

	ll_ncclscan_feed(s, st, text, strlen(text));
	ll_ncclscan_flush(s, st);
	return s;
}

static const struct ll_nccl_host *host_named(const struct ll_nccl_verdict *v, const char *name)
{
	for (size_t i = 0; i < v->n_hosts; i++)
		if (ll_streq(v->hosts[i].name, name))
			return &v->hosts[i];
	fail_msg("no host '%s'", name ? name : "(null)");
	return NULL;
}

static char *summary(const struct ll_nccl_host *h)
{
	struct ll_buf b;

	ll_buf_init(&b);
	ll_nccl_host_summary(h, &b);
	return b.s; /* the caller owns it */
}

/* ---- the real logs ------------------------------------------------------------ */

/* The verdict of every real log (and of the constructed ones) is a row of
 * tests/fixtures/nccl/corpus.tsv, checked through the command line by
 * integration/logs-corpus; here are details a row does not hold. */

/* Per-host details of the multi-host real logs. */
static void test_real_hosts(void **state)
{
	const char *dir = getenv("LL_REALDATA");
	_cleanup_free_ char *p1 = NULL, *p2 = NULL, *p3 = NULL;
	_cleanup_(ll_ncclscan_freep) struct ll_ncclscan *s1 = NULL, *s2 = NULL, *s3 = NULL;
	const struct ll_nccl_verdict *v;
	const struct ll_nccl_host *h;

	(void)state;
	if (!dir || access(dir, R_OK) != 0)
		skip();
	p1 = ll_asprintf("%s/nccl_logs/socket-05-horovod3658-mpirun-prefixed-net-socket-channels.log", dir);
	s1 = ll_ncclscan_new(LL_NET_EXPECT_ANY);
	assert_int_equal(ll_ncclscan_file(s1, p1, NULL), 0);
	v = ll_ncclscan_result(s1);
	h = host_named(v, "ip-172-31-12-129");
	assert_int_equal(h->n_ranks, 2);
	assert_int_equal(h->ranks[0]->pid, 1759);
	assert_int_equal(h->ranks[0]->rank, 4); /* from mpirun's [1,4] */
	assert_int_equal(h->ranks[0]->cuda_dev, 0);
	assert_int_equal(h->ranks[0]->socket_channels, 3);
	assert_int_equal(h->ranks[1]->pid, 1761);
	assert_int_equal(h->ranks[1]->rank, 6);

	p2 = ll_asprintf("%s/nccl_logs/ib-09-nccl1357-h100-ib-sharp-ibext.log", dir);
	s2 = ll_ncclscan_new(LL_NET_EXPECT_ANY);
	assert_int_equal(ll_ncclscan_file(s2, p2, NULL), 0);
	v = ll_ncclscan_result(s2);
	h = host_named(v, "qh100-gpu19");
	assert_int_equal(h->transport, T_UNK);
	assert_int_equal(h->n_ranks, 3);
	assert_int_equal(h->ranks[0]->rank, 6);
	assert_int_equal(h->ranks[0]->nranks, 16);
	h = host_named(v, "qh100-gpu20");
	assert_int_equal(h->ranks[0]->n_devices, 4);
	assert_string_equal(h->ranks[0]->devices[2].name, "mlx5_4");
	assert_int_equal(h->ranks[0]->devices[2].port, 1);
	assert_int_equal(h->ranks[0]->devices[2].kind, LL_NCCL_DEV_IB);
	assert_true(h->ranks[0]->devices[2].sharp);
	assert_true(h->ranks[0]->relaxed_ordering);

	/* NCCL 2.4.7 prints NET/Socket : Using at init whatever it then uses: the hosts
	 * showing only that line are unknown, not sockets; the hosts where NET/IB found
	 * no device fell back, and say which line shows it. */
	p3 = ll_asprintf("%s/nccl_logs/socket-01-nccl226-aws-no-ib-device-ens3.log", dir);
	s3 = ll_ncclscan_new(LL_NET_EXPECT_ANY);
	assert_int_equal(ll_ncclscan_file(s3, p3, NULL), 0);
	v = ll_ncclscan_result(s3);
	h = host_named(v, "ip-172-31-12-210");
	assert_int_equal(h->transport, T_UNK);
	assert_false(h->fallback);
	assert_true(h->unknown);
	h = host_named(v, "ip-172-31-12-21");
	assert_true(h->fallback);
	assert_false(h->unknown);
	assert_non_null(h->fallback_cause);
	assert_int_equal(h->fallback_cause->line, 1);
	assert_string_equal(h->fallback_cause->text, "NET/IB : No device found.");
	assert_null(h->fallback_via);
	h = host_named(v, "ip-172-31-8-153");
	assert_int_equal(h->transport, T_UNK);
	assert_false(h->fallback);
	assert_int_equal(v->hosts_unknown, 9);
}

/* ---- line shapes and prefixes ---------------------------------------------------- */

static void test_prefix_styles(void **state)
{
	static const struct {
		const char *line;
		const char *host;
		long pid;
		int dev;
		int rank;
	} cases[] = {
		{ "n1:100:101 [3] NCCL INFO Using network IB\n", "n1", 100, 3, -1 },
		{ "[1,4]<stdout>:n2:200:201 [0] NCCL INFO Using network IB\n", "n2", 200, 0, 4 },
		{ "[155] n3:300:301 [1] NCCL INFO Using network IB\n", "n3", 300, 1, 155 },
		{ "12: n4:400:401 [2] NCCL INFO Using network IB\n", "n4", 400, 2, 12 },
		{ "2024-05-01T10:00:00.123456+02:00 n5:500:501 [0] NCCL INFO Using network IB\n", "n5", 500, 0, -1 },
		{ "[default3]:n6.cluster:600:601 [3] NCCL INFO Using network IB\r\n", "n6.cluster", 600, 3, -1 },
		{ "n7:700:701 [7] NCCL INFO Using network IB   \t\n", "n7", 700, 7, -1 },
		{ "<cluster_name>:800:801 [1] NCCL INFO Using network IB\n", "<cluster_name>", 800, 1, -1 },
		{ "[2024-05-01 10:00:00] n9:900:901 [0] NCCL INFO Using network IB\n", "n9", 900, 0, -1 },
	};

	(void)state;
	for (size_t i = 0; i < LL_ARRAY_SIZE(cases); i++) {
		_cleanup_(ll_ncclscan_freep) struct ll_ncclscan *s = scan_text(LL_NET_EXPECT_ANY, cases[i].line);
		const struct ll_nccl_verdict *v = ll_ncclscan_result(s);

		assert_int_equal(v->n_hosts, 1);
		assert_string_equal(v->hosts[0].name, cases[i].host);
		assert_int_equal(v->hosts[0].n_ranks, 1);
		assert_int_equal(v->hosts[0].ranks[0]->pid, cases[i].pid);
		assert_int_equal(v->hosts[0].ranks[0]->cuda_dev, cases[i].dev);
		assert_int_equal(v->hosts[0].ranks[0]->rank, cases[i].rank);
		/* "IB" with trailing CR/blanks stripped, not "IB\r" */
		assert_string_equal(v->hosts[0].ranks[0]->network, "IB");
		assert_int_equal(v->transport, T_IB);
	}
}

static void test_warn_prefix_and_classes(void **state)
{
	static const struct {
		const char *text;
		enum ll_nccl_warn_class cls;
	} cases[] = {
		{ "NET/IB : Got completion from peer 10.0.0.2<1234> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
		  LL_NCCL_WARN_IB_COMPLETION },
		{ "NET/IB : Got completion from peer fe80::1%ib0<1> with error 4, opcode 1, len 1, vendor err 81 (Send)",
		  LL_NCCL_WARN_IB_COMPLETION },
		{ "Call to ibv_modify_qp failed with 110 Connection timed out", LL_NCCL_WARN_IB_VERBS_CALL },
		{ "Call to ibv_create_qp failed", LL_NCCL_WARN_IB_VERBS_CALL },
		{ "Call to ibv_create_cq failed", LL_NCCL_WARN_IB_VERBS_CALL },
		{ "socketProgress: Connection closed by remote peer n2<53735>", LL_NCCL_WARN_SOCKET },
		{ "socketProgressOpt: Call to send from 10.0.0.1<1> failed : Connection reset by peer",
		  LL_NCCL_WARN_SOCKET },
		{ "NET/Socket : no interface found", LL_NCCL_WARN_NO_INTERFACE },
		{ "Bootstrap : no socket interface found", LL_NCCL_WARN_NO_INTERFACE },
		/* NCCL_NET named a network that could not be set up: init fails (2.12-2.26, 2.27+). */
		{ "Failed to initialize any NET plugin", LL_NCCL_WARN_NO_NETWORK },
		{ "Error: network gIB not found.", LL_NCCL_WARN_NO_NETWORK },
		{ "NET/IB : Got async event : client reregistration", LL_NCCL_WARN_OTHER },
		{ "Failed to open libibverbs.so[.1]", LL_NCCL_WARN_PLUGIN_MISSING },
		{ "Cuda failure 'out of memory'", LL_NCCL_WARN_OTHER },
	};
	_cleanup_(ll_ncclscan_freep) struct ll_ncclscan *s = NULL;
	const struct ll_nccl_verdict *v;

	(void)state;
	for (size_t i = 0; i < LL_ARRAY_SIZE(cases); i++)
		assert_string_equal(ll_nccl_warn_class_name(ll_nccl_warn_classify(cases[i].text, strlen(cases[i].text))),
				    ll_nccl_warn_class_name(cases[i].cls));

	s = scan_text(LL_NET_EXPECT_ANY,
		      "\n"
		      "gpu1:42:43 [5] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with 110 Connection "
		      "timed out\n"
		      "NCCL WARN Failed to open libibverbs.so[.1]\n");
	v = ll_ncclscan_result(s);
	assert_int_equal(v->n_warnings, 2);
	assert_string_equal(v->warnings[0].file, "mem.log");
	assert_int_equal(v->warnings[0].line, 2);
	assert_string_equal(v->warnings[0].host, "gpu1");
	assert_int_equal(v->warnings[0].pid, 42);
	assert_string_equal(v->warnings[0].text, "Call to ibv_modify_qp failed with 110 Connection timed out");
	assert_int_equal(v->warnings[0].cls, LL_NCCL_WARN_IB_VERBS_CALL);
	assert_null(v->warnings[1].host);
	assert_int_equal(v->warnings[1].line, 3);
	assert_int_equal(v->warnings[1].cls, LL_NCCL_WARN_PLUGIN_MISSING);
	assert_true(v->error);
	assert_int_equal(host_named(v, "gpu1")->ranks[0]->cuda_dev, 5);
}

static void test_old_nccl_socket_line_is_not_fallback(void **state)
{
	(void)state;
	{
	/* NCCL 2.4 prints the socket line first, then uses IB. */
	_cleanup_(ll_ncclscan_freep) struct ll_ncclscan *s = scan_text(
		LL_NET_EXPECT_ANY,
		"h:1:1 [0] NCCL INFO NET/Socket : Using [0]ib0:10.0.0.1<0>\n"
		"h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n"
		"h:1:9 [0] NCCL INFO Ring 00 : 0 -> 1 [send] via NET/IB/0/GDRDMA\n"
		"h:1:9 [0] NCCL INFO Ring 00 : 1 -> 0 [receive] via NET/IB/0/GDRDMA\n");
	const struct ll_nccl_verdict *v = ll_ncclscan_result(s);
	_cleanup_free_ char *line = summary(&v->hosts[0]);

	assert_int_equal(v->transport, T_IB);
	assert_int_equal(v->gdr, 1);
	assert_false(v->fallback);
	assert_false(v->error);
	assert_int_equal(v->hosts[0].ranks[0]->gdr_channels, 2);
	assert_string_equal(line, "NCCL on h: InfiniBand over mlx5_0, GPUDirect RDMA on");
	}
}

static void test_socket_line_proof(void **state)
{
	static const struct {
		const char *text;
		int transport;
	} cases[] = {
		/* Alone, with no version: NCCL 2.4.2-2.4.7 print it whatever they use. */
		{ "h:1:1 [0] NCCL INFO NET/Socket : Using [0]ib0:10.0.0.1<0>\n", T_UNK },
		{ "NCCL version 2.4.7+cuda10.1\nh:1:1 [0] NCCL INFO NET/Socket : Using [0]ib0:10.0.0.1<0>\n", T_UNK },
		/* From 2.4.8 only a chosen socket transport prints it. */
		{ "NCCL version 2.4.8+cuda10.1\nh:1:1 [0] NCCL INFO NET/Socket : Using [0]ib0:10.0.0.1<0>\n", T_SOCK },
		{ "h:1:1 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>\n"
		  "h:1:1 [0] NCCL INFO NET/Socket : Using [0]ib0:10.0.0.1<0>\n", T_SOCK },
		/* After NCCL tried IB, whatever the version. */
		{ "h:1:1 [0] NCCL INFO NET/IB : No device found.\n"
		  "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n", T_SOCK },
		/* Before the IB device list: NCCL 2.4's init-time line, IB is used. */
		{ "h:1:1 [0] NCCL INFO NET/Socket : Using [0]ib0:10.0.0.1<0>\n"
		  "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n", T_IB },
		/* After it: only NCCL 2.18+ with NCCL_NET=Socket prints that. */
		{ "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n"
		  "h:1:1 [0] NCCL INFO NET/Socket : Using [0]ib0:10.0.0.1<0>\n", T_SOCK },
	};

	(void)state;
	for (size_t i = 0; i < LL_ARRAY_SIZE(cases); i++) {
		_cleanup_(ll_ncclscan_freep) struct ll_ncclscan *s = scan_text(LL_NET_EXPECT_ANY, cases[i].text);
		const struct ll_nccl_verdict *v = ll_ncclscan_result(s);

		fprintf(stderr, "  case %zu\n", i);
		assert_string_equal(ll_nccl_transport_name(v->transport), ll_nccl_transport_name(cases[i].transport));
		assert_int_equal(v->hosts_unknown, cases[i].transport == T_UNK ? 1 : 0);
	}
}

static void test_gdr_and_channels(void **state)
{
	_cleanup_(ll_ncclscan_freep) struct ll_ncclscan *a = NULL, *b = NULL, *c = NULL, *d = NULL;
	const struct ll_nccl_verdict *v;

	(void)state;
	/* Channels without /GDRDMA: off. */
	a = scan_text(LL_NET_EXPECT_ANY, "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0\n");
	v = ll_ncclscan_result(a);
	assert_int_equal(v->transport, T_IB);
	assert_int_equal(v->gdr, 0);
	/* The explicit message of older NCCL: off. */
	b = scan_text(LL_NET_EXPECT_ANY,
		      "h:1:1 [0] NCCL INFO Using network IB\n"
		      "h:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)\n");
	v = ll_ncclscan_result(b);
	assert_int_equal(v->gdr, 0);
	/* An AWS-style plugin: the plugin is the transport, named with its blank. */
	c = scan_text(LL_NET_EXPECT_IB,
		      "h:1:1 [0] NCCL INFO Using network AWS Libfabric\n"
		      "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [receive] via NET/AWS Libfabric/0/GDRDMA\n"
		      "h:1:2 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [send] via NET/AWS Libfabric/0\n");
	v = ll_ncclscan_result(c);
	assert_int_equal(v->transport, T_PLUG);
	assert_string_equal(v->plugin, "AWS Libfabric");
	assert_int_equal(v->gdr, 1);
	assert_false(v->fallback); /* a plugin is no socket fallback even when IB was expected */
	/* Mixed hosts: the summary takes the weakest transport, GDR off if any host is off. */
	d = scan_text(LL_NET_EXPECT_ANY,
		      "a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n"
		      "b:2:2 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [send] via NET/Socket/0\n");
	v = ll_ncclscan_result(d);
	assert_int_equal(v->transport, T_SOCK);
	assert_int_equal(v->gdr, 0);
	assert_int_equal(host_named(v, "a")->gdr, 1);
}

static void test_fallback_rules(void **state)
{
	_cleanup_(ll_ncclscan_freep) struct ll_ncclscan *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL,
							*f = NULL;
	const struct ll_nccl_verdict *v;
	static const char ib_disabled[] =
		"h:1:1 [0] NCCL INFO P2P plugin IBext_v8\n"
		"h:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
		"h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:172.17.0.2<0>\n"
		"h:1:1 [0] NCCL INFO Using network Socket\n";

	(void)state;
	/* IB disabled while an IB plugin is loaded. */
	a = scan_text(LL_NET_EXPECT_ANY, ib_disabled);
	v = ll_ncclscan_result(a);
	assert_true(v->fallback);
	assert_string_equal(v->fallback_reason, "NCCL_IB_DISABLE=1 although an RDMA stack is present");
	/* ... but expecting sockets makes it fine. */
	b = scan_text(LL_NET_EXPECT_SOCKET, ib_disabled);
	v = ll_ncclscan_result(b);
	assert_false(v->fallback);
	assert_false(v->error);
	/* IB disabled with no RDMA anywhere in sight: the user chose sockets. */
	c = scan_text(LL_NET_EXPECT_ANY, "h:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
					 "h:1:1 [0] NCCL INFO Using network Socket\n");
	v = ll_ncclscan_result(c);
	assert_false(v->fallback);
	/* Devices listed by one process, sockets used by another on the same host. */
	d = scan_text(LL_NET_EXPECT_ANY,
		      "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>\n"
		      "h:2:2 [1] NCCL INFO Channel 00 : 1[1] -> 2[0] [send] via NET/Socket/0\n");
	v = ll_ncclscan_result(d);
	assert_true(v->fallback);
	assert_string_equal(v->fallback_reason, "RDMA devices were listed but sockets carry the traffic");
	assert_true(host_named(v, "h")->ranks[1]->fallback);
	assert_false(host_named(v, "h")->ranks[0]->fallback);
	/* Expecting IB: sockets with no other sign are a fallback. */
	e = scan_text(LL_NET_EXPECT_IB, "h:1:1 [0] NCCL INFO Using network Socket\n");
	v = ll_ncclscan_result(e);
	assert_true(v->fallback);
	assert_string_equal(v->fallback_reason, "InfiniBand was expected");
	/* No network at all: NCCL did not fall back, it failed (an error, not a fallback). */
	f = scan_text(LL_NET_EXPECT_ANY, "h:1:1 [0] NCCL INFO NET/IB : No device found.\n"
					 "h:1:1 [0] misc/socket.cc:1 NCCL WARN NET/Socket : no interface found\n");
	v = ll_ncclscan_result(f);
	assert_int_equal(v->transport, T_NONE);
	assert_false(v->fallback);
	assert_true(v->error);
}

static void test_wrapped_and_interleaved(void **state)
{
	_cleanup_(ll_ncclscan_freep) struct ll_ncclscan *a = NULL, *b = NULL;
	const struct ll_nccl_verdict *v;
	const struct ll_nccl_rank *r;

	(void)state;
	/* A device list wrapped by a log collector at a fixed width. */
	a = scan_text(LL_NET_EXPECT_ANY,
		      "n1:10:10 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB\n"
		      "  [3]mlx5_3:1/IB [4]mlx5_4:1/IB\n"
		      "[5]mlx5_5:1/IB [6]mlx5_6:1/IB [7]mlx5_7:1/IB [RO]; OOB ib0:10.0.0.1<0>\n"
		      "[8]not_a_device:1/IB\n"
		      "[1,3]<stdout>:n3:30:30 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE\n"
		      "[1,3]<stdout>:[1]mlx5_1:1/RoCE ; OOB eth0:10.0.0.3<0>\n"
		      "2024-05-01T10:00:00Z n4:40:40 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n"
		      "2024-05-01T10:00:00Z [1]mlx5_1:1/IB ; OOB ib0:10.0.0.4<0>\n");
	v = ll_ncclscan_result(a);
	r = v->hosts[0].ranks[0];
	assert_int_equal(host_named(v, "n3")->ranks[0]->n_devices, 2);
	assert_int_equal(host_named(v, "n3")->transport, T_ROCE);
	assert_int_equal(host_named(v, "n4")->ranks[0]->n_devices, 2);
	assert_string_equal(host_named(v, "n4")->ranks[0]->devices[1].name, "mlx5_1");
	assert_int_equal(r->n_devices, 8);
	assert_string_equal(r->devices[7].name, "mlx5_7");
	assert_true(r->relaxed_ordering);
	{
		_cleanup_free_ char *line = summary(&v->hosts[0]);
		assert_string_equal(line,
				    "NCCL on n1: InfiniBand over mlx5_0..mlx5_7 [relaxed ordering], GPUDirect RDMA unknown");
	}
	/* Records of several processes run together on one line (unbuffered stdout
	 * through a launcher). */
	b = scan_text(LL_NET_EXPECT_ANY,
		      "[1,0]<stdout>:n1:1:1 [0] NCCL INFO Using network IB[1,1]<stdout>:n2:2:2 [1] NCCL INFO Using "
		      "network Socket [default3]:n3:3:3 [3] NCCL INFO Using network AWS Libfabric[7] n4:4:4 [0] NCCL "
		      "INFO Using network gIB\n"
		      "n1:1:1 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n");
	v = ll_ncclscan_result(b);
	assert_int_equal(v->n_hosts, 4);
	assert_string_equal(host_named(v, "n3")->ranks[0]->network, "AWS Libfabric");
	assert_string_equal(host_named(v, "n4")->ranks[0]->network, "gIB");
	assert_int_equal(host_named(v, "n4")->ranks[0]->rank, 7);
	assert_int_equal(host_named(v, "n2")->ranks[0]->rank, 1);
	assert_string_equal(host_named(v, "n1")->ranks[0]->network, "IB");
	assert_string_equal(host_named(v, "n2")->ranks[0]->network, "Socket");
	assert_string_equal(host_named(v, "n1")->ranks[0]->version, "2.18.1+cuda12.1");
	assert_string_equal(v->version, "2.18.1+cuda12.1");
}

static void test_feed_in_pieces(void **state)
{
	static const char text[] =
		"n1:10:11 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
		"n1:10:11 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE ; OOB eth0:10.0.0.1<0>\n"
		"n1:10:11 [0] NCCL INFO Using network IB\n"
		"n1:10:12 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/1/GDRDMA\n"
		"n1:10:12 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 16 cudaDev 0 busId 1000 - Init COMPLETE\n"
		"\n"
		"n1:10:13 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with status=12";
	const struct ll_nccl_verdict *v;
	struct ll_ncclscan *s = ll_ncclscan_new(LL_NET_EXPECT_ROCE);
	struct ll_ncclscan_stream *st = ll_ncclscan_stream_new(s, "pieces.log");
	const struct ll_nccl_rank *r;

	(void)state;
	for (size_t i = 0; i < sizeof(text) - 1; i++)
		ll_ncclscan_feed(s, st, text + i, 1);
	v = ll_ncclscan_result(s);
	assert_int_equal(v->warnings_total, 0); /* the last line has no newline yet */
	ll_ncclscan_flush(s, st);
	v = ll_ncclscan_result(s);
	assert_int_equal(v->warnings_total, 1);
	assert_int_equal(v->warnings[0].line, 7);
	r = v->hosts[0].ranks[0];
	assert_string_equal(r->bootstrap, "eth0:10.0.0.1<0>");
	assert_int_equal(r->rank, 0);
	assert_int_equal(r->nranks, 16);
	assert_true(r->init_complete);
	assert_true(v->hosts[0].initialized);
	assert_int_equal(v->transport, T_ROCE);
	assert_int_equal(v->gdr, 1);
	assert_false(v->fallback);
	assert_int_equal(v->lines, 7);
	ll_ncclscan_free(s);
}

static void test_long_line_and_warning_cap(void **state)
{
	struct ll_ncclscan *s = ll_ncclscan_new(LL_NET_EXPECT_ANY);
	struct ll_ncclscan_stream *st = ll_ncclscan_stream_new(s, "big.log");
	const struct ll_nccl_verdict *v;
	size_t big = 200000;
	char *junk = ll_malloc(big);
	static const char warn[] = "h:1:1 [0] x.cc:1 NCCL WARN socketProgress: Connection closed by remote peer\n";

	(void)state;
	memset(junk, 'x', big);
	ll_ncclscan_feed(s, st, junk, big);
	ll_ncclscan_feed(s, st, "\n", 1);
	for (int i = 0; i < 1500; i++)
		ll_ncclscan_feed(s, st, warn, sizeof(warn) - 1);
	ll_ncclscan_flush(s, st);
	v = ll_ncclscan_result(s);
	assert_int_equal(v->n_warnings, LL_NCCL_MAX_WARNINGS);
	assert_int_equal(v->warnings_total, 1500);
	assert_int_equal(v->warnings_by_class[LL_NCCL_WARN_SOCKET], 1500);
	assert_int_equal(v->hosts[0].ranks[0]->n_warnings, 1500);
	free(junk);
	ll_ncclscan_free(s);
}

static void append(const char *path, const char *text);

static const char socket_warn[] = "h:1:1 [0] x.cc:1 NCCL WARN socketProgress: Connection closed by remote peer\n";

/* A line longer than the 8 MiB mapping window (and the 64 KiB partial-line buffer)
 * is still one line: the warning after it is reported on line 3, not 4 or 170. */
static void test_long_line_numbers(void **state)
{
	char dir[] = "/tmp/ll-scan-long-XXXXXX";
	_cleanup_free_ char *path = NULL;
	size_t big = (10u << 20) + 12345;
	char *junk = ll_malloc(big);
	const struct ll_nccl_verdict *v;
	struct ll_ncclscan *s;
	struct ll_error err = { 0 };
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	path = ll_asprintf("%s/long.log", dir);
	memset(junk, 'x', big);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("first line\n", f);
	fwrite(junk, 1, big, f);
	fputc('\n', f);
	fputs(socket_warn, f);
	fclose(f);

	/* Through the file reader (mapped windows) ... */
	s = ll_ncclscan_new(LL_NET_EXPECT_ANY);
	assert_int_equal(ll_ncclscan_file(s, path, &err), 0);
	v = ll_ncclscan_result(s);
	assert_int_equal(v->lines, 3);
	assert_int_equal(v->n_warnings, 1);
	assert_int_equal(v->warnings[0].line, 3);
	ll_ncclscan_free(s);

	/* ... and fed in pieces that split the long line anywhere. */
	s = ll_ncclscan_new(LL_NET_EXPECT_ANY);
	{
		struct ll_ncclscan_stream *st = ll_ncclscan_stream_new(s, "mem.log");

		ll_ncclscan_feed(s, st, "first line\n", 11);
		for (size_t off = 0; off < big; off += 100000)
			ll_ncclscan_feed(s, st, junk + off, big - off < 100000 ? big - off : 100000);
		ll_ncclscan_feed(s, st, "\n", 1);
		ll_ncclscan_feed(s, st, junk, 70000); /* a long last line, ended by the flush */
		ll_ncclscan_feed(s, st, "\n", 1);
		ll_ncclscan_feed(s, st, socket_warn, sizeof(socket_warn) - 1);
		ll_ncclscan_flush(s, st);
	}
	v = ll_ncclscan_result(s);
	assert_int_equal(v->lines, 4);
	assert_int_equal(v->warnings[0].line, 4);
	ll_ncclscan_free(s);

	unlink(path);
	rmdir(dir);
	free(junk);
}

/* DIR/NAME in a buffer that the next call reuses. */
static const char *in_dir(const char *dir, const char *name)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

/* A directory with a link loop, a dangling link, a link to a directory and a FIFO
 * beside a real log: the log is read, each of the others is skipped with why, and
 * nothing blocks or fails the walk. */
static void test_dir_links_and_fifos(void **state)
{
	/* What the walk skips, in name order, and why. */
	static const char *const skipped[] = {
		"a-loop: a symbolic link to a directory, not followed",
		"b-dangling: a dangling symbolic link",
		"c-fifo: not a regular file (a FIFO, socket or device)",
		"sub/up: a symbolic link to a directory, not followed",
	};
	const char *names[] = { "sub/up", "sub", "a-loop", "b-dangling", "c-fifo", "d.log", "e-link.log" };
	char dir[] = "/tmp/ll-scan-dir-XXXXXX";
	struct ll_error err = { 0 };
	const struct ll_nccl_verdict *v;
	struct ll_ncclscan *s;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(symlink(".", in_dir(dir, "a-loop")), 0);
	assert_int_equal(symlink("/nonexistent/nccl.log", in_dir(dir, "b-dangling")), 0);
	assert_int_equal(mkfifo(in_dir(dir, "c-fifo"), 0600), 0);
	append(in_dir(dir, "d.log"), socket_warn);
	assert_int_equal(symlink("d.log", in_dir(dir, "e-link.log")), 0); /* a link to a file is followed */
	assert_int_equal(mkdir(in_dir(dir, "sub"), 0700), 0);
	assert_int_equal(symlink("..", in_dir(dir, "sub/up")), 0);

	s = ll_ncclscan_new(LL_NET_EXPECT_ANY);
	assert_int_equal(ll_ncclscan_path(s, dir, &err), 0);
	assert_null(err.message);
	v = ll_ncclscan_result(s);
	assert_int_equal(v->files, 2);
	assert_int_equal(v->warnings_total, 2);
	assert_int_equal(v->skipped_total, 4);
	assert_int_equal(v->n_skipped, 4);
	for (size_t i = 0; i < 4; i++)
		assert_string_equal(v->skipped[i], in_dir(dir, skipped[i]));
	ll_ncclscan_free(s);

	/* A FIFO named on its own is a pipe to read: with no writer it is empty at once. */
	s = ll_ncclscan_new(LL_NET_EXPECT_ANY);
	assert_int_equal(ll_ncclscan_path(s, in_dir(dir, "c-fifo"), &err), 0);
	assert_int_equal(ll_ncclscan_result(s)->files, 1);
	ll_ncclscan_free(s);
	/* A device is not: /dev/zero would be read forever. */
	s = ll_ncclscan_new(LL_NET_EXPECT_ANY);
	assert_int_equal(ll_ncclscan_path(s, "/dev/zero", &err), -EINVAL);
	assert_string_equal(err.message, "cannot read '/dev/zero': not a regular file or a pipe (a socket or device)");
	ll_error_clear(&err);
	ll_ncclscan_free(s);

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_int_equal(remove(in_dir(dir, names[i])), 0);
	rmdir(dir);
}

static void test_names(void **state)
{
	enum ll_net_expect e;
	enum ll_fallback_policy p;

	(void)state;
	assert_int_equal(ll_net_expect_parse("roce", &e), 0);
	assert_int_equal(e, LL_NET_EXPECT_ROCE);
	assert_int_equal(ll_net_expect_parse("IB", &e), -EINVAL);
	assert_int_equal(ll_fallback_policy_parse("stop", &p), 0);
	assert_int_equal(p, LL_FALLBACK_STOP);
	assert_int_equal(ll_fallback_policy_parse("kill", &p), -EINVAL);
	assert_string_equal(ll_nccl_transport_name(LL_NCCL_TRANSPORT_SOCKET), "Socket");
	assert_string_equal(ll_nccl_transport_describe(LL_NCCL_TRANSPORT_PLUGIN, "gIB"), "gIB");
}

/* ---- the live watcher ------------------------------------------------------------ */

/* The watcher expects what the plan decided once (NCCL_NET and NCCL_IB_DISABLE are in
 * LLMLAUNCH_NET already: unit/test-plan). */
static void test_expect_from_plan(void **state)
{
	(void)state;
	assert_int_equal(ll_ncclwatch_expect("ib"), LL_NET_EXPECT_IB);
	assert_int_equal(ll_ncclwatch_expect("roce"), LL_NET_EXPECT_ROCE);
	assert_int_equal(ll_ncclwatch_expect("socket"), LL_NET_EXPECT_SOCKET);
	assert_int_equal(ll_ncclwatch_expect("rdma"), LL_NET_EXPECT_ANY);
	assert_int_equal(ll_ncclwatch_expect(NULL), LL_NET_EXPECT_ANY);
}

static void append(const char *path, const char *text)
{
	FILE *f = fopen(path, "a");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A watcher on a fresh directory with one NCCL_DEBUG_FILE name in it. */
struct watch_case {
	char dir[32];
	char *file;
	struct ll_ncclwatch *w;
	FILE *out;
};

static void watch_start(struct watch_case *c, const char *name, enum ll_net_expect expect, enum ll_fallback_policy p)
{
	strcpy(c->dir, "/tmp/ll-ncclwatch-XXXXXX");
	assert_non_null(mkdtemp(c->dir));
	c->file = ll_asprintf("%s/%s", c->dir, name);
	c->w = NULL;
	assert_int_equal(ll_ncclwatch_new(c->dir, "nccl.", expect, p, &c->w, NULL), 0);
	c->out = fopen("/dev/null", "w");
	assert_non_null(c->out);
}

static void watch_end(struct watch_case *c)
{
	ll_ncclwatch_free(c->w);
	fclose(c->out);
	unlink(c->file);
	free(c->file);
	rmdir(c->dir);
}

static void test_watch_poll(void **state)
{
	char tmpl[] = "/tmp/ll-ncclwatch-XXXXXX";
	char *dir = mkdtemp(tmpl);
	_cleanup_free_ char *f1 = NULL, *other = NULL;
	struct ll_ncclwatch *w = NULL;
	char *out = NULL;
	size_t n_out = 0;
	FILE *o = open_memstream(&out, &n_out);

	(void)state;
	assert_non_null(dir);
	f1 = ll_asprintf("%s/nccl.n1.100", dir);
	other = ll_asprintf("%s/train.log", dir);
	assert_int_equal(ll_ncclwatch_new(dir, "nccl.", LL_NET_EXPECT_IB, LL_FALLBACK_STOP, &w, NULL), 0);
	assert_int_equal(ll_ncclwatch_poll(w, o), 0);
	append(other, "n9:1:1 [0] NCCL INFO Using network Socket\n"); /* not an NCCL_DEBUG_FILE name */
	append(f1, "n1:100:100 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB ; OOB ib0:1<0>\n"
		   "n1:100:100 [0] NCCL INFO Using net");
	assert_int_equal(ll_ncclwatch_poll(w, o), 0);
	fflush(o);
	assert_int_equal(n_out, 0); /* not initialised yet: nothing to say */
	append(f1, "work IB\n"
		   "n1:100:101 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n"
		   "n1:100:101 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 16 cudaDev 0 busId 1000 - Init COMPLETE\n"
		   "\n"
		   "n1:100:102 [0] net_ib.cc:9 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with status=12\n");
	assert_int_equal(ll_ncclwatch_poll(w, o), 0);
	fflush(o);
	{
		_cleanup_free_ char *want = ll_asprintf(
			"NCCL on n1: InfiniBand over mlx5_0..mlx5_2, GPUDirect RDMA on\n"
			"NCCL warning on n1 (%s:6, ib-completion): NET/IB : Got completion from peer 10.0.0.2<1> "
			"with status=12\n", f1);
		assert_string_equal(out, want);
	}
	/* Nothing new: nothing printed again. */
	assert_int_equal(ll_ncclwatch_poll(w, o), 0);
	fflush(o);
	assert_int_equal(strlen(out), n_out);
	assert_int_equal(ll_ncclwatch_verdict(w)->n_hosts, 1);
	ll_ncclwatch_free(w);
	fclose(o);
	free(out);
	unlink(f1);
	unlink(other);
	rmdir(dir);
}

/* A node whose init failed is said at once, in the words of `logs`, not when the job
 * ends. */
static void test_watch_init_failed(void **state)
{
	struct watch_case c;
	char *out = NULL;
	size_t n_out = 0;

	(void)state;
	watch_start(&c, "nccl.n3.8", LL_NET_EXPECT_ANY, LL_FALLBACK_WARN);
	fclose(c.out);
	c.out = open_memstream(&out, &n_out);
	append(c.file, "\n"
		       "n3:8:9 [0] misc/ibvwrap.cc:206 NCCL WARN Call to ibv_create_qp failed with error Cannot allocate "
		       "memory errno 12\n"
		       "n3:8:9 [0] NCCL INFO transport/net_ib.cc:1010 -> 2\n"
		       "n3:8:9 [0] NCCL INFO init.cc:1263 -> 2\n");
	assert_int_equal(ll_ncclwatch_poll(c.w, c.out), 0);
	fflush(c.out);
	assert_non_null(out);
	assert_non_null(strstr(out, "NCCL init failed on n3: Call to ibv_create_qp failed with error Cannot allocate "
				    "memory errno 12\n"));
	watch_end(&c);
	free(out);
}

static void test_watch_stop(void **state)
{
	struct watch_case c;
	_cleanup_free_ char *want = NULL;

	(void)state;
	watch_start(&c, "nccl.n2.7", LL_NET_EXPECT_ANY, LL_FALLBACK_STOP);
	append(c.file, "n2:7:7 [0] NCCL INFO NET/IB : No device found.\n");
	assert_int_equal(ll_ncclwatch_poll(c.w, c.out), 1);
	want = ll_asprintf("NCCL on n2 is not using RDMA: NET/IB found no usable device (shown by %s:1: NET/IB : No "
			   "device found.)", c.file);
	assert_string_equal(ll_ncclwatch_stop_reason(c.w), want);
	watch_end(&c);
}

/* A healthy NCCL 2.4 job prints NET/Socket : Using first, at init, then uses IB: the
 * watcher reads it a line at a time, expecting IB and told to stop, and never stops. */
static void test_watch_init_socket_line_never_stops(void **state)
{
	const char *fx = getenv("LL_FIXTURES");
	_cleanup_free_ char *src = NULL;
	struct watch_case c;
	char *out = NULL, line[4096];
	size_t n_out = 0;
	FILE *o = open_memstream(&out, &n_out), *in;
	const struct ll_nccl_verdict *v;
	int lines = 0;

	(void)state;
	assert_non_null(fx);
	src = ll_asprintf("%s/nccl/grammar/c21-nccl2.4.2-healthy-ib-init-socket-line.log", fx);
	in = fopen(src, "r");
	assert_non_null(in);
	watch_start(&c, "nccl.gpu21.2100", LL_NET_EXPECT_IB, LL_FALLBACK_STOP);
	while (fgets(line, sizeof(line), in)) {
		append(c.file, line);
		assert_int_equal(ll_ncclwatch_poll(c.w, o), 0);
		assert_null(ll_ncclwatch_stop_reason(c.w));
		lines++;
	}
	fclose(in);
	assert_true(lines >= 5);
	ll_ncclwatch_finish(c.w, o);
	fflush(o);
	v = ll_ncclwatch_verdict(c.w);
	assert_int_equal(v->transport, T_IB);
	assert_false(v->fallback);
	assert_non_null(strstr(out, "NCCL on gpu21: InfiniBand over mlx5_0,mlx5_1, GPUDirect RDMA on"));
	fclose(o);
	free(out);
	watch_end(&c);
}

/* A proven fallback stops at once and names the host and the lines. */
static void test_watch_stop_names_lines(void **state)
{
	struct watch_case c;
	_cleanup_free_ char *want = NULL;

	(void)state;
	watch_start(&c, "nccl.node7.4410", LL_NET_EXPECT_ANY, LL_FALLBACK_STOP);
	append(c.file, "node7:4410:4410 [0] NCCL INFO Bootstrap : Using ib0:10.1.0.7<0>\n"
		       "node7:4410:4470 [0] NCCL INFO NET/Socket : Using [0]ib0:10.1.0.7<0> [1]ib1:10.1.1.7<0>\n");
	/* Sockets, but nothing says RDMA was wanted yet. */
	assert_int_equal(ll_ncclwatch_poll(c.w, c.out), 0);
	append(c.file, "node7:4410:4470 [0] NCCL INFO Failed to open libibverbs.so[.1]\n");
	assert_int_equal(ll_ncclwatch_poll(c.w, c.out), 1);
	want = ll_asprintf("NCCL on node7 is not using RDMA: libibverbs is missing (shown by %s:3: Failed to open "
			   "libibverbs.so[.1]); sockets: %s:2: NET/Socket : Using [0]ib0:10.1.0.7<0> [1]ib1:10.1.1.7<0>",
			   c.file, c.file);
	assert_string_equal(ll_ncclwatch_stop_reason(c.w), want);
	/* Polled again, it stays stopped with the same reason. */
	assert_int_equal(ll_ncclwatch_poll(c.w, c.out), 1);
	assert_string_equal(ll_ncclwatch_stop_reason(c.w), want);
	watch_end(&c);
}

/* Communicators: one process with a TP communicator inside the node (P2P, NVLS) and a DP
 * one over IB; lines are attributed by the thread that printed them. */
static void test_communicators(void **state)
{
	const char *fx = getenv("LL_FIXTURES");
	_cleanup_free_ char *path = NULL;
	_cleanup_(ll_ncclscan_freep) struct ll_ncclscan *s = ll_ncclscan_new(LL_NET_EXPECT_ANY);
	const struct ll_nccl_verdict *v;
	const struct ll_nccl_rank *r;

	(void)state;
	assert_non_null(fx);
	path = ll_asprintf("%s/nccl/grammar/c11-nccl2.21-tp-nvls-and-dp-ib-communicators.log", fx);
	assert_int_equal(ll_ncclscan_file(s, path, NULL), 0);
	v = ll_ncclscan_result(s);
	r = host_named(v, "hgx1")->ranks[0];
	assert_int_equal(r->n_comms, 2);
	assert_string_equal(r->comms[0].id, "0x1111aaaa2222bbbb");
	assert_string_equal(r->comms[0].ptr, "0x55a0c0000100");
	assert_int_equal(r->comms[0].nnodes, 1);
	assert_int_equal(r->comms[0].paths, (1u << LL_NCCL_PATH_P2P) | (1u << LL_NCCL_PATH_NVLS));
	assert_int_equal(r->comms[0].nvls_channels, 18); /* NVLS comm, Connected NVLS tree, 16 nvls channels */
	assert_string_equal(r->comms[1].id, "0x3333cccc4444dddd");
	assert_int_equal(r->comms[1].paths, 1u << LL_NCCL_PATH_NET);
	assert_int_equal(r->comms[1].transport, T_IB);
	assert_int_equal(r->comms[1].gdr, 1);
	assert_true(r->comms[1].init_complete);
	assert_int_equal(v->n_comms, 2);
	assert_int_equal(v->comms[1].n_members, 2);
	assert_int_equal(v->comms[1].n_hosts, 2);
	assert_int_equal(v->comms[1].nranks, 2);
	{
		struct ll_buf b;
		ll_buf_init(&b);
		ll_nccl_comm_summary(&v->comms[0], &b);
		assert_string_equal(b.s, "communicator 0x1111aaaa2222bbbb (8 ranks, 1 seen on 1 host): P2P, NVLS");
		ll_buf_reset(&b);
		ll_nccl_comm_summary(&v->comms[1], &b);
		assert_string_equal(b.s, "communicator 0x3333cccc4444dddd (2 ranks, 2 seen on 2 hosts): InfiniBand with "
					 "GPUDirect RDMA on");
		ll_buf_release(&b);
	}
}

/* ---- failed init, aws-ofi-nccl, WARN prefixes ---------------------------------- */

/* G42, G43: an error that returns through init.cc before any Init COMPLETE is its
 * host's verdict, with its first WARN (or where it began) as the cause; one after Init
 * COMPLETE (a teardown), or through group.cc's preconnect only, is none. */
static void test_init_failed(void **state)
{
	_cleanup_(ll_ncclscan_freep) struct ll_ncclscan *s1 = NULL, *s2 = NULL, *s3 = NULL, *s4 = NULL;
	_cleanup_free_ char *sum = NULL;
	const struct ll_nccl_verdict *v;
	const struct ll_nccl_host *h;

	(void)state;
	s1 = scan_text(LL_NET_EXPECT_ANY,
		       "n1:10:10 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:198.51.100.1<0>\n"
		       "n1:10:10 [0] NCCL INFO Using network IB\n"
		       "\n"
		       "n1:10:20 [0] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error No such device\n"
		       "n1:10:20 [0] NCCL INFO transport/net_ib.cc:395 -> 2\n"
		       "n1:10:20 [0] NCCL INFO init.cc:300 -> 2\n"
		       "n1:10:20 [0] NCCL INFO group.cc:73 -> 2 [Async thread]\n");
	v = ll_ncclscan_result(s1);
	h = host_named(v, "n1");
	assert_true(h->init_failed);
	assert_false(h->unknown);
	assert_int_equal(v->hosts_init_failed, 1);
	assert_true(v->error);
	assert_string_equal(h->init_failure, "Call to ibv_modify_qp failed with error No such device");
	assert_int_equal(h->init_cause->line, 4);
	assert_int_equal(h->init_trace->line, 6);
	assert_string_equal(h->init_trace->text, "init.cc:300 -> 2");
	assert_int_equal(h->transport, T_ROCE); /* kept, as evidence */
	sum = summary(h);
	assert_string_equal(sum, "NCCL init failed on n1: Call to ibv_modify_qp failed with error No such device");

	/* No WARN: where the error began, in NCCL's words for its result. 2.30.7 names the
	 * function in each trace line. */
	s2 = scan_text(LL_NET_EXPECT_ANY,
		       "n2:11:11 [3] NCCL INFO transport/net_ib.cc:282 (ncclIbGetGidIndex) -> 2\n"
		       "n2:11:11 [3] NCCL INFO init.cc:1565 (initTransportsRank) -> 2\n");
	v = ll_ncclscan_result(s2);
	h = host_named(v, "n2");
	assert_true(h->init_failed);
	assert_string_equal(h->init_failure, "NCCL error 2 (unhandled system error) at transport/net_ib.cc:282");
	assert_int_equal(h->init_cause->line, 1);

	/* After Init COMPLETE init.cc tears communicators down: no failed init. A P2P
	 * preconnect that fails returns through group.cc, not init.cc: none either. */
	s3 = scan_text(LL_NET_EXPECT_ANY,
		       "n3:12:12 [0] NCCL INFO comm 0x5501 rank 0 nranks 2 cudaDev 0 busId 1b000 - Init COMPLETE\n"
		       "\n"
		       "n3:12:12 [0] include/alloc.h:178 NCCL WARN Cuda failure 'driver shutting down'\n"
		       "n3:12:12 [0] NCCL INFO init.cc:1402 -> 1\n"
		       "n4:13:40 [5] NCCL INFO transport/net.cc:223 -> 2\n"
		       "n4:13:40 [5] NCCL INFO group.cc:137 -> 2 [Async thread]\n");
	v = ll_ncclscan_result(s3);
	assert_false(host_named(v, "n3")->init_failed);
	assert_false(host_named(v, "n4")->init_failed);
	assert_int_equal(v->hosts_init_failed, 0);

	/* A trace through a file that only ends in "init.cc" is not init.cc. */
	s4 = scan_text(LL_NET_EXPECT_ANY, "n5:14:14 [0] NCCL INFO plugin_init.cc:40 -> 2\n");
	v = ll_ncclscan_result(s4);
	assert_false(host_named(v, "n5")->init_failed);
}

/* G6, G25, G26: aws-ofi-nccl's own lines name it, its provider line makes it the
 * network (named as NCCL names it, by version), its GDR line turns GDR off. */
static void test_ofi(void **state)
{
	_cleanup_(ll_ncclscan_freep) struct ll_ncclscan *s = NULL;
	_cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;
	const struct ll_nccl_verdict *v;
	const struct ll_nccl_host *h;

	(void)state;
	s = scan_text(LL_NET_EXPECT_ANY,
		      "e1:1:2 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.11.0-aws\n"
		      "e1:1:2 [0] NCCL INFO NET/OFI Could not disable CUDA API usage for HMEM, disabling GDR\n"
		      "e1:1:2 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)\n"
		      "e2:1:2 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.13.0-aws\n"
		      "e2:1:2 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 16 nics)\n"
		      "e3:1:2 [0] NCCL INFO NET/OFI No NIC info for dev 0\n"
		      "e4:1:2 [0] register_mr_buffers:465 NCCL WARN NET/OFI Unable to register memory\n"
		      "e5:1:2 [0] NCCL INFO NET/OFI Selected Provider is tcp\n");
	v = ll_ncclscan_result(s);
	h = host_named(v, "e1");
	assert_int_equal(h->transport, T_PLUG);
	assert_string_equal(h->plugin, "AWS Libfabric"); /* 1.12 and older */
	assert_int_equal(h->gdr, 0);
	assert_string_equal(h->ranks[0]->ofi_version, "1.11.0-aws");
	assert_string_equal(h->ranks[0]->ofi_provider, "efa");
	assert_int_equal(h->ranks[0]->ofi_nics, 4);
	a = summary(h);
	assert_string_equal(a, "NCCL on e1: AWS Libfabric (aws-ofi-nccl 1.11.0-aws, provider efa), GPUDirect RDMA off");
	h = host_named(v, "e2");
	assert_string_equal(h->plugin, "Libfabric"); /* 1.13.0 renamed it */
	assert_int_equal(h->ranks[0]->ofi_nics, 16);
	assert_int_equal(h->gdr, -1);
	h = host_named(v, "e3");
	assert_true(h->unknown);
	assert_true(h->ranks[0]->ofi);
	b = summary(h);
	assert_string_equal(b, "NCCL on e3: unknown transport (aws-ofi-nccl loaded), GPUDirect RDMA unknown");
	assert_true(host_named(v, "e4")->ranks[0]->ofi); /* its WARN */
	h = host_named(v, "e5");
	assert_string_equal(h->plugin, "aws-ofi-nccl"); /* no version printed */
	assert_int_equal(h->ranks[0]->ofi_nics, -1);
	c = summary(h);
	assert_string_equal(c, "NCCL on e5: aws-ofi-nccl (provider tcp), GPUDirect RDMA unknown");
}

/* A WARN's prefix: NCCL 2.30.7's "file.cc:NN (func)" and a C++ plugin's signature with
 * blanks still name the process. */
static void test_warn_prefix_func(void **state)
{
	_cleanup_(ll_ncclscan_freep) struct ll_ncclscan *s = NULL;
	const struct ll_nccl_verdict *v;

	(void)state;
	s = scan_text(LL_NET_EXPECT_ANY,
		      "w1:21:22 [1] misc/ibvwrap.cc:376 (wrap_ibv_modify_qp) NCCL WARN Call to ibv_modify_qp failed\n"
		      "w2:31:32 [2] int nccl_net_ofi_rdma_domain_t::reg_mr(void*, size_t):812 NCCL WARN NET/OFI Unable\n");
	v = ll_ncclscan_result(s);
	assert_int_equal(v->n_warnings, 2);
	assert_string_equal(v->warnings[0].host, "w1");
	assert_int_equal(v->warnings[0].pid, 21);
	assert_string_equal(v->warnings[1].host, "w2");
	assert_int_equal(v->warnings[1].pid, 31);
	assert_int_equal(host_named(v, "w1")->ranks[0]->cuda_dev, 1);
	assert_true(host_named(v, "w2")->ranks[0]->ofi);
}

/* ---- one thread or two: the same verdict ------------------------------------------- */

static void dump_proof(struct ll_buf *b, const char *what, const struct ll_nccl_proof *p)
{
	ll_buf_addf(b, " %s=", what);
	ll_nccl_proof_describe(p, b);
}

/* Everything a verdict holds, as text. */
static void dump(const struct ll_nccl_verdict *v, struct ll_buf *b)
{
	ll_buf_addf(b, "t=%d p=%s g=%d fb=%d %s v=%s hosts=%zu unk=%zu init=%zu files=%lu lines=%lu w=%lu/%zu err=%d\n",
		    v->transport, v->plugin ? v->plugin : "-", v->gdr, v->fallback,
		    v->fallback_reason ? v->fallback_reason : "-", v->version ? v->version : "-", v->n_hosts,
		    v->hosts_unknown, v->hosts_init_failed, v->files, v->lines, v->warnings_total, v->n_warnings,
		    v->error);
	for (int c = 0; c < LL_NCCL_WARN_CLASS_COUNT; c++)
		ll_buf_addf(b, " %lu", v->warnings_by_class[c]);
	for (size_t i = 0; i < v->n_hosts; i++) {
		const struct ll_nccl_host *h = &v->hosts[i];
		ll_buf_add(b, "\nH ");
		ll_nccl_host_summary(h, b);
		dump_proof(b, "fc", h->fallback_cause);
		dump_proof(b, "fv", h->fallback_via);
		dump_proof(b, "ic", h->init_cause);
		dump_proof(b, "it", h->init_trace);
		for (size_t k = 0; k < h->n_ranks; k++) {
			const struct ll_nccl_rank *r = h->ranks[k];
			ll_buf_addf(b, "\n R %ld dev=%d rank=%d/%d %s %s net=%s ch=%s pl=%s nn=%s bs=%s ofi=%s/%s/%d t=%d g=%d "
				       "nc=%lu/%lu/%lu lines=%lu w=%lu ic=%d devs=%zu ifs=%zu comms=%zu",
				    r->pid, r->cuda_dev, r->rank, r->nranks, r->file, r->version ? r->version : "-",
				    r->network ? r->network : "-", r->channel_net ? r->channel_net : "-",
				    r->plugin_loaded ? r->plugin_loaded : "-", r->net_named ? r->net_named : "-",
				    r->bootstrap ? r->bootstrap : "-", r->ofi_version ? r->ofi_version : "-",
				    r->ofi_provider ? r->ofi_provider : "-", r->ofi_nics, r->transport, r->gdr,
				    r->net_channels, r->gdr_channels, r->socket_channels, r->n_lines, r->n_warnings,
				    r->init_complete, r->n_devices, r->n_socket_ifs, r->n_comms);
			for (size_t d = 0; d < r->n_devices; d++)
				ll_buf_addf(b, " %s:%d/%d", r->devices[d].name, r->devices[d].port, r->devices[d].kind);
			for (size_t d = 0; d < r->n_socket_ifs; d++)
				ll_buf_addf(b, " %s", r->socket_ifs[d]);
			for (size_t c = 0; c < r->n_comms; c++)
				ll_buf_addf(b, " [%s %s %d %lu %lu %lu %lu]", r->comms[c].id ? r->comms[c].id : "-",
					    r->comms[c].ptr ? r->comms[c].ptr : "-", r->comms[c].rank,
					    r->comms[c].net_channels, r->comms[c].p2p_channels, r->comms[c].shm_channels,
					    r->comms[c].nvls_channels);
		}
	}
	for (size_t i = 0; i < v->n_comms; i++) {
		ll_buf_add(b, "\nC ");
		ll_nccl_comm_summary(&v->comms[i], b);
	}
	for (size_t i = 0; i < v->n_warnings; i++)
		ll_buf_addf(b, "\nW %s:%lu %d %s %ld %s", v->warnings[i].file, v->warnings[i].line, v->warnings[i].cls,
			    v->warnings[i].host ? v->warnings[i].host : "-", v->warnings[i].pid, v->warnings[i].text);
}

static char *verdict_with(const char *path, unsigned threads, size_t piece)
{
	_cleanup_(ll_ncclscan_freep) struct ll_ncclscan *s = ll_ncclscan_new(LL_NET_EXPECT_ANY);
	struct ll_buf b;

	ll_ncclscan_set_threads(s, threads, 0);
	ll_ncclscan_set_piece_size(s, piece);
	assert_int_equal(ll_ncclscan_path(s, path, NULL), 0);
	ll_buf_init(&b);
	dump(ll_ncclscan_result(s), &b);
	return b.s;
}

/* One thread, and two cutting the file into pieces of `pieces` sizes (0: the default). */
static void same_verdict(const char *path, const size_t *pieces, size_t n_pieces)
{
	_cleanup_free_ char *one = verdict_with(path, 1, 0);

	for (size_t i = 0; i < n_pieces; i++) {
		_cleanup_free_ char *two = verdict_with(path, 2, pieces[i]);
		if (strcmp(one, two) != 0)
			fail_msg("%s: one thread and two (pieces of %zu bytes) differ:\n%s\n----\n%s", path, pieces[i],
				 one, two);
	}
}

/* Every fixture and real log, also cut into pieces of a few lines and of one line or
 * less (so that a piece starts inside a wrapped device list, after a stripped line,
 * inside a long line), and a file of every real log's NCCL lines many times over: the
 * same verdict. */
static void test_threads_same_verdict(void **state)
{
	const char *fx = getenv("LL_FIXTURES"), *real = getenv("LL_REALDATA");
	const char *dirs[] = { "nccl", "nccl/grammar", "nccl/job-ib-gdr", "nccl/torchrun-tee", "nccl/init-failed" };
	char tmpl[] = "/tmp/ll-nccl-threads-XXXXXX";
	const size_t small[] = { 0, 1, 37, 300, 4096 }, large[] = { 0, 65536 };
	int fd;

	(void)state;
	assert_non_null(fx);
	for (size_t d = 0; d < LL_ARRAY_SIZE(dirs); d++) {
		_cleanup_free_ char *dir = ll_asprintf("%s/%s", fx, dirs[d]);
		same_verdict(dir, small, LL_ARRAY_SIZE(small));
	}
	if (!real || access(real, R_OK) != 0)
		return;
	for (int k = 0; k < 2; k++) {
		_cleanup_free_ char *dir = ll_asprintf("%s/%s", real, k ? "nccl_logs_2026" : "nccl_logs");
		struct ll_buf all;
		FILE *f;

		if (access(dir, R_OK) != 0)
			continue;
		same_verdict(dir, small, LL_ARRAY_SIZE(small));
		/* Every file of the directory, one after another, 40 times. */
		ll_buf_init(&all);
		{
			_cleanup_free_ char *cmd = ll_asprintf("cat '%s'/*", dir);
			char chunk[4096];
			size_t got;
			f = popen(cmd, "r");
			assert_non_null(f);
			while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
				ll_buf_addn(&all, chunk, got);
			pclose(f);
		}
		fd = mkstemp(tmpl);
		assert_true(fd >= 0);
		for (int i = 0; i < 40; i++)
			assert_int_equal(write(fd, all.s, all.len), (ssize_t)all.len);
		close(fd);
		same_verdict(tmpl, large, LL_ARRAY_SIZE(large));
		unlink(tmpl);
		strcpy(tmpl, "/tmp/ll-nccl-threads-XXXXXX");
		ll_buf_release(&all);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_hosts),
		cmocka_unit_test(test_prefix_styles),
		cmocka_unit_test(test_warn_prefix_and_classes),
		cmocka_unit_test(test_old_nccl_socket_line_is_not_fallback),
		cmocka_unit_test(test_socket_line_proof),
		cmocka_unit_test(test_gdr_and_channels),
		cmocka_unit_test(test_fallback_rules),
		cmocka_unit_test(test_wrapped_and_interleaved),
		cmocka_unit_test(test_feed_in_pieces),
		cmocka_unit_test(test_long_line_and_warning_cap),
		cmocka_unit_test(test_long_line_numbers),
		cmocka_unit_test(test_dir_links_and_fifos),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_expect_from_plan),
		cmocka_unit_test(test_watch_poll),
		cmocka_unit_test(test_watch_init_failed),
		cmocka_unit_test(test_watch_stop),
		cmocka_unit_test(test_watch_init_socket_line_never_stops),
		cmocka_unit_test(test_watch_stop_names_lines),
		cmocka_unit_test(test_communicators),
		cmocka_unit_test(test_init_failed),
		cmocka_unit_test(test_ofi),
		cmocka_unit_test(test_warn_prefix_func),
		cmocka_unit_test(test_threads_same_verdict),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
