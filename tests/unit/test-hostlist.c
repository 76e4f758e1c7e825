/* Slurm hostlist syntax: expansion order, zero padding, bracket groups, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "llmlaunch/hostlist.h"

/* Expand and join with spaces, so each case is one comparison. */
static char *expand_joined(const char *list, size_t limit)
{
	struct ll_error err = { 0 };
	char **hosts = NULL;
	size_t n = 0;
	struct ll_buf b;

	assert_int_equal(ll_hostlist_expand(list, limit, &hosts, &n, &err), 0);
	assert_null(err.message);
	ll_buf_init(&b);
	for (size_t i = 0; i < n; i++) {
		if (i)
			ll_buf_addc(&b, ' ');
		ll_buf_add(&b, hosts[i]);
	}
	ll_hostlist_free(hosts, n);
	char *s = ll_buf_detach(&b);
	ll_buf_release(&b);
	return s;
}

static void check(const char *list, const char *expect)
{
	char *got = expand_joined(list, 0);
	assert_string_equal(got, expect);
	free(got);
}

static void test_plain(void **state)
{
	(void)state;
	check("login1", "login1");
	check("a,b,c", "a b c");
	check("a b", "a b");
	check("", "");
	check("a,,b,", "a b");
}

static void test_ranges(void **state)
{
	(void)state;
	check("gpu[01-04,07],login1", "gpu01 gpu02 gpu03 gpu04 gpu07 login1");
	check("n[1-3]", "n1 n2 n3");
	check("n[8-11]", "n8 n9 n10 n11");
	check("n[08-11]", "n08 n09 n10 n11");
	check("n[098-101]", "n098 n099 n100 n101");
	check("n[5]", "n5");
	check("n[3,1]", "n3 n1");
	check("[1-2]", "1 2");
	check("node-[1-2].ib", "node-1.ib node-2.ib");
}

static void test_multiple_groups(void **state)
{
	(void)state;
	check("rack[1-2]-n[01-03]", "rack1-n01 rack1-n02 rack1-n03 rack2-n01 rack2-n02 rack2-n03");
	check("r[1,3]s[9-10]x,y[0-1]", "r1s9x r1s10x r3s9x r3s10x y0 y1");
}

static void test_count_and_limit(void **state)
{
	struct ll_error err = { 0 };
	size_t n = 0;
	char *first = NULL, *got;

	(void)state;
	assert_int_equal(ll_hostlist_count("gpu[01-04,07],login1", &n, &err), 0);
	assert_int_equal(n, 6);
	assert_int_equal(ll_hostlist_count("a[0-999]b[0-999]c[0-9]", &n, &err), 0);
	assert_int_equal(n, 10000000);

	/* Far above the cap: count works, full expansion refuses, a limit is fine. */
	assert_int_equal(ll_hostlist_expand("a[0-999]b[0-999]c[0-9]", 0, (char ***)&first, &n, &err), -E2BIG);
	assert_non_null(strstr(err.message, "10000000 hosts"));
	ll_error_clear(&err);
	got = expand_joined("a[0-999]b[0-999]c[0-9]", 3);
	assert_string_equal(got, "a0b0c0 a0b0c1 a0b0c2");
	free(got);

	assert_int_equal(ll_hostlist_first("gpu[07-09],login1", &first, &err), 0);
	assert_string_equal(first, "gpu07");
	free(first);
	assert_int_equal(ll_hostlist_first("", &first, &err), -EINVAL);
	assert_string_equal(err.message, "hostlist '' names no host");
	ll_error_clear(&err);
}

static void check_error(const char *list, const char *expect)
{
	struct ll_error err = { 0 };
	char **hosts = NULL;
	size_t n = 0;

	assert_int_equal(ll_hostlist_expand(list, 0, &hosts, &n, &err), -EINVAL);
	assert_non_null(err.message);
	assert_string_equal(err.message, expect);
	assert_non_null(err.hint);
	ll_error_clear(&err);
}

static void test_errors(void **state)
{
	(void)state;
	check_error("n[1-3", "invalid hostlist 'n[1-3' at character 6: missing ']'");
	check_error("n1-3]", "invalid hostlist 'n1-3]' at character 5: ']' without '['");
	check_error("n[3-1]", "invalid hostlist 'n[3-1]' at character 5: range goes backwards");
	check_error("n[]", "invalid hostlist 'n[]' at character 3: expected a number");
	check_error("n[a]", "invalid hostlist 'n[a]' at character 3: expected a number");
	check_error("n[1[2]]", "invalid hostlist 'n[1[2]]' at character 4: unexpected character in brackets");
	check_error("n[1-]", "invalid hostlist 'n[1-]' at character 5: expected a number");
	check_error("n[1234567890123456789]",
		    "invalid hostlist 'n[1234567890123456789]' at character 3: number too long");
}

/* Compress, then expand again: the expression and the names it stands for. */
static void check_compress(const char *joined, const char *expect, const char *expanded)
{
	char **names = NULL;
	size_t n = 0;
	char *got, *back;
	struct ll_error err = { 0 };

	assert_int_equal(ll_hostlist_expand(joined, 0, &names, &n, &err), 0);
	got = ll_hostlist_compress(names, n);
	assert_string_equal(got, expect);
	back = expand_joined(got, 0);
	assert_string_equal(back, expanded);
	free(back);
	free(got);
	ll_hostlist_free(names, n);
}

static void test_compress(void **state)
{
	(void)state;
	check_compress("", "", "");
	check_compress("n3", "n3", "n3");
	check_compress("n3,n1,n2,n7", "n[1-3,7]", "n1 n2 n3 n7");
	check_compress("gpu07,login1,gpu01,gpu02", "gpu[01-02,07],login1", "gpu01 gpu02 gpu07 login1");
	/* Another digit count is another group, as the names differ in width. */
	check_compress("n9,n10,n11", "n9,n[10-11]", "n9 n10 n11");
	check_compress("a,b", "a,b", "a b");
	check_compress("rack1-n01,rack1-n02,n5,n5", "rack1-n[01-02],n5", "rack1-n01 rack1-n02 n5");
	/* Groups in the order of their first name, names without digits where they were,
	 * a prefix that is another's prefix its own group. */
	check_compress("x,r2-n3,login,r1-n1,r2-n1,x,r-n1,r1-n2", "x,r2-n[1,3],login,r1-n[1-2],x,r-n1",
		       "x r2-n1 r2-n3 login r1-n1 r1-n2 x r-n1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_multiple_groups),
		cmocka_unit_test(test_count_and_limit),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_compress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
