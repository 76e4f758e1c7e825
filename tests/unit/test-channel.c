/* The job channel (launcher/launch/channel.c): node 0's decision across nodes (the
 * first failure, not its consequences; equal times; a node that left; a hang named by
 * every node's stacks), and the channel itself on loopback: a failure reported by
 * node 1 stops both and gives both the same verdict, node 0 gone is said within the
 * poll, a node gone before its end stops the job and is named, one gone after its end
 * is not. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "llmlaunch/channel.h"
#include "llmlaunch/clock.h"

#define S 1000000000LL

static struct ll_worker_exit rec(int rank, const char *host, bool signaled, int code, long long t, const char *cause)
{
	return (struct ll_worker_exit){ .rank = rank,
					.local_rank = 0,
					.signaled = signaled,
					.code = code,
					.time_ns = t,
					.host = (char *)host,
					.cause = (char *)cause };
}

/* Node 1's rank 0 reports its "Connection closed by peer" before node 2's real
 * failure arrives, and fails earlier by its own clock: the verdict still names the
 * rank that failed of its own accord, with its status. */
static void test_first_failure_not_consequence(void **state)
{
	struct ll_worker_exit v[] = {
		rec(0, "n1", false, 1, 100 * S, "RuntimeError: [gloo] Connection closed by peer [198.51.100.2]:1234"),
		rec(1, "n2", false, 3, 101 * S, "ValueError: rank 1 gave up on purpose"),
		rec(2, "n3", true, SIGTERM, 102 * S, NULL),
	};
	int status = -1;
	_cleanup_free_ char *t = ll_channel_failure_verdict(v, 3, &status);

	(void)state;
	assert_non_null(t);
	assert_non_null(strstr(t, "rank 1 on n2 failed first (exit 3, "));
	assert_non_null(strstr(t, "): ValueError: rank 1 gave up on purpose; 2 other ranks stopped after it"));
	assert_int_equal(status, 3);
}

/* A SIGKILL is a cause; the SIGTERMs after it are the stop. */
static void test_signal_first(void **state)
{
	struct ll_worker_exit v[] = {
		rec(0, "p1", true, SIGTERM, 12 * S, NULL),
		rec(2, "p3", true, SIGKILL, 10 * S, NULL),
		rec(1, "p2", true, SIGTERM, 12 * S, NULL),
	};
	int status;
	_cleanup_free_ char *t = ll_channel_failure_verdict(v, 3, &status);

	(void)state;
	assert_non_null(strstr(t, "rank 2 on p3 failed first (signal KILL, "));
	assert_non_null(strstr(t, "killed by SIGKILL; 2 other ranks stopped after it"));
	assert_int_equal(status, 128 + SIGKILL);
}

/* Two real failures at the same instant on two nodes: the lower rank, whatever order
 * the nodes reported in. */
static void test_tie(void **state)
{
	struct ll_worker_exit v[] = {
		rec(5, "n3", false, 2, 50 * S, "KeyError: 'b'"),
		rec(4, "n2", false, 7, 50 * S, "KeyError: 'a'"),
	};
	int status;
	_cleanup_free_ char *t = ll_channel_failure_verdict(v, 2, &status);

	(void)state;
	assert_non_null(strstr(t, "rank 4 on n2 failed first (exit 7"));
	assert_int_equal(status, 7);
}

/* Only consequences reported (the node that failed first never reported, its
 * llmlaunch gone): the earliest, said as such, never "failed first". */
static void test_only_consequences(void **state)
{
	struct ll_worker_exit v[] = {
		rec(1, "n2", false, 1, 20 * S, "Connection reset by peer"),
		rec(0, "n1", false, 1, 21 * S, "Connection closed by peer"),
	};
	int status;
	_cleanup_free_ char *t = ll_channel_failure_verdict(v, 2, &status);

	(void)state;
	assert_non_null(strstr(t, "rank 1 on n2 failed because another rank did"));
	assert_null(ll_channel_failure_verdict(NULL, 0, &status));
	assert_int_equal(status, 0);
}

/* A node whose llmlaunch left (killed with its ranks) is the first failure, though
 * a peer's "Connection closed by peer" on another node came first by the clock and
 * its own record's cause reads like a consequence; the SIGTERMs of the stop after it
 * are counted. A rank that failed of its own accord before it is named instead, and
 * the node is not counted as a rank. */
static void test_node_left_first(void **state)
{
	struct ll_worker_exit v[] = {
		rec(0, "p1", false, 1, 100 * S, "RuntimeError: [gloo] Connection closed by peer [198.51.100.3]:1234"),
		rec(-1, "p3", true, SIGKILL, 100 * S + 200000000LL, "Connection reset by peer"),
		rec(1, "p2", true, SIGTERM, 102 * S, NULL),
	};
	struct ll_worker_exit w[] = {
		rec(1, "p2", false, 4, 99 * S, "KeyError: 'x'"),
		rec(-1, "p3", true, SIGKILL, 100 * S, "its connection closed"),
		rec(0, "p1", false, 1, 101 * S, "Connection closed by peer"),
	};
	int status = -1;
	_cleanup_free_ char *t = NULL, *t2 = NULL;

	(void)state;
	v[1].node_left = w[1].node_left = true;
	v[1].node = w[1].node = 2;
	v[1].local_rank = w[1].local_rank = -1;
	t = ll_channel_failure_verdict(v, 3, &status);
	assert_non_null(t);
	assert_non_null(strstr(t, "llmlaunch on p3 (node 2) left the job at "));
	assert_non_null(strstr(t, " without a word (killed, or its host went down); 2 other ranks stopped after it"));
	assert_null(strstr(t, "reset"));
	assert_int_equal(status, 137);
	t2 = ll_channel_failure_verdict(w, 3, &status);
	assert_non_null(strstr(t2, "rank 1 on p2 failed first (exit 4, "));
	assert_non_null(strstr(t2, "KeyError: 'x'; 1 other rank stopped after it"));
	assert_int_equal(status, 4);
}

/* Every node's stacks together: the rank that sleeps is the odd one, on a tie too. */
static void test_hang_verdict(void **state)
{
	struct ll_rank_stack v[] = {
		{ .rank = 2, .where = (char *)"all_reduce in distributed_c10d.py:1541", .collective = true },
		{ .rank = 1, .where = (char *)"time.sleep in worker.py:46" },
		{ .rank = 0, .where = (char *)"all_reduce in distributed_c10d.py:1541", .collective = true },
	};
	_cleanup_free_ char *t = ll_channel_hang_verdict("p2", 5.2, v, 3);
	_cleanup_free_ char *t2 = ll_channel_hang_verdict("p2", 5, v, 2);

	(void)state;
	assert_string_equal(t, "the job hangs: no rank on p2 has printed anything for 5 s; rank 1 waits in time.sleep in "
			       "worker.py:46, while ranks 0,2 wait in all_reduce in distributed_c10d.py:1541; each "
			       "node's job directory keeps its ranks' stacks");
	assert_non_null(strstr(t2, "rank 1 waits in time.sleep in worker.py:46, while rank 2 waits in all_reduce"));
}

static void test_exit_line(void **state)
{
	struct ll_worker_exit x = rec(7, "gpu-12", true, SIGSEGV, 1234567890123LL, "Fatal\tPython error:\nSegfault");
	struct ll_worker_exit y;
	_cleanup_free_ char *line = ll_channel_exit_line(&x);

	(void)state;
	x.local_rank = 3;
	x.attempt = 1;
	free(line);
	line = ll_channel_exit_line(&x);
	assert_int_equal(strchr(line, '\n') - line, (long)strlen(line) - 1);
	assert_int_equal(ll_channel_exit_parse(line, &y), 0);
	assert_int_equal(y.rank, 7);
	assert_int_equal(y.local_rank, 3);
	assert_int_equal(y.attempt, 1);
	assert_true(y.signaled);
	assert_int_equal(y.code, SIGSEGV);
	assert_true(y.time_ns == 1234567890123LL);
	assert_string_equal(y.host, "gpu-12");
	assert_string_equal(y.cause, "Fatal Python error: Segfault");
	free(y.host);
	free(y.cause);
	assert_int_equal(ll_channel_exit_parse("EXIT 1 2", &y), -EPROTO);
}

/* ---- the channel on loopback ---- */

static int test_port;

static struct ll_channel *open_node_of(size_t nnodes, size_t rank, const char *name, const char *id)
{
	struct ll_channel *c = NULL;
	struct ll_error err = { 0 };

	assert_int_equal(ll_channel_open(&(struct ll_channel_job){ .id = id,
								  .nnodes = nnodes,
								  .node_rank = rank,
								  .master_addr = "127.0.0.1",
								  .master_port = test_port,
								  .name = name,
								  .connect_s = 10 },
					 &c, &err),
			 0);
	return c;
}

static struct ll_channel *open_node(size_t rank, const char *name, const char *id)
{
	return open_node_of(2, rank, name, id);
}

/* Poll every channel of `v` for `ms` milliseconds (their hellos answered). */
static void poll_all(struct ll_channel **v, size_t n, int ms)
{
	for (int i = 0; i < ms / 5; i++) {
		for (size_t k = 0; k < n; k++)
			ll_channel_poll(v[k]);
		usleep(5000);
	}
}

/* Poll both until `node`'s flags have `want`, at most 5 s. */
static int poll_until(struct ll_channel *a, struct ll_channel *b, struct ll_channel *node, int want)
{
	double until = ll_now_s() + 5;
	int f = 0;

	while (ll_now_s() < until) {
		if (a)
			ll_channel_poll(a);
		if (b)
			ll_channel_poll(b);
		f = ll_channel_poll(node);
		if ((f & want) == want)
			break;
		usleep(5000);
	}
	return f;
}

static int setup_port(void **state)
{
	(void)state;
	/* A port of its own per run: the channel's ports come after it. */
	test_port = 20000 + (int)(getpid() % 10000);
	return 0;
}

/* Node 1's end, as its llmlaunch waits for the verdict while node 0 waits for it. */
static void *node1_done(void *c)
{
	ll_channel_done(c, 1, 5);
	return NULL;
}

static void test_loopback_failure(void **state)
{
	struct ll_channel *n0 = open_node(0, "n1", "job A"), *n1 = open_node(1, "n2", "job A");
	struct ll_worker_exit x = rec(1, "n2", false, 1, 100 * S, "ValueError: boom");
	struct ll_worker_exit y = rec(0, "n1", false, 1, 101 * S, "Connection closed by peer");
	const char *v0, *v1;
	int s0, s1;

	(void)state;
	ll_channel_exit(n1, &x);
	assert_true(poll_until(n0, NULL, n1, LL_CHANNEL_STOP) & LL_CHANNEL_STOP);
	assert_true(ll_channel_poll(n0) & LL_CHANNEL_STOP);
	ll_channel_exit(n0, &y);
	/* both torchruns end; node 0 then sends the verdict */
	{
		pthread_t t;

		assert_int_equal(pthread_create(&t, NULL, node1_done, n1), 0);
		ll_channel_done(n0, 1, 5);
		pthread_join(t, NULL);
	}
	assert_true(ll_channel_poll(n1) & LL_CHANNEL_VERDICT);
	v0 = ll_channel_verdict(n0, &s0);
	v1 = ll_channel_verdict(n1, &s1);
	assert_non_null(v0);
	assert_non_null(v1);
	assert_string_equal(v0, v1);
	assert_non_null(strstr(v1, "rank 1 on n2 failed first (exit 1, "));
	assert_non_null(strstr(v1, "ValueError: boom; 1 other rank stopped after it"));
	assert_int_equal(s0, 1);
	assert_int_equal(s1, 1);
	assert_null(ll_channel_lost(n1));
	ll_channel_close(n1);
	ll_channel_close(n0);
}

/* Another job's node 0 on the first port answers ALIEN: the node goes on to its own. */
static void test_loopback_alien_then_lost(void **state)
{
	struct ll_channel *other = open_node(0, "x1", "job B");
	struct ll_channel *n0 = open_node(0, "n1", "job C"), *n1 = open_node(1, "n2", "job C");
	int f;

	(void)state;
	/* connected once node 0 answered HELLO: nothing to say yet */
	f = poll_until(n0, other, n1, 0);
	for (int i = 0; i < 50; i++) {
		ll_channel_poll(other);
		ll_channel_poll(n0);
		f = ll_channel_poll(n1);
		usleep(5000);
	}
	assert_int_equal(f, 0);
	/* node 0 goes away with the job running: node 1 says so and stops */
	ll_channel_close(n0);
	f = poll_until(other, NULL, n1, LL_CHANNEL_LOST);
	assert_true(f & LL_CHANNEL_LOST);
	assert_string_equal(ll_channel_lost(n1), "the channel to node 0 (n1) was lost: node 0's llmlaunch closed it");
	ll_channel_close(n1);
	ll_channel_close(other);
}

/* Node 0's job ends well first: the other node goes on without the channel, not lost. */
static void test_loopback_end(void **state)
{
	struct ll_channel *n0 = open_node(0, "n1", "job D"), *n1 = open_node(1, "n2", "job D");
	int f;

	(void)state;
	for (int i = 0; i < 50; i++) {
		ll_channel_poll(n0);
		ll_channel_poll(n1);
		usleep(5000);
	}
	ll_channel_done(n0, 0, 1);
	f = poll_until(NULL, NULL, n1, LL_CHANNEL_GONE);
	assert_true(f & LL_CHANNEL_GONE);
	assert_false(f & (LL_CHANNEL_LOST | LL_CHANNEL_STOP));
	assert_null(ll_channel_lost(n1));
	ll_channel_close(n0);
	ll_channel_close(n1);
}

/* Node 2's llmlaunch goes away with the job running, its torchrun's end unsaid:
 * node 0 stops the job at once, and the verdict, the same on the nodes left, names
 * the node before the ranks that failed after it; the job's record keeps it. */
static void test_loopback_node_left(void **state)
{
	struct ll_channel *v[3] = { open_node_of(3, 0, "n1", "job E"), open_node_of(3, 1, "n2", "job E"),
				    open_node_of(3, 2, "n3", "job E") };
	struct ll_worker_exit y = rec(1, "n2", false, 1, 0, "RuntimeError: Connection closed by peer");
	_cleanup_free_ char *record = NULL;
	const char *v0, *v1;
	int s0, s1;

	(void)state;
	poll_all(v, 3, 500);
	assert_int_equal(ll_channel_poll(v[0]) & LL_CHANNEL_STOP, 0);
	ll_channel_close(v[2]);
	assert_true(poll_until(v[0], NULL, v[1], LL_CHANNEL_STOP) & LL_CHANNEL_STOP);
	assert_true(ll_channel_poll(v[0]) & LL_CHANNEL_STOP);
	/* node 1's rank failed because node 2's did, later */
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		y.time_ns = (long long)ts.tv_sec * S + ts.tv_nsec + S;
	}
	ll_channel_exit(v[1], &y);
	{
		pthread_t t;

		assert_int_equal(pthread_create(&t, NULL, node1_done, v[1]), 0);
		ll_channel_done(v[0], 143, 5);
		pthread_join(t, NULL);
	}
	assert_true(ll_channel_poll(v[1]) & LL_CHANNEL_VERDICT);
	v0 = ll_channel_verdict(v[0], &s0);
	v1 = ll_channel_verdict(v[1], &s1);
	assert_non_null(v0);
	assert_non_null(v1);
	assert_string_equal(v0, v1);
	assert_non_null(strstr(v1, "llmlaunch on n3 (node 2) left the job at "));
	assert_non_null(strstr(v1, " without a word (killed, or its host went down); 1 other rank stopped after it"));
	assert_int_equal(s0, 137);
	assert_int_equal(s1, 137);
	record = ll_channel_record(v[0]);
	assert_non_null(strstr(record, "n3 node 2: llmlaunch left the job at "));
	assert_non_null(strstr(record, ": its connection closed\n"));
	assert_non_null(strstr(record, "n2 rank 1 (local 0, attempt 0): exit 1 at "));
	ll_channel_close(v[1]);
	ll_channel_close(v[0]);
}

/* Node 2's llmlaunch goes away while node 0 gathers a hang's stacks: its stacks will
 * not come, and node 0 stops the job at once (not after the gathering's 5 s), for it. */
static void test_loopback_node_left_gathering(void **state)
{
	struct ll_channel *v[3] = { open_node_of(3, 0, "n1", "job G"), open_node_of(3, 1, "n2", "job G"),
				    open_node_of(3, 2, "n3", "job G") };
	const char *v0, *v1;
	double t;
	int s0, s1;

	(void)state;
	poll_all(v, 3, 500);
	ll_channel_hang(v[1], 5);
	assert_true(poll_until(v[1], v[2], v[0], LL_CHANNEL_STACKS) & LL_CHANNEL_STACKS);
	assert_int_equal(ll_channel_poll(v[0]) & LL_CHANNEL_STOP, 0);
	ll_channel_close(v[2]);
	t = ll_now_s();
	assert_true(poll_until(v[0], NULL, v[1], LL_CHANNEL_STOP) & LL_CHANNEL_STOP);
	assert_true(ll_now_s() - t < 2);
	{
		pthread_t th;

		assert_int_equal(pthread_create(&th, NULL, node1_done, v[1]), 0);
		ll_channel_done(v[0], 143, 5);
		pthread_join(th, NULL);
	}
	v0 = ll_channel_verdict(v[0], &s0);
	v1 = ll_channel_verdict(v[1], &s1);
	assert_non_null(v0);
	assert_non_null(v1);
	assert_string_equal(v0, v1);
	assert_non_null(strstr(v0, "llmlaunch on n3 (node 2) left the job at "));
	assert_int_equal(s1, 137);
	ll_channel_close(v[1]);
	ll_channel_close(v[0]);
}

/* A node that said its torchrun ended well and then closed is no failure: node 0
 * stops nothing, and its own good end gives no verdict. */
static void test_loopback_close_after_done(void **state)
{
	struct ll_channel *v[2] = { open_node(0, "n1", "job F"), open_node(1, "n2", "job F") };
	_cleanup_free_ char *record = NULL;
	int f;

	(void)state;
	poll_all(v, 2, 250);
	ll_channel_done(v[1], 0, 1);
	ll_channel_close(v[1]);
	poll_all(v, 1, 250);
	f = ll_channel_poll(v[0]);
	assert_int_equal(f & LL_CHANNEL_STOP, 0);
	record = ll_channel_record(v[0]);
	assert_string_equal(record, "");
	f = ll_channel_done(v[0], 0, 1);
	assert_true(f & LL_CHANNEL_GONE);
	assert_false(f & (LL_CHANNEL_STOP | LL_CHANNEL_VERDICT));
	assert_null(ll_channel_verdict(v[0], NULL));
	ll_channel_close(v[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_failure_not_consequence),
		cmocka_unit_test(test_signal_first),
		cmocka_unit_test(test_tie),
		cmocka_unit_test(test_only_consequences),
		cmocka_unit_test(test_node_left_first),
		cmocka_unit_test(test_hang_verdict),
		cmocka_unit_test(test_exit_line),
		cmocka_unit_test(test_loopback_failure),
		cmocka_unit_test(test_loopback_alien_then_lost),
		cmocka_unit_test(test_loopback_end),
		cmocka_unit_test(test_loopback_node_left),
		cmocka_unit_test(test_loopback_node_left_gathering),
		cmocka_unit_test(test_loopback_close_after_done),
	};

	return cmocka_run_group_tests(tests, setup_port, NULL);
}
