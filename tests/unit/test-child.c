/* Child processes with deadlines (common/child.c): always reaped, never left behind,
 * exec errors reported as such, one wait-status mapping for every caller. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "llmlaunch/child.h"
#include "llmlaunch/clock.h"

static double now(void)
{
	return ll_now_s();
}

/* No child of ours is left, not even a zombie. */
static void assert_no_children(void)
{
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

static int child_hello(void *data, int fd)
{
	(void)data;
	assert_int_equal(write(fd, "hello\n", 6), 6);
	return 3;
}

static int child_sleep(void *data, int fd)
{
	(void)fd;
	sleep(*(int *)data);
	return 0;
}

static int child_crash(void *data, int fd)
{
	(void)data;
	(void)fd;
	raise(SIGKILL);
	return 0;
}

static int child_flood(void *data, int fd)
{
	static char block[4096];

	(void)data;
	memset(block, 'x', sizeof(block));
	for (int i = 0; i < 40; i++) /* 160 KiB: more than the pipe and the cap */
		if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block))
			return 1;
	return 0;
}

static void test_bounded_output_and_status(void **state)
{
	char *out = NULL;
	int status = -1;

	(void)state;
	assert_int_equal(ll_run_bounded(child_hello, NULL, 10, &out, &status, NULL), 0);
	assert_string_equal(out, "hello\n");
	assert_int_equal(status, 3);
	free(out);
	assert_no_children();
}

static void test_bounded_timeout_kills(void **state)
{
	struct ll_error err = { 0 };
	int secs = 30, status = -1;
	char *out = NULL;
	double t0 = now();

	(void)state;
	assert_int_equal(ll_run_bounded(child_sleep, &secs, 0.3, &out, &status, &err), -ETIMEDOUT);
	assert_true(now() - t0 < 5.0);
	assert_string_equal(err.message, "did not finish within 0.3 s and was killed");
	assert_non_null(out);
	free(out);
	ll_error_clear(&err);
	assert_no_children();
}

static void test_bounded_signal_status(void **state)
{
	char *out = NULL;
	int status = -1;

	(void)state;
	assert_int_equal(ll_run_bounded(child_crash, NULL, 10, &out, &status, NULL), 0);
	assert_int_equal(status, 128 + SIGKILL);
	assert_string_equal(out, "");
	free(out);
	assert_no_children();
}

static void test_bounded_output_capped(void **state)
{
	char *out = NULL;
	int status = -1;

	(void)state;
	assert_int_equal(ll_run_bounded(child_flood, NULL, 10, &out, &status, NULL), 0);
	assert_int_equal(status, 0); /* it was never blocked on a full pipe */
	assert_int_equal(strlen(out), 64 * 1024);
	free(out);
	assert_no_children();
}

static void test_spawn(void **state)
{
	char *exit4[] = { "/bin/sh", "-c", "exit 4", NULL };
	char *sleeper[] = { "/bin/sleep", "30", NULL };
	char *relative[] = { "sh", "-c", "true", NULL };
	char *missing[] = { "/nonexistent/scontrol", NULL };
	struct ll_error err = { 0 };
	double t0;

	(void)state;
	assert_int_equal(ll_spawn_bounded(exit4, 10, NULL), 4);
	t0 = now();
	assert_int_equal(ll_spawn_bounded(sleeper, 0.2, &err), -ETIMEDOUT);
	assert_true(now() - t0 < 5.0);
	assert_string_equal(err.message, "'/bin/sleep' did not finish within 0.2 s and was killed");
	assert_int_equal(ll_spawn_bounded(relative, 10, &err), -EINVAL);
	assert_string_equal(err.message, "'sh' is not an absolute path");
	/* The exec error itself, not a status 127 to guess from. */
	assert_int_equal(ll_spawn_bounded(missing, 10, &err), -ENOENT);
	assert_string_equal(err.message, "cannot run '/nonexistent/scontrol': No such file or directory");
	ll_error_clear(&err);
	assert_no_children();
}

static void test_run_quiet(void **state)
{
	char *ok[] = { (char *)"/bin/sh", (char *)"-c", (char *)"echo noise; exit 0", NULL };
	char *one[] = { (char *)"/bin/sh", (char *)"-c", (char *)"echo noise >&2; exit 1", NULL };
	char *slow[] = { (char *)"/bin/sh", (char *)"-c", (char *)"exec sleep 10", NULL };
	struct ll_error err = { 0 };
	double t0;
	int st = -1;

	(void)state;
	assert_int_equal(ll_run_quiet(ok, 5, &st, &err), 0);
	assert_int_equal(st, 0);
	assert_int_equal(ll_run_quiet(one, 5, &st, &err), 0);
	assert_int_equal(st, 1);
	t0 = now();
	assert_int_equal(ll_run_quiet(slow, 0.2, &st, &err), -ETIMEDOUT);
	assert_true(now() - t0 < 2);
	assert_string_equal(err.message, "'/bin/sh' did not finish within 0.2 s and was killed");
	ll_error_clear(&err);
	assert_no_children();
}

/* One mapping: the supervisor and the Prolog used to differ for a status that is
 * neither an exit nor a signal (255 against 1). */
static void test_exit_status(void **state)
{
	(void)state;
	assert_int_equal(ll_exit_status(0), 0);
	assert_int_equal(ll_exit_status(3 << 8), 3);
	assert_int_equal(ll_exit_status(SIGTERM), 128 + SIGTERM);
	assert_int_equal(ll_exit_status((SIGSTOP << 8) | 0x7f), 1); /* stopped: not ended */
}

/* The spawn options: environment, quiet output, a process group of its own. */
static void test_spawn_options(void **state)
{
	char *argv[] = { "/bin/sh", "-c", "[ \"$LL_T\" = yes ] && [ \"$(ps -o pgid= $$ | tr -d ' ')\" = $$ ] && echo noise", NULL };
	char *env[] = { "LL_T=yes", "PATH=/usr/bin:/bin", NULL };
	struct ll_spawn_options o = { .envp = env, .new_group = true, .stdio = LL_STDIO_QUIET };
	struct ll_error err = { 0 };
	int st = -1;
	pid_t pid;

	(void)state;
	pid = ll_spawn(argv, &o, &err);
	assert_true(pid > 0);
	assert_int_equal(ll_child_wait(pid, "sh", 5, &st, &err), 0);
	assert_int_equal(st, 0);
	env[0] = "LL_T=no";
	pid = ll_spawn(argv, &o, &err);
	assert_int_equal(ll_child_wait(pid, "sh", 5, &st, &err), 0);
	assert_int_equal(st, 1);
	assert_no_children();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bounded_output_and_status),
		cmocka_unit_test(test_bounded_timeout_kills),
		cmocka_unit_test(test_bounded_signal_status),
		cmocka_unit_test(test_bounded_output_capped),
		cmocka_unit_test(test_spawn),
		cmocka_unit_test(test_run_quiet),
		cmocka_unit_test(test_exit_status),
		cmocka_unit_test(test_spawn_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
