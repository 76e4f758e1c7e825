/* The Prolog's plumbing (launcher/slurm-prolog.c): children with deadlines that are
 * always reaped, the spawn of scontrol without a shell, where scontrol is looked for,
 * and the state directory's modes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "llmlaunch/probe.h"
#include "llmlaunch/slurm.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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
	assert_int_equal(ll_spawn_bounded(missing, 10, &err), -ENOEXEC);
	assert_string_equal(err.message, "cannot run '/nonexistent/scontrol'");
	ll_error_clear(&err);
	assert_no_children();
}

static void test_find_scontrol(void **state)
{
	char dir[] = "/tmp/ll-test-scontrol-XXXXXX";
	char *path, *found, *old = getenv("PATH") ? ll_strdup(getenv("PATH")) : NULL;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	path = ll_asprintf("%s/scontrol", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\n", f);
	fclose(f);
	/* Not executable yet: a hint that is no program is refused. */
	assert_null(ll_slurm_find_scontrol(path));
	assert_int_equal(chmod(path, 0755), 0);
	found = ll_slurm_find_scontrol(path);
	assert_string_equal(found, path);
	free(found);
	/* From $PATH; relative entries are never searched (the Prolog's cwd is not ours). */
	assert_int_equal(chdir(dir), 0);
	setenv("PATH", ".:relative/bin", 1);
	found = ll_slurm_find_scontrol(NULL);
	assert_true(found == NULL || strncmp(found, dir, strlen(dir)) != 0);
	free(found);
	setenv("PATH", dir, 1);
	found = ll_slurm_find_scontrol(NULL);
	assert_string_equal(found, path);
	free(found);
	assert_int_equal(chdir("/"), 0);
	if (old)
		setenv("PATH", old, 1);
	free(old);
	unlink(path);
	rmdir(dir);
	free(path);
}

static void test_save_snapshot(void **state)
{
	char dir[] = "/tmp/ll-test-state-XXXXXX";
	char *sub, *path = NULL, *nested;
	hwloc_topology_t topo;
	struct ll_error err = { 0 };
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(dir));
	sub = ll_asprintf("%s/state", dir);
	assert_int_equal(hwloc_topology_init(&topo), 0);
	assert_int_equal(hwloc_topology_set_synthetic(topo, "pack:1 core:2 pu:1"), 0);
	assert_int_equal(hwloc_topology_load(topo), 0);
	umask(077); /* the modes must not depend on root's umask */
	assert_int_equal(ll_slurm_save_snapshot(topo, sub, &path, &err), 0);
	umask(022);
	nested = ll_asprintf("%s/snapshot.xml", sub);
	assert_string_equal(path, nested);
	free(nested);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0755);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_true(st.st_size > 100);
	/* A missing parent is not created: the admin named the wrong place. */
	nested = ll_asprintf("%s/no/such", dir);
	assert_int_equal(ll_slurm_save_snapshot(topo, nested, NULL, &err), -ENOENT);
	assert_non_null(strstr(err.message, "cannot create state directory"));
	assert_string_equal(err.hint, "create its parent or pass --state-dir DIR");
	ll_error_clear(&err);
	hwloc_topology_destroy(topo);
	unlink(path);
	rmdir(sub);
	rmdir(dir);
	free(path);
	free(sub);
	free(nested);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bounded_output_and_status),
		cmocka_unit_test(test_bounded_timeout_kills),
		cmocka_unit_test(test_bounded_signal_status),
		cmocka_unit_test(test_bounded_output_capped),
		cmocka_unit_test(test_spawn),
		cmocka_unit_test(test_find_scontrol),
		cmocka_unit_test(test_save_snapshot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
