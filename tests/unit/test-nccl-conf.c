/* NCCL's configuration files read as NCCL reads them (launcher/profile/nccl-conf.c,
 * NCCL src/misc/param.cc setEnvFile and initEnvFunc): the line syntax, the order of
 * the files, and what the planner makes of them (launcher/plan/plan-conf.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "llmlaunch/file.h"
#include "llmlaunch/nccl-conf.h"

static void assert_entry(const struct ll_nccl_conf *c, size_t i, const char *name, const char *value,
			 const char *origin)
{
	assert_true(i < c->n_entries);
	assert_string_equal(c->entries[i].name, name);
	assert_string_equal(c->entries[i].value, value);
	assert_string_equal(c->entries[i].origin, origin);
}

static void test_parse(void **state)
{
	struct ll_nccl_conf c = { 0 };
	char long_value[1100];

	(void)state;
	memset(long_value, 'x', sizeof(long_value) - 1);
	long_value[sizeof(long_value) - 1] = '\0';
	ll_nccl_conf_parse(&c,
			   "# comment\n"
			   "NCCL_IB_HCA=mlx5_0\n"
			   "\n"
			   "no equals sign\n"
			   "  # not a comment: '#' only counts in the first column\n"
			   "NCCL_TOPO_FILE=/opt/microsoft/ndv4/topo.xml\r\n"
			   "export NCCL_DEBUG=WARN\n"
			   "NCCL_SOCKET_IFNAME = eth0\n"
			   "NCCL_NET=\"AWS Libfabric\"\n"
			   "NCCL_EMPTY=\n"
			   "NCCL_A=b=c",
			   "/etc/nccl.conf");
	assert_int_equal(c.n_entries, 7);
	assert_entry(&c, 0, "NCCL_IB_HCA", "mlx5_0", "/etc/nccl.conf:2");
	/* A CR before the newline is dropped, as NCCL does. */
	assert_entry(&c, 1, "NCCL_TOPO_FILE", "/opt/microsoft/ndv4/topo.xml", "/etc/nccl.conf:6");
	/* Nothing is trimmed or unquoted: NCCL takes the bytes as they are. */
	assert_entry(&c, 2, "export NCCL_DEBUG", "WARN", "/etc/nccl.conf:7");
	assert_entry(&c, 3, "NCCL_SOCKET_IFNAME ", " eth0", "/etc/nccl.conf:8");
	assert_entry(&c, 4, "NCCL_NET", "\"AWS Libfabric\"", "/etc/nccl.conf:9");
	assert_entry(&c, 5, "NCCL_EMPTY", "", "/etc/nccl.conf:10");
	/* The first '=' ends the name; no final newline is needed. */
	assert_entry(&c, 6, "NCCL_A", "b=c", "/etc/nccl.conf:11");
	ll_nccl_conf_release(&c);

	/* Values are cut at 1023 bytes (NCCL's envValue[1024]). */
	{
		char *text = ll_asprintf("NCCL_LONG=%s\n", long_value);

		ll_nccl_conf_parse(&c, text, "f");
		assert_int_equal(c.n_entries, 1);
		assert_int_equal(strlen(c.entries[0].value), 1023);
		free(text);
		ll_nccl_conf_release(&c);
	}
	ll_nccl_conf_release(NULL);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* NCCL_CONF_FILE replaces ~/.nccl.conf; /etc/nccl.conf comes after either. */
static void test_load_order(void **state)
{
	char dir[] = "/tmp/ll-nccl-conf.XXXXXX";
	struct ll_nccl_conf c = { 0 };
	char *home, *etc, *conf, *user, *etcfile, *missing;

	(void)state;
	assert_non_null(mkdtemp(dir));
	home = ll_asprintf("%s/home", dir);
	etc = ll_asprintf("%s/etc", dir);
	assert_int_equal(mkdir(home, 0755), 0);
	assert_int_equal(mkdir(etc, 0755), 0);
	user = ll_asprintf("%s/.nccl.conf", home);
	conf = ll_asprintf("%s/job.conf", dir);
	etcfile = ll_asprintf("%s/nccl.conf", etc);
	missing = ll_asprintf("%s/missing.conf", dir);
	write_file(user, "NCCL_IB_HCA=from_home\n");
	write_file(conf, "NCCL_IB_HCA=from_conf_file\n");
	write_file(etcfile, "NCCL_IB_HCA=from_etc\nNCCL_TOPO_FILE=/etc/topo.xml\n");

	ll_nccl_conf_load(&c, NULL, home, dir, true);
	assert_int_equal(c.n_entries, 3);
	{
		char *o = ll_asprintf("%s:1", user);

		assert_entry(&c, 0, "NCCL_IB_HCA", "from_home", o);
		free(o);
	}
	/* Below the fsroot, shown as the node's own path. */
	assert_string_equal(c.entries[1].origin, "/etc/nccl.conf:1");
	assert_null(c.unreadable);
	ll_nccl_conf_release(&c);

	ll_nccl_conf_load(&c, conf, home, dir, true);
	assert_int_equal(c.n_entries, 3);
	assert_string_equal(c.entries[0].value, "from_conf_file");
	assert_string_equal(c.entries[1].value, "from_etc");
	ll_nccl_conf_release(&c);

	/* Another machine's snapshot: its /etc is not ours to read. */
	ll_nccl_conf_load(&c, conf, home, dir, false);
	assert_int_equal(c.n_entries, 1);
	ll_nccl_conf_release(&c);

	/* An unreadable NCCL_CONF_FILE: recorded, and ~/.nccl.conf is not read instead. */
	ll_nccl_conf_load(&c, missing, home, dir, true);
	assert_string_equal(c.unreadable, missing);
	assert_int_equal(c.n_entries, 2);
	assert_string_equal(c.entries[0].value, "from_etc");
	assert_string_equal(c.unreadable_why, "No such file or directory");
	assert_false(c.unreadable_blocks);
	ll_nccl_conf_release(&c);

	/* Not a regular file: NCCL fopen()s and fgets() whatever it is, so a FIFO
	 * blocks it and /dev/zero never ends. Recorded as such, never waited on. A
	 * directory only fails NCCL's first read. */
	{
		char *fifo = ll_asprintf("%s/fifo.conf", dir);

		assert_int_equal(mkfifo(fifo, 0600), 0);
		ll_nccl_conf_load(&c, fifo, home, dir, true);
		assert_string_equal(c.unreadable, fifo);
		assert_string_equal(c.unreadable_why, "a FIFO");
		assert_true(c.unreadable_blocks);
		ll_nccl_conf_release(&c);
		ll_nccl_conf_load(&c, "/dev/zero", home, dir, true);
		assert_string_equal(c.unreadable_why, "a character device");
		assert_true(c.unreadable_blocks);
		ll_nccl_conf_release(&c);
		ll_nccl_conf_load(&c, home, home, dir, true);
		assert_string_equal(c.unreadable_why, "a directory");
		assert_false(c.unreadable_blocks);
		ll_nccl_conf_release(&c);
		unlink(fifo);
		free(fifo);
	}

	unlink(user);
	unlink(conf);
	unlink(etcfile);
	rmdir(home);
	rmdir(etc);
	rmdir(dir);
	free(home);
	free(etc);
	free(user);
	free(conf);
	free(etcfile);
	free(missing);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_load_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
