/* Rank 0's check-in and the rendezvous proof (launcher/agree/agree-rdzv.c) over
 * loopback: rank 0 in this thread, the other nodes in threads of their own. Every
 * node reaching rank 0; one never coming (named by rank 0 and told to the others);
 * an interface that does not exist; the check-in's status lines and verdict; another
 * job's rank 0 on a shared port; the port candidates; rank 0's digest table; the
 * agreement without PMIx (records at check-in, the summaries rank 0 asks for, its
 * decision or failure on every node). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>
#include <string.h>
#include <cmocka.h>

#include "llmlaunch/agree.h"
#include "llmlaunch/clock.h"

static char *names[] = { "n1", "n2", "n3", "n4" };

static struct ll_rdzv_job job_of(const char *id, size_t nnodes, size_t rank)
{
	return (struct ll_rdzv_job){ .id = id, .nnodes = nnodes, .rank = rank, .names = names };
}

struct node {
	pthread_t thread;
	struct ll_rdzv_job job;
	struct ll_rdzv_proof proof;
	struct ll_rdzv_outcome out;
	struct ll_error err;
	int r;
};

static void *node_prove(void *data)
{
	struct node *n = data;

	n->r = ll_rdzv_prove(&n->job, NULL, &n->proof, &n->out, &n->err);
	return NULL;
}

static void node_start(struct node *n, const char *id, size_t nnodes, size_t rank, int port, const char *ifname,
		       double deadline)
{
	memset(n, 0, sizeof(*n));
	n->job = job_of(id, nnodes, rank);
	n->proof = (struct ll_rdzv_proof){
		.master_addr = "127.0.0.1", .master_port = port, .ifname = ifname, .deadline = deadline,
		.arrive_deadline = deadline,
	};
	assert_int_equal(pthread_create(&n->thread, NULL, node_prove, n), 0);
}

static void node_join(struct node *n)
{
	pthread_join(n->thread, NULL);
}

static void node_release(struct node *n)
{
	ll_rdzv_outcome_release(&n->out);
	ll_error_clear(&n->err);
}

static struct ll_rdzv *rank0(const char *id, size_t nnodes, int *ret_port)
{
	struct ll_rdzv_job job = job_of(id, nnodes, 0);
	struct ll_rdzv *r = NULL;
	struct ll_error err = { 0 };

	assert_int_equal(ll_rdzv_listen(&job, NULL, 0, &r, &err), 0);
	*ret_port = ll_rdzv_port(r);
	assert_true(*ret_port > 0);
	return r;
}

static void test_all_reach(void **state)
{
	int port;
	struct ll_rdzv *srv = rank0("job 1", 4, &port);
	struct ll_rdzv_job job = job_of("job 1", 4, 0);
	struct ll_rdzv_proof p = { .master_addr = "127.0.0.1", .master_port = port };
	struct ll_rdzv_outcome out;
	struct ll_error err = { 0 };
	struct node n[3];

	(void)state;
	p.deadline = p.arrive_deadline = ll_now_s() + 10;
	for (size_t i = 0; i < 3; i++)
		node_start(&n[i], "job 1", 4, i + 1, port, "lo", p.deadline);
	assert_int_equal(ll_rdzv_prove(&job, srv, &p, &out, &err), 0);
	/* Where they came in: this node's address and interface for the job. */
	assert_string_equal(out.arrival_addr, "127.0.0.1");
	assert_string_equal(out.arrival_ifname, "lo");
	for (size_t i = 0; i < 3; i++) {
		node_join(&n[i]);
		assert_int_equal(n[i].r, 0);
		node_release(&n[i]);
	}
	ll_rdzv_outcome_release(&out);
	ll_rdzv_close(srv);
}

static void test_one_missing(void **state)
{
	int port;
	struct ll_rdzv *srv = rank0("job 2", 3, &port);
	struct ll_rdzv_job job = job_of("job 2", 3, 0);
	struct ll_rdzv_proof p = { .master_addr = "127.0.0.1" };
	struct ll_rdzv_outcome out;
	struct ll_error err = { 0 };
	struct node n;
	char want[128];

	(void)state;
	p.master_port = port;
	p.deadline = p.arrive_deadline = ll_now_s() + 1;
	node_start(&n, "job 2", 3, 1, port, NULL, p.deadline);
	assert_int_equal(ll_rdzv_prove(&job, srv, &p, &out, &err), -EHOSTUNREACH);
	snprintf(want, sizeof(want), "1 of 3 nodes did not reach the master 127.0.0.1:%d within 1 s: n3", port);
	assert_string_equal(err.message, want);
	/* The node that did reach rank 0 hears the same. */
	node_join(&n);
	assert_int_equal(n.r, -EHOSTUNREACH);
	assert_string_equal(n.err.message, want);
	assert_false(n.out.self_failed);
	node_release(&n);
	ll_rdzv_outcome_release(&out);
	ll_error_clear(&err);
	ll_rdzv_close(srv);
}

static void test_no_such_interface(void **state)
{
	struct node n;

	(void)state;
	node_start(&n, "job 3", 2, 1, 20001, "nosuchif0", ll_now_s() + 5);
	node_join(&n);
	assert_int_equal(n.r, -EHOSTUNREACH);
	assert_true(n.out.self_failed);
	assert_string_equal(n.err.message,
			    "n2 cannot reach the master 127.0.0.1:20001 through nosuchif0: no such interface on this node");
	node_release(&n);
}

struct seen {
	size_t calls, n_missing;
	char names[64];
	bool done;
};

static void progress(void *data, const struct ll_agree_progress *p)
{
	struct seen *s = data;

	s->calls++;
	s->done = p->done;
	if (!p->done) {
		s->n_missing = p->n_missing;
		snprintf(s->names, sizeof(s->names), "%s", p->names);
	}
}

static void test_checkin(void **state)
{
	int port;
	struct ll_rdzv *srv = rank0("job 4", 4, &port), *cli = NULL;
	struct ll_rdzv_job job = job_of("job 4", 4, 1);
	struct ll_error err = { 0 };
	struct seen seen = { 0 };
	char *missing = NULL;
	size_t n = 0;
	double until;

	(void)state;
	job.progress = progress;
	job.progress_data = &seen;
	assert_int_equal(ll_rdzv_checkin(&job, "127.0.0.1", &port, 1, &cli, &err), 0);
	/* Both sides in one thread: rank 0 serves, the node follows, in turns. */
	until = ll_now_s() + 4;
	while (ll_now_s() < until && seen.calls == 0) {
		ll_rdzv_run(srv, -1, ll_now_s() + 0.05);
		ll_rdzv_run(cli, -1, ll_now_s() + 0.05);
	}
	/* Rank 0 counts itself and n2: n3 and n4 are missing, and n2 is told so. */
	assert_true(ll_rdzv_missing(srv, &n, &missing, NULL));
	assert_int_equal(n, 2);
	assert_string_equal(missing, "n3, n4");
	free(missing);
	/* All of them, for an exclude file: rank 0 only. */
	missing = ll_rdzv_missing_hostlist(srv);
	assert_string_equal(missing, "n[3-4]");
	free(missing);
	assert_null(ll_rdzv_missing_hostlist(cli));
	assert_true(seen.calls > 0);
	assert_int_equal(seen.n_missing, 2);
	assert_string_equal(seen.names, "n3, n4");
	assert_true(ll_rdzv_missing(cli, &n, &missing, NULL));
	assert_int_equal(n, 2);
	free(missing);
	/* Rank 0's verdict reaches the node that checked in. */
	assert_null(ll_rdzv_verdict(cli));
	ll_rdzv_send_verdict(srv, "agreement timed out after 6 s: 2 of 4 nodes did not arrive: n3, n4");
	until = ll_now_s() + 2;
	while (ll_now_s() < until && !ll_rdzv_verdict(cli))
		ll_rdzv_run(cli, -1, ll_now_s() + 0.05);
	assert_string_equal(ll_rdzv_verdict(cli), "agreement timed out after 6 s: 2 of 4 nodes did not arrive: n3, n4");
	ll_rdzv_progress_done(cli, false);
	assert_true(seen.done);
	ll_rdzv_close(cli);
	ll_rdzv_close(srv);
}

static void test_alien(void **state)
{
	int ports[2];
	struct ll_rdzv *other = rank0("job A", 2, &ports[0]), *mine = rank0("job B", 2, &ports[1]), *cli = NULL;
	struct ll_rdzv_job job = job_of("job B", 2, 1);
	struct ll_error err = { 0 };
	size_t n = 1;
	double until = ll_now_s() + 3;

	(void)state;
	assert_int_equal(ll_rdzv_checkin(&job, "127.0.0.1", ports, 2, &cli, &err), 0);
	while (ll_now_s() < until) {
		ll_rdzv_run(other, -1, ll_now_s() + 0.02);
		ll_rdzv_run(mine, -1, ll_now_s() + 0.02);
		ll_rdzv_run(cli, -1, ll_now_s() + 0.02);
		assert_true(ll_rdzv_missing(mine, &n, NULL, NULL));
		if (n == 0)
			break;
	}
	/* Job A's rank 0 sent it on; job B's counted it. */
	assert_int_equal(n, 0);
	assert_true(ll_rdzv_missing(other, &n, NULL, NULL));
	assert_int_equal(n, 1);
	ll_rdzv_close(cli);
	ll_rdzv_close(mine);
	ll_rdzv_close(other);
}

static void test_ports(void **state)
{
	int p[LL_RDZV_PORTS];

	(void)state;
	ll_rdzv_ports(20008, p);
	assert_int_equal(p[0], 20008);
	assert_int_equal(p[7], 20015);
	ll_rdzv_ports(32766, p);
	assert_int_equal(p[0], 32766);
	assert_int_equal(p[1], 32767);
	assert_int_equal(p[2], 20000);
}

/* Rank 0's digest table: one summary asked per new hardware or network digest, never
 * again for a digest already here, whatever the digest's value (0 included), past the
 * table's first growth; and, nodes added in launcher order, the same nodes as
 * ll_agree_publishes_summary() picks by rescanning. */
static void test_digests(void **state)
{
	_cleanup_(ll_agree_digests_freep) struct ll_agree_digests *d = ll_agree_digests_new();
	struct ll_agree_node n = { .hw_digest = 7, .net_digest = 9 };
	struct ll_agree_node nodes[200];
	uint64_t x = 88172645463325252ull;

	(void)state;
	assert_true(ll_agree_digests_add(d, &n, 0));
	for (size_t i = 1; i < 50; i++)
		assert_false(ll_agree_digests_add(d, &n, i));
	n.hw_digest = 0; /* another GPU count: a new hardware digest, same network */
	assert_true(ll_agree_digests_add(d, &n, 50));
	assert_false(ll_agree_digests_add(d, &n, 51));
	n.net_digest = 0; /* another interface on that node's kind */
	assert_true(ll_agree_digests_add(d, &n, 52));
	assert_false(ll_agree_digests_add(d, &n, 53));
	n.hw_digest = 7; /* both seen already, in different pairs */
	assert_false(ll_agree_digests_add(d, &n, 54));
	assert_int_equal(ll_agree_digests_groups(d, false), 2);
	assert_int_equal(ll_agree_digests_groups(d, true), 2);
	for (uint64_t k = 1; k <= 100; k++) {
		struct ll_agree_node m = { .hw_digest = k << 40, .net_digest = 9 };
		assert_true(ll_agree_digests_add(d, &m, 100 + k));
	}
	for (uint64_t k = 1; k <= 100; k++) {
		struct ll_agree_node m = { .hw_digest = k << 40, .net_digest = 9 };
		assert_false(ll_agree_digests_add(d, &m, 300 + k));
	}
	assert_int_equal(ll_agree_digests_groups(d, false), 102);

	ll_agree_digests_free(LL_TAKE(d));
	d = ll_agree_digests_new();
	for (size_t i = 0; i < LL_ARRAY_SIZE(nodes); i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		nodes[i] = (struct ll_agree_node){ .hw_digest = x % 5, .net_digest = (x >> 8) % 7 };
	}
	for (size_t i = 0; i < LL_ARRAY_SIZE(nodes); i++)
		assert_int_equal(ll_agree_digests_add(d, &nodes[i], i),
				 ll_agree_publishes_summary(nodes, LL_ARRAY_SIZE(nodes), i));
}

/* ---- the agreement without PMIx ---- */

/* A node of 4 or 2 GPUs with eth0 at 198.51.100.K/24. */
static struct ll_summary *summary_of(int gpus, int k)
{
	struct ll_summary *s = ll_calloc(1, sizeof(*s));

	s->n_gpus = gpus;
	s->gpu_model = ll_strdup("H100");
	s->nproc_per_node = gpus;
	s->gid_index = -1;
	s->net = ll_strdup("Socket");
	s->ifs = ll_calloc(1, sizeof(*s->ifs));
	s->n_ifs = 1;
	s->ifs[0] = (struct ll_summary_if){ .name = ll_strdup("eth0"), .kind = LL_SUMMARY_IF_PHYSICAL, .family = AF_INET,
					    .addr = ll_asprintf("198.51.100.%d", k), .prefixlen = 24 };
	return s;
}

static struct ll_agree_node record_of(const struct ll_summary *s, uint64_t host, int port)
{
	return (struct ll_agree_node){ .hw_digest = ll_summary_hw_digest(s), .net_digest = ll_summary_net_digest(s),
				       .host_key = host, .port = port };
}

struct env_node {
	pthread_t thread;
	struct ll_rdzv_job job;
	char *record, *summary;
	int port;
	struct ll_rdzv *r;
	struct ll_error err;
};

static void *env_node_run(void *data)
{
	struct env_node *n = data;
	double until = ll_now_s() + 8;

	if (ll_rdzv_checkin(&n->job, "127.0.0.1", &n->port, 1, &n->r, &n->err) == 0)
		while (!ll_rdzv_decision(n->r) && !ll_rdzv_verdict(n->r) && ll_now_s() < until)
			ll_rdzv_run(n->r, -1, until);
	return NULL;
}

static int fetch_gathered(void *data, size_t i, const struct ll_summary **ret, struct ll_error *err)
{
	*ret = ll_rdzv_summary(data, i);
	return *ret ? 0 : ll_error_set(err, -EPROTO, "no summary of node %zu", i);
}

static bool have_gathered(void *data, size_t i)
{
	return ll_rdzv_summary(data, i) != NULL;
}

/* Three nodes: n2 alike rank 0 (no summary asked), n3 with gpus3 GPUs. Returns what
 * ll_agree_decide() said on rank 0; the nodes' rdzv in nodes[]. */
static int env_round(const char *id, int gpus3, struct env_node nodes[2], struct ll_agree_result *res,
		     struct ll_error *err, size_t *ret_fetched_remote)
{
	int port, r;
	struct ll_rdzv *srv = rank0(id, 3, &port);
	struct ll_summary *s0 = summary_of(4, 1), *s[2] = { summary_of(4, 2), summary_of(gpus3, 3) };
	struct ll_agree_node self = record_of(s0, 1, port);
	struct ll_agree_input in = { .n_nodes = 3, .routed = true, .fetch = fetch_gathered, .have = have_gathered,
				     .fetch_data = srv };

	for (int k = 0; k < 2; k++) {
		struct ll_agree_node rec = record_of(s[k], 2 + (uint64_t)k, 0);
		nodes[k] = (struct env_node){ .job = job_of(id, 3, 1 + (size_t)k), .port = port };
		nodes[k].record = ll_agree_node_format(&rec);
		nodes[k].summary = ll_summary_serialize(s[k]);
		nodes[k].job.record = nodes[k].record;
		nodes[k].job.summary = nodes[k].summary;
		assert_int_equal(pthread_create(&nodes[k].thread, NULL, env_node_run, &nodes[k]), 0);
	}
	assert_int_equal(ll_rdzv_gather(srv, &self, s0, ll_now_s() + 6, err), 0);
	/* n2's digests are rank 0's: only n3's summary was asked for. */
	assert_non_null(ll_rdzv_summary(srv, 0));
	assert_null(ll_rdzv_summary(srv, 1));
	*ret_fetched_remote = ll_rdzv_summary(srv, 2) != NULL;
	in.nodes = ll_rdzv_nodes(srv);
	assert_string_equal(in.nodes[2].name, "n3");
	r = ll_agree_decide(&in, res, err);
	if (r < 0)
		ll_rdzv_send_decision(srv, NULL, err->message, err->hint);
	else
		ll_rdzv_send_decision(srv, res, NULL, NULL);
	for (int k = 0; k < 2; k++)
		pthread_join(nodes[k].thread, NULL);
	ll_rdzv_close(srv);
	ll_summary_free(s0);
	ll_summary_free(s[0]);
	ll_summary_free(s[1]);
	return r;
}

static void env_nodes_release(struct env_node nodes[2])
{
	for (int k = 0; k < 2; k++) {
		ll_rdzv_close(nodes[k].r);
		free(nodes[k].record);
		free(nodes[k].summary);
		ll_error_clear(&nodes[k].err);
	}
}

static void test_env_agree(void **state)
{
	struct env_node nodes[2];
	struct ll_agree_result res = { 0 };
	struct ll_error err = { 0 };
	size_t fetched;
	char *lines;
	struct ll_rdzv_decision d = { 0 };

	(void)state;
	/* All alike: each node gets its rank, the master and the subnet, and finds its interface. */
	assert_int_equal(env_round("env 1", 4, nodes, &res, &err, &fetched), 0);
	assert_int_equal(fetched, 0);
	for (int k = 0; k < 2; k++) {
		const struct ll_rdzv_decision *got = ll_rdzv_decision(nodes[k].r);
		assert_non_null(got);
		assert_int_equal(got->node_rank, k + 1);
		assert_string_equal(got->master_addr, "198.51.100.1");
		assert_int_equal(got->master_port, res.master_port);
		assert_string_equal(got->subnet, "198.51.100.0/24");
		assert_false(got->routed);
		assert_null(ll_rdzv_verdict(nodes[k].r));
	}
	ll_agree_result_release(&res);
	env_nodes_release(nodes);

	/* n3 has 2 GPUs: its summary is asked for, and every node hears the verdict and its hint. */
	assert_int_equal(env_round("env 2", 2, nodes, &res, &err, &fetched), -EPROTO);
	assert_int_equal(fetched, 1);
	assert_non_null(strstr(err.message, "nodes differ: n3"));
	for (int k = 0; k < 2; k++) {
		assert_null(ll_rdzv_decision(nodes[k].r));
		assert_string_equal(ll_rdzv_verdict(nodes[k].r), err.message);
		assert_string_equal(ll_rdzv_verdict_hint(nodes[k].r), err.hint);
	}
	env_nodes_release(nodes);
	ll_error_clear(&err);

	/* The lines themselves: notes, the NVLink domain, the order, then DECIDED. */
	{
		char *warnings[] = { "n2: a port down" };
		size_t order[] = { 0, 2, 1 };
		struct ll_agree_result r2 = { .order = order, .n_nodes = 3, .master_addr = "fd00::1", .master_port = 29500,
					      .routed = true, .warnings = warnings, .n_warnings = 1, .nvlink_domain = 8,
					      .nvlink_domain_reason = "the smallest clique" };
		char *save = NULL;
		int last = 0;

		lines = ll_rdzv_decision_lines(&r2, 2, "n1, n3, n2");
		for (char *l = strtok_r(lines, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
			last = ll_rdzv_decision_line(&d, l);
		free(lines);
		assert_int_equal(last, 1);
	}
	assert_int_equal(d.node_rank, 2);
	assert_string_equal(d.master_addr, "fd00::1");
	assert_int_equal(d.master_port, 29500);
	assert_null(d.subnet);
	assert_true(d.routed);
	assert_int_equal(d.n_notes, 1);
	assert_string_equal(d.notes[0], "n2: a port down");
	assert_int_equal(d.nvlink_domain, 8);
	assert_string_equal(d.nvlink_domain_reason, "the smallest clique");
	assert_string_equal(d.node_order, "n1, n3, n2");
	assert_int_equal(ll_rdzv_decision_line(&d, "DECIDED x"), -EPROTO);
	ll_rdzv_decision_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_reach),
		cmocka_unit_test(test_one_missing),
		cmocka_unit_test(test_no_such_interface),
		cmocka_unit_test(test_checkin),
		cmocka_unit_test(test_alien),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_digests),
		cmocka_unit_test(test_env_agree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
