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

struct real_case {
	const char *file;
	int transport;
	const char *plugin;
	int gdr;
	bool fallback;
	bool error;
	size_t hosts;
	/* ib-completion, ib-verbs-call, socket, no-interface, plugin-missing, other */
	unsigned long warn[LL_NCCL_WARN_CLASS_COUNT];
	const char *version;
	const char *first_summary; /* the first host's line */
};

static const struct real_case real_cases[] = {
	{ "ib-09-nccl1357-h100-ib-sharp-ibext.log", T_IB, "IBext", -1, false, false, 2, { 0 }, NULL,
	  "NCCL on qh100-gpu20: InfiniBand (plugin IBext) over mlx5_0,mlx5_1,mlx5_4,mlx5_5 [SHARP, relaxed ordering], "
	  "GPUDirect RDMA unknown" },
	/* 7 IB ports and 2 RoCE ports: not every port is RoCE, so IB. */
	{ "ib-21-nccl707-a100-9xmlx5-ib-and-roce.log", T_IB, NULL, -1, false, false, 1, { 0 }, "2.7.6+cuda11.1",
	  "NCCL on 10-90-43-152: InfiniBand over mlx5_8..mlx5_12,mlx5_14..mlx5_17, GPUDirect RDMA unknown" },
	{ "roce-11-nccltests185-dgxh100-roce.log", T_ROCE, NULL, -1, false, false, 2, { 0 }, "2.19.3+cuda12.3",
	  "NCCL on dgxh100-4: RoCE over mlx5_10,mlx5_11 [relaxed ordering], GPUDirect RDMA unknown" },
	{ "roce-19-nccltests227-l40-irdma-roce-ibext.log", T_ROCE, "IBext_v8", -1, false, false, 2, { 0 },
	  "2.21.5+cuda12.4",
	  "NCCL on ai-worker01: RoCE (plugin IBext_v8) over irdma0,irdma3 [relaxed ordering], GPUDirect RDMA unknown" },
	/* No IB device on AWS: sockets where NET/IB was tried. */
	{ "socket-01-nccl226-aws-no-ib-device-ens3.log", T_SOCK, NULL, 0, true, true, 17, { 0 }, NULL,
	  "NCCL on ip-172-31-12-21: unknown transport, GPUDirect RDMA unknown, FALLBACK: NET/IB found no usable device" },
	/* Socket channels and a socket error; nothing in this excerpt shows RDMA was there. */
	{ "socket-02b-nccl952-socket-channels-socketProgress-warn.log", T_SOCK, NULL, 0, false, true, 1,
	  { 0, 0, 1, 0, 0, 2 }, NULL, "NCCL on <cluster_name>: sockets, GPUDirect RDMA off" },
	{ "socket-03-oneflow9115-openibd-stopped-eno1-veth.log", T_SOCK, NULL, 0, true, true, 1, { 0 }, NULL,
	  "NCCL on oneflow-15: sockets over eno1,veth2ea2288,vethae2223a, GPUDirect RDMA off, FALLBACK: NET/IB found "
	  "no usable device" },
	/* AWS with mpirun prefixes: sockets, and no sign that RDMA was meant to be used. */
	{ "socket-05-horovod3658-mpirun-prefixed-net-socket-channels.log", T_SOCK, NULL, 0, false, false, 2, { 0 },
	  NULL, "NCCL on ip-172-31-0-63: sockets, GPUDirect RDMA off" },
	{ "socket-06-nccl1232-rank-prefixed-net-socket.log", T_SOCK, NULL, 0, false, false, 2, { 0 }, NULL,
	  "NCCL on node0: sockets, GPUDirect RDMA off" },
	/* libibverbs missing; sockets over IPoIB interfaces are still sockets. */
	{ "socket-22-nccltests100-hgxa100-no-libibverbs-socket-over-ipoib.log", T_SOCK, NULL, 0, true, true, 1,
	  { 0, 0, 0, 0, 1, 0 }, NULL,
	  "NCCL on node2: sockets over ibp5s0,ibp70s0,ibp140s0,ibp212s0, GPUDirect RDMA off, FALLBACK: libibverbs or "
	  "the RDMA net plugin is missing" },
	{ "socket-24-vlmevalkit975-ib-disabled-env-docker-eth0.log", T_SOCK, NULL, 0, true, true, 1, { 0 }, NULL,
	  "NCCL on 12f0e56ac84d: sockets over eth0, GPUDirect RDMA off, FALLBACK: NET/IB found no usable device" },
	/* NCCL_NET=Socket by choice: the log shows no RDMA attempt, so no fallback. */
	{ "socket-26-nccl676-dgxa100-forced-NCCL_NET-Socket.log", T_SOCK, NULL, 0, false, false, 2, { 0 },
	  "2.11.4+cuda11.4", "NCCL on gpu01: sockets over enp225s0f1, GPUDirect RDMA off" },
	/* NCCL 2.4: `NET/Socket : Using` plus rings via NET/Socket and libibverbs missing. */
	{ "socket-27-pytorch22531-nccl2.4.2-no-libibverbs-ring-via-socket.log", T_SOCK, NULL, 0, true, true, 1,
	  { 0, 0, 0, 0, 1, 0 }, "2.4.2+cuda10.0",
	  "NCCL on ZBOX-EN1080K: sockets over eth0, GPUDirect RDMA off, FALLBACK: libibverbs or the RDMA net plugin "
	  "is missing" },
	{ "warn-12-nccl1405-roce-completion-status12-vendor129.log", T_UNK, NULL, -1, false, true, 1, { 3 }, NULL,
	  "NCCL on kp-ddp-worker-0: unknown transport, GPUDirect RDMA unknown" },
	{ "warn-13-nccl928-h100-ib-completion-error4-vendor81.log", T_UNK, NULL, -1, false, true, 3, { 3 }, NULL,
	  "NCCL on H100-2: unknown transport, GPUDirect RDMA unknown" },
	{ "warn-14-nccl562-a100-ibext-ibv-create-qp-failed.log", T_IB, "IBext", -1, false, true, 1, { 0, 3 },
	  "2.8.3+cudaCUDA_MAJOR.CUDA_MINOR", "NCCL on hai-a100-3: InfiniBand (plugin IBext), GPUDirect RDMA unknown" },
	/* RoCE channels via NET/IB/0 without /GDRDMA: GPUDirect RDMA off. */
	{ "warn-16-nccl380-a100-roce-ibv-create-cq-failed.log", T_ROCE, NULL, 0, false, true, 1, { 0, 1 },
	  "2.7.8+cuda11.0", "NCCL on spark01: RoCE over mlx5_1, GPUDirect RDMA off" },
	{ "warn-17-nccl799-roce-ibv-modify-qp-no-such-device.log", T_ROCE, NULL, -1, false, true, 1, { 0, 1 },
	  "2.7.8+cuda10.2",
	  "NCCL on 72bf7b08-26f3-4ebc-8b9d-85df3e4414c0: RoCE over mlx5_3, GPUDirect RDMA unknown" },
};

static void test_real_logs(void **state)
{
	const char *dir = getenv("LL_REALDATA");
	size_t checked = 0;

	(void)state;
	if (!dir || access(dir, R_OK) != 0) {
		fprintf(stderr, "LL_REALDATA not set or not readable: real NCCL logs skipped\n");
		skip();
	}
	for (size_t i = 0; i < LL_ARRAY_SIZE(real_cases); i++) {
		const struct real_case *c = &real_cases[i];
		_cleanup_free_ char *path = ll_asprintf("%s/nccl_logs/%s", dir, c->file);
		_cleanup_(ll_ncclscan_freep) struct ll_ncclscan *s = ll_ncclscan_new(LL_NET_EXPECT_ANY);
		struct ll_error err = { 0 };
		const struct ll_nccl_verdict *v;
		_cleanup_free_ char *line = NULL;

		fprintf(stderr, "  %s\n", c->file);
		assert_int_equal(ll_ncclscan_path(s, path, &err), 0);
		v = ll_ncclscan_result(s);
		assert_string_equal(ll_nccl_transport_name(v->transport), ll_nccl_transport_name(c->transport));
		if (c->plugin)
			assert_string_equal(v->plugin, c->plugin);
		else
			assert_null(v->plugin);
		assert_int_equal(v->gdr, c->gdr);
		assert_int_equal(v->fallback, c->fallback);
		assert_int_equal(v->error, c->error);
		assert_int_equal(v->n_hosts, c->hosts);
		for (int k = 0; k < LL_NCCL_WARN_CLASS_COUNT; k++)
			assert_int_equal(v->warnings_by_class[k], c->warn[k]);
		if (c->version)
			assert_string_equal(v->version, c->version);
		else
			assert_null(v->version);
		line = summary(&v->hosts[0]);
		assert_string_equal(line, c->first_summary);
		checked++;
	}
	assert_int_equal(checked, 18);
}

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

	/* The sockets-only hosts of the AWS log are no fallback on their own: NET/IB
	 * printed "No device found" on other hosts. */
	p3 = ll_asprintf("%s/nccl_logs/socket-01-nccl226-aws-no-ib-device-ens3.log", dir);
	s3 = ll_ncclscan_new(LL_NET_EXPECT_ANY);
	assert_int_equal(ll_ncclscan_file(s3, p3, NULL), 0);
	v = ll_ncclscan_result(s3);
	h = host_named(v, "ip-172-31-12-210");
	assert_int_equal(h->transport, T_SOCK);
	assert_false(h->fallback);
	h = host_named(v, "ip-172-31-12-21");
	assert_true(h->fallback);
	h = host_named(v, "ip-172-31-8-153");
	assert_int_equal(h->transport, T_UNK);
	assert_false(h->fallback);
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
		{ "Failed to initialize any NET plugin", LL_NCCL_WARN_PLUGIN_MISSING },
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

static void test_socket_line_alone(void **state)
{
	/* Without any IB line, the same socket line means sockets. */
	_cleanup_(ll_ncclscan_freep) struct ll_ncclscan *s =
		scan_text(LL_NET_EXPECT_ANY, "h:1:1 [0] NCCL INFO NET/Socket : Using [0]ib0:10.0.0.1<0>\n");
	const struct ll_nccl_verdict *v = ll_ncclscan_result(s);

	(void)state;
	assert_int_equal(v->transport, T_SOCK);
	assert_int_equal(v->gdr, 0);
	assert_false(v->fallback);
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
	/* No network at all. */
	f = scan_text(LL_NET_EXPECT_ANY, "h:1:1 [0] NCCL INFO NET/IB : No device found.\n"
					 "h:1:1 [0] misc/socket.cc:1 NCCL WARN NET/Socket : no interface found\n");
	v = ll_ncclscan_result(f);
	assert_int_equal(v->transport, T_NONE);
	assert_true(v->fallback);
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

static void test_watch_env(void **state)
{
	char *add[2] = { NULL, NULL };
	char *const plain[] = { "PATH=/bin", NULL };
	char *const mine[] = { "PATH=/bin", "NCCL_DEBUG=WARN", NULL };

	(void)state;
	assert_true(ll_ncclwatch_env("/tmp/job", plain, add));
	assert_string_equal(add[0], "NCCL_DEBUG=INFO");
	assert_string_equal(add[1], "NCCL_DEBUG_FILE=/tmp/job/nccl.%h.%p");
	free(add[0]);
	free(add[1]);
	add[0] = add[1] = NULL;
	assert_false(ll_ncclwatch_env("/tmp/job", mine, add));
	assert_null(add[0]);
	assert_true(ll_ncclwatch_env("/tmp/job", NULL, add));
	free(add[0]);
	free(add[1]);
}

static void test_expect_from_plan(void **state)
{
	(void)state;
	assert_int_equal(ll_ncclwatch_expect_from_plan("ib", NULL, NULL), LL_NET_EXPECT_IB);
	assert_int_equal(ll_ncclwatch_expect_from_plan("roce", NULL, "0"), LL_NET_EXPECT_ROCE);
	assert_int_equal(ll_ncclwatch_expect_from_plan("socket", NULL, NULL), LL_NET_EXPECT_SOCKET);
	assert_int_equal(ll_ncclwatch_expect_from_plan("rdma", NULL, NULL), LL_NET_EXPECT_ANY);
	assert_int_equal(ll_ncclwatch_expect_from_plan(NULL, NULL, NULL), LL_NET_EXPECT_ANY);
	assert_int_equal(ll_ncclwatch_expect_from_plan("ib", "Socket", NULL), LL_NET_EXPECT_SOCKET);
	assert_int_equal(ll_ncclwatch_expect_from_plan("ib", NULL, "1"), LL_NET_EXPECT_SOCKET);
}

static void append(const char *path, const char *text)
{
	FILE *f = fopen(path, "a");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
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
	assert_int_equal(ll_ncclwatch_new(dir, LL_NET_EXPECT_IB, LL_FALLBACK_STOP, &w, NULL), 0);
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

static void test_watch_stop(void **state)
{
	char tmpl[] = "/tmp/ll-ncclwatch-XXXXXX";
	char *dir = mkdtemp(tmpl);
	_cleanup_free_ char *f1 = NULL;
	struct ll_ncclwatch *w = NULL;
	FILE *o = fopen("/dev/null", "w");

	(void)state;
	f1 = ll_asprintf("%s/nccl.n2.7", dir);
	assert_int_equal(ll_ncclwatch_new(dir, LL_NET_EXPECT_ANY, LL_FALLBACK_STOP, &w, NULL), 0);
	append(f1, "n2:7:7 [0] NCCL INFO NET/IB : No device found.\n");
	assert_int_equal(ll_ncclwatch_poll(w, o), 1);
	assert_string_equal(ll_ncclwatch_stop_reason(w),
			    "NCCL on n2 is not using RDMA: NET/IB found no usable device");
	ll_ncclwatch_free(w);
	fclose(o);
	unlink(f1);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_logs),
		cmocka_unit_test(test_real_hosts),
		cmocka_unit_test(test_prefix_styles),
		cmocka_unit_test(test_warn_prefix_and_classes),
		cmocka_unit_test(test_old_nccl_socket_line_is_not_fallback),
		cmocka_unit_test(test_socket_line_alone),
		cmocka_unit_test(test_gdr_and_channels),
		cmocka_unit_test(test_fallback_rules),
		cmocka_unit_test(test_wrapped_and_interleaved),
		cmocka_unit_test(test_feed_in_pieces),
		cmocka_unit_test(test_long_line_and_warning_cap),
		cmocka_unit_test(test_long_line_numbers),
		cmocka_unit_test(test_dir_links_and_fifos),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_watch_env),
		cmocka_unit_test(test_expect_from_plan),
		cmocka_unit_test(test_watch_poll),
		cmocka_unit_test(test_watch_stop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
