/* The version string NCCL compiles into itself (probe/nccl-lib.c,
 * ll_nccl_version_in): found among other bytes and NUL bytes, the log format string
 * "NCCL version %s" and truncated or oversized versions refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "llmlaunch/nccl-lib.h"

static void test_version_string(void **state)
{
	static const char lib[] = "\177ELF\0\0NCCL version %s\0junk NCCL version 2.21.5+cuda12.4\0tail";
	static const char bare[] = "NCCL version 2.28.9";
	int a = -1, b = -1, c = -1;

	(void)state;
	assert_int_equal(ll_nccl_version_in(lib, sizeof(lib) - 1, &a, &b, &c), 0);
	assert_int_equal(a, 2);
	assert_int_equal(b, 21);
	assert_int_equal(c, 5);
	assert_int_equal(ll_nccl_version_in(bare, sizeof(bare) - 1, &a, &b, &c), 0);
	assert_int_equal(b, 28);
	assert_int_equal(c, 9);
	/* Cut inside the version: "2.2" is no version. */
	assert_int_equal(ll_nccl_version_in(bare, sizeof(bare) - 3, &a, &b, &c), -ENOENT);
	assert_int_equal(ll_nccl_version_in("NCCL version %s", 15, &a, &b, &c), -ENOENT);
	assert_int_equal(ll_nccl_version_in("NCCL version 2.21", 17, &a, &b, &c), -ENOENT);
	assert_int_equal(ll_nccl_version_in("NCCL version 2.21.12345", 23, &a, &b, &c), -ENOENT);
	assert_int_equal(ll_nccl_version_in("", 0, &a, &b, &c), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_string),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
