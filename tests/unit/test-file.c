/* common/file.c: whole small files are read only when they are regular files, so a
 * FIFO, a device or a directory planted where a profile, a snapshot or a sysfs value
 * is expected can neither hang nor flood the reader. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "llmlaunch/file.h"
#include "llmlaunch/util.h"

static char dir[] = "/tmp/ll-test-file-XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	static const char *const names[] = { "fifo", "text", "nul", "big" };

	(void)state;
	for (size_t i = 0; i < LL_ARRAY_SIZE(names); i++) {
		_cleanup_free_ char *p = ll_asprintf("%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
	return 0;
}

static char *path_of(const char *name)
{
	return ll_asprintf("%s/%s", dir, name);
}

static void write_file(const char *name, const char *data, size_t len)
{
	_cleanup_free_ char *p = path_of(name);
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void test_not_regular(void **state)
{
	_cleanup_free_ char *fifo = path_of("fifo");
	char *s = NULL;

	(void)state;
	/* A FIFO nobody writes: open() would wait forever without O_NONBLOCK. */
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(ll_read_file(fifo, 4096, &s), -EINVAL);
	assert_string_equal(ll_file_strerror(-EINVAL), "not a regular file (a FIFO, socket or device)");
	/* A device that never ends, and a directory. */
	assert_int_equal(ll_read_file("/dev/zero", 4096, &s), -EINVAL);
	assert_int_equal(ll_read_file(dir, 4096, &s), -EISDIR);
	assert_string_equal(ll_file_strerror(-EISDIR), strerror(EISDIR));
	assert_int_equal(ll_open_regular(fifo, 0, NULL), -EINVAL);
	assert_null(s);
}

static void test_regular(void **state)
{
	_cleanup_free_ char *text = path_of("text"), *nul = path_of("nul"), *big = path_of("big");
	char *s = NULL, *big_data;
	size_t len = 0;

	(void)state;
	write_file("text", "hello\n", 6);
	assert_int_equal(ll_read_file(text, 4096, &s), 0);
	assert_string_equal(s, "hello\n");
	free(s);
	assert_int_equal(ll_read_line(text, &s), 0);
	assert_string_equal(s, "hello");
	free(s);

	/* NUL bytes: ll_read_file refuses the text, ll_read_file_n gives the true length. */
	write_file("nul", "a\0b", 3);
	assert_int_equal(ll_read_file(nul, 4096, &s), -EBADMSG);
	assert_int_equal(ll_read_file_n(nul, 4096, &s, &len), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(s, "a\0b", 3);
	free(s);

	/* The cap: refused before reading when the size says so, at the limit it reads. */
	big_data = ll_malloc(10000);
	memset(big_data, 'x', 10000);
	write_file("big", big_data, 10000);
	free(big_data);
	assert_int_equal(ll_read_file(big, 9999, &s), -EFBIG);
	assert_int_equal(ll_read_file_n(big, 10000, &s, &len), 0);
	assert_int_equal(len, 10000);
	free(s);
	/* /proc files report size 0 and are read to their end. */
	assert_int_equal(ll_read_file("/proc/self/status", 1 << 20, &s), 0);
	assert_non_null(strstr(s, "Pid:"));
	free(s);
}

/* A read that runs out of descriptors is recorded, so that the probe does not take
 * it for "absent"; ENOENT is an answer and is not. */
static void test_resource_failure_noted(void **state)
{
	struct rlimit old, low;
	char *text = NULL;
	int fds[64], n = 0;

	(void)state;
	ll_io_resource_take();
	assert_int_equal(ll_read_file("/nonexistent/x", 16, &text), -ENOENT);
	assert_int_equal(ll_io_resource_take(), 0);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 16;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (n < 64 && (fds[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		n++;
	assert_int_equal(ll_read_file("/proc/self/status", 1 << 20, &text), -EMFILE);
	while (n > 0)
		close(fds[--n]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(ll_io_resource_take(), -EMFILE);
	assert_int_equal(ll_io_resource_take(), 0);
}

/* Replacing a file inside an open directory never writes through a link there. */
static void test_replace_at(void **state)
{
	char tdir[] = "/tmp/ll-test-replace-XXXXXX";
	char *text = NULL;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(tdir));
	fd = open(tdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ll_file_replace_at(fd, "a.txt", "one\n", 4, 0644), 0);
	assert_int_equal(ll_file_replace_at(fd, "a.txt", "two\n", 4, 0644), 0);
	assert_int_equal(ll_file_replace_at(fd, "x/a.txt", "two\n", 4, 0644), -EINVAL);
	{
		char *p = ll_asprintf("%s/a.txt", tdir);
		assert_int_equal(ll_read_file(p, 16, &text), 0);
		assert_string_equal(text, "two\n");
		free(text);
		unlink(p);
		free(p);
	}
	close(fd);
	assert_int_equal(rmdir(tdir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_regular),
		cmocka_unit_test(test_regular),
		cmocka_unit_test(test_resource_failure_noted),
		cmocka_unit_test(test_replace_at),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
