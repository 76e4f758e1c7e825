/* The first failure among the workers' exit records, its cause, and where the ranks
 * of a hung job wait (launcher/launch/failure.c). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "llmlaunch/file.h"
#include "llmlaunch/launch.h"

/* A record as a worker writes it, with a chosen time (ns). */
static void record(const char *dir, int local_rank, int attempt, const char *first_line, long long t,
		   const char *cause)
{
	_cleanup_free_ char *path = ll_asprintf("%s/rank-%d-attempt-%d", dir, local_rank, attempt);
	_cleanup_free_ char *text = ll_asprintf("%s %lld\nrank %d\nhost n%d\n%s%s%s", first_line, t, local_rank + 10,
						local_rank + 1, cause ? "cause " : "", cause ? cause : "",
						cause ? "\n" : "");

	assert_int_equal(ll_file_replace(path, text, strlen(text), 0600), 0);
}

static char *make_dir(void)
{
	char *d = ll_strdup("/tmp/ll-test-failure.XXXXXX");

	assert_non_null(mkdtemp(d));
	return d;
}

static void remove_dir(char *d)
{
	_cleanup_free_ char *cmd = ll_asprintf("rm -rf '%s'", d);

	assert_int_equal(system(cmd), 0);
	free(d);
}

static void find(const char *dir, struct ll_worker_exit **v, size_t *n, struct ll_failure *f)
{
	assert_int_equal(ll_worker_exits_read(dir, v, n), 0);
	ll_failure_find(*v, *n, f);
}

static void test_first_failure(void **state)
{
	char *dir = make_dir();
	struct ll_worker_exit *v;
	struct ll_failure f;
	size_t n;
	char *text;

	(void)state;
	setenv("TZ", "UTC", 1);
	tzset();
	/* The victim's record is a millisecond earlier than the failing rank's (the two
	 * race at exit): its cause makes it a consequence all the same. */
	record(dir, 0, 0, "exit 1", 1000000000000LL,
	       "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:1");
	record(dir, 1, 0, "exit 1", 1000001000000LL, "ValueError: boom");
	record(dir, 2, 0, "signal 15", 1000002000000LL, NULL);
	record(dir, 3, 0, "exit 0", 1000003000000LL, NULL);
	find(dir, &v, &n, &f);
	assert_int_equal(n, 4);
	assert_non_null(f.first);
	assert_int_equal(f.first->local_rank, 1);
	assert_int_equal(f.first->rank, 11);
	assert_string_equal(f.first->host, "n2");
	assert_int_equal(f.status, 1);
	assert_int_equal(f.n_after, 2);
	text = ll_failure_text(&f, false);
	assert_string_equal(text, "rank 11 on n2 failed first (exit 1, 00:16:40): ValueError: boom; 2 other ranks "
				  "stopped after it");
	free(text);
	ll_worker_exits_free(v, n);

	/* A later attempt replaces the earlier one: the rank killed there is first,
	 * the SIGTERM after it (torchrun stopping the rest) a consequence. */
	record(dir, 0, 1, "signal 15", 1000009000000LL, NULL);
	record(dir, 1, 1, "signal 9", 1000008000000LL, NULL);
	find(dir, &v, &n, &f);
	assert_int_equal(f.first->local_rank, 1);
	assert_int_equal(f.status, 128 + SIGKILL);
	assert_int_equal(f.n_after, 1);
	text = ll_failure_text(&f, false);
	assert_string_equal(text, "rank 11 on n2 failed first (signal KILL, 00:16:40): killed by SIGKILL; 1 other rank "
				  "stopped after it");
	free(text);
	ll_worker_exits_free(v, n);

	/* A SIGTERM with no failure before it is the failure (someone stopped a rank). */
	record(dir, 0, 2, "signal 15", 1000010000000LL, NULL);
	record(dir, 1, 2, "exit 1", 1000011000000LL, "RuntimeError: Connection reset by peer");
	find(dir, &v, &n, &f);
	assert_int_equal(f.first->local_rank, 0);
	assert_int_equal(f.status, 128 + SIGTERM);
	ll_worker_exits_free(v, n);

	/* Only consequences: the earliest is named, not nothing. */
	record(dir, 0, 3, "exit 1", 1000013000000LL, "RuntimeError: Connection closed by peer");
	record(dir, 1, 3, "exit 1", 1000012000000LL, "RuntimeError: NCCL communicator was aborted on rank 1.");
	find(dir, &v, &n, &f);
	assert_int_equal(f.first->local_rank, 1);
	assert_true(f.consequence);
	/* On one of several nodes, that means the failure began elsewhere. */
	text = ll_failure_text(&f, true);
	assert_string_equal(text, "rank 11 on n2 failed because another rank did (exit 1, 00:16:40): RuntimeError: NCCL "
				  "communicator was aborted on rank 1.; 1 other rank stopped after it; the first failure "
				  "was on another node");
	free(text);
	ll_worker_exits_free(v, n);

	/* Everything well: no failure. */
	record(dir, 0, 4, "exit 0", 1000014000000LL, NULL);
	find(dir, &v, &n, &f);
	assert_null(f.first);
	assert_null(ll_failure_text(&f, false));
	ll_worker_exits_free(v, n);
	remove_dir(dir);
}

static void test_record_roundtrip(void **state)
{
	char *dir = make_dir();
	struct ll_worker_exit *v;
	struct ll_error err = { 0 };
	size_t n;

	(void)state;
	/* A cause with a newline and a tab stays on its line. */
	assert_int_equal(ll_worker_end_write(dir,
					     &(struct ll_worker_end){ .local_rank = 2,
								      .rank = 7,
								      .attempt = 0,
								      .wstatus = 3 << 8,
								      .host = "gpu01",
								      .cause = "KeyError: 'a\nb'\tc" },
					     &err),
			 0);
	assert_int_equal(ll_worker_exits_read(dir, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].rank, 7);
	assert_int_equal(v[0].local_rank, 2);
	assert_false(v[0].signaled);
	assert_int_equal(v[0].code, 3);
	assert_string_equal(v[0].host, "gpu01");
	assert_string_equal(v[0].cause, "KeyError: 'a b' c");
	assert_int_equal(v[0].shutdown_signal, 0);
	ll_worker_exits_free(v, n);
	/* The older reader still reads the first line. */
	{
		int status = 0, rank = -1;

		assert_int_equal(ll_worker_status_collect(dir, &status, &rank), 1);
		assert_int_equal(status, 3);
		assert_int_equal(rank, 2);
	}
	/* A script that ended with 0, then an interpreter that died while shutting down:
	 * the record is the script's status, with the signal beside it, and no failure. */
	assert_int_equal(ll_worker_end_write(dir,
					     &(struct ll_worker_end){ .local_rank = 0,
								      .rank = 4,
								      .attempt = 1,
								      .wstatus = 0,
								      .shutdown_signal = SIGABRT,
								      .cause = "terminate called without an active exception" },
					     &err),
			 0);
	assert_int_equal(ll_worker_exits_read(dir, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_false(v[0].signaled);
	assert_int_equal(v[0].code, 0);
	assert_int_equal(v[0].shutdown_signal, SIGABRT);
	ll_worker_exits_free(v, n);
	{
		int status = 0, rank = -1;

		assert_int_equal(ll_worker_status_collect(dir, &status, &rank), 0);
	}
	remove_dir(dir);
}

static void check_cause(const char *output, const char *expected)
{
	char *c = ll_worker_cause_from_output(output, strlen(output));

	if (!expected)
		assert_null(c);
	else
		assert_string_equal(c, expected);
	free(c);
}

static void test_cause(void **state)
{
	(void)state;
	check_cause("step 1\nTraceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n"
		    "    raise ValueError('x')\nValueError: x\n",
		    "ValueError: x");
	/* Chained: the last traceback's exception; a message over several lines: its first. */
	check_cause("Traceback (most recent call last):\n  File \"a\", line 1, in f\nKeyError: 1\n\nDuring handling of "
		    "the above exception, another exception occurred:\n\nTraceback (most recent call last):\n"
		    "  File \"a\", line 2, in g\nRuntimeError: second\nmore text\n",
		    "RuntimeError: second");
	/* torch >= 2.2 prefixes each line of an uncaught exception with "[rankN]: " once
	 * the process group exists (empty lines stay empty): the verdict names the rank. */
	check_cause("step 1\n[rank1]: Traceback (most recent call last):\n[rank1]:   File \"t.py\", line 3, in "
		    "<module>\n[rank1]:     raise ValueError('rank 1 gave up')\n[rank1]: ValueError: rank 1 gave up\n",
		    "ValueError: rank 1 gave up");
	check_cause("[rank12]: Traceback (most recent call last):\n[rank12]:   File \"a\", line 1, in f\n[rank12]: "
		    "KeyError: 1\n\n[rank12]: During handling of the above exception, another exception occurred:\n\n"
		    "[rank12]: Traceback (most recent call last):\n[rank12]:   File \"a\", line 2, in g\n"
		    "[rank12]: RuntimeError: second\n",
		    "RuntimeError: second");
	check_cause("loading\n[rank0]: out of patience\n", "out of patience");
	/* Only that exact form is torch's: a line of the script's own keeps its brackets. */
	check_cause("[rank] done\n", "[rank] done");
	check_cause("[rank1]done\n", "[rank1]done");
	/* No traceback (a C++ abort, a message and exit): the last line written. */
	check_cause("loading\nterminate called after throwing an instance of 'c10::Error'\n  \n",
		    "terminate called after throwing an instance of 'c10::Error'");
	check_cause("", NULL);
	check_cause("\n \n", NULL);
	assert_true(ll_worker_cause_is_consequence("RuntimeError: [pair.cc:598] Connection closed by peer [::1]:5"));
	assert_true(ll_worker_cause_is_consequence("torch.distributed.elastic.multiprocessing.api.SignalException: "
						   "Process 4 got signal: 15"));
	assert_true(ll_worker_cause_is_consequence("DistBackendError: NCCL error: remote process exited or there "
						   "was a network error"));
	assert_false(ll_worker_cause_is_consequence("ValueError: boom"));
	assert_false(ll_worker_cause_is_consequence(NULL));
}

static void test_error_file(void **state)
{
	char *dir = make_dir();
	_cleanup_free_ char *path = ll_asprintf("%s/error.json", dir);
	static const char nested[] = "{\"message\": {\"message\": \"ValueError: boom\\nmore\", \"extraInfo\": "
				     "{\"py_callstack\": \"...\", \"timestamp\": \"1\"}}}";
	static const char flat[] = "{\"message\": \"OSError: disk full\"}";
	char *c;

	(void)state;
	assert_null(ll_worker_cause_from_error_file(path));
	assert_int_equal(ll_file_replace(path, nested, strlen(nested), 0600), 0);
	c = ll_worker_cause_from_error_file(path);
	assert_string_equal(c, "ValueError: boom");
	free(c);
	assert_int_equal(ll_file_replace(path, flat, strlen(flat), 0600), 0);
	c = ll_worker_cause_from_error_file(path);
	assert_string_equal(c, "OSError: disk full");
	free(c);
	assert_int_equal(ll_file_replace(path, "{", 1, 0600), 0);
	assert_null(ll_worker_cause_from_error_file(path));
	remove_dir(dir);
}

static void test_stacks(void **state)
{
	char *dir = make_dir();
	_cleanup_free_ char *script = ll_asprintf("%s/train.py", dir);
	static const char source[] = "import time\n\ndef main():\n    time.sleep(3600)\n    dist.all_reduce(t)\n";
	_cleanup_free_ char *sleeping = NULL, *waiting = NULL, *abort_dump = NULL;
	struct ll_rank_stack v[3];
	char *where, *text;

	(void)state;
	assert_int_equal(ll_file_replace(script, source, strlen(source), 0600), 0);
	/* faulthandler.register(..., all_threads=True): the thread that took the signal
	 * first as "Current thread", another thread after it. */
	sleeping = ll_asprintf("Current thread 0x00007f0000000001 (most recent call first):\n"
			       "  File \"%s\", line 4 in main\n  File \"%s\", line 9 in <module>\n\n"
			       "Thread 0x00007f0000000002 (most recent call first):\n"
			       "  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n",
			       script, script);
	waiting = ll_asprintf("Current thread 0x00007f0000000001 (most recent call first):\n"
			      "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 1541 "
			      "in all_reduce\n  File \"%s\", line 5 in main\n  File \"%s\", line 9 in <module>\n",
			      script, script);
	/* PYTHONFAULTHANDLER's dump on SIGABRT. */
	abort_dump = ll_asprintf("Fatal Python error: Aborted\n\nCurrent thread 0x00007f0000000001 (most recent call "
				 "first):\n  File \"%s\", line 4 in main\n\nExtension modules: torch._C (total: 1)\n",
				 script);
	where = ll_stack_where(sleeping);
	assert_string_equal(where, "time.sleep in train.py:4");
	free(where);
	where = ll_stack_where(waiting);
	assert_string_equal(where, "all_reduce in distributed_c10d.py:1541 (from train.py:5)");
	free(where);
	where = ll_stack_where(abort_dump);
	assert_string_equal(where, "time.sleep in train.py:4");
	free(where);
	assert_null(ll_stack_where("no dump here\n"));

	/* Two ranks, two places: the one outside torch.distributed keeps the other waiting. */
	v[0] = (struct ll_rank_stack){ .rank = 0, .text = waiting, .where = ll_stack_where(waiting) };
	v[1] = (struct ll_rank_stack){ .rank = 1, .text = sleeping, .where = ll_stack_where(sleeping) };
	assert_int_equal(ll_stacks_group(v, 2, &text), 1);
	assert_string_equal(text, "rank 1 waits in time.sleep in train.py:4, while rank 0 waits in all_reduce in "
				  "distributed_c10d.py:1541 (from train.py:5)");
	free(text);
	/* The majority decides where there is one. */
	v[2] = (struct ll_rank_stack){ .rank = 2, .text = sleeping, .where = ll_stack_where(sleeping) };
	v[0].text = sleeping;
	assert_int_equal(ll_stacks_group(v, 3, &text), 1);
	assert_string_equal(text, "rank 0 waits in all_reduce in distributed_c10d.py:1541 (from train.py:5), while "
				  "ranks 1,2 wait in time.sleep in train.py:4");
	free(text);
	assert_int_equal(ll_stacks_group(v + 1, 2, &text), 0);
	assert_string_equal(text, "every rank (2) waits in time.sleep in train.py:4");
	free(text);
	for (size_t i = 0; i < 3; i++)
		free(v[i].where);
	remove_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_failure), cmocka_unit_test(test_record_roundtrip),
		cmocka_unit_test(test_cause),         cmocka_unit_test(test_error_file),
		cmocka_unit_test(test_stacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
