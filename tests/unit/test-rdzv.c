/* Rank 0's check-in and the rendezvous proof (launcher/agree/agree-rdzv.c) over
 * loopback: rank 0 in this thread, the other nodes in threads of their own. Every
 * node reaching rank 0; one never coming (named by rank 0 and told to the others);
 * an interface that does not exist; the check-in's status lines and verdict; another
 * job's rank 0 on a shared port; the port candidates; rank 0's digest table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <pthread.h>
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
