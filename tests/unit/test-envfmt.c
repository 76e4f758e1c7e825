/* Quoting per format, byte for byte; the round trip through real bash, fish and
 * python-dotenv is tests/integration/env-quoting.sh. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "llmlaunch/envfmt.h"

static char *write_one(enum ll_env_format fmt, const char *name, const char *value, int expect_r)
{
	struct ll_envvar v = { name, value };
	struct ll_error err = { 0 };
	struct ll_buf b;

	ll_buf_init(&b);
	assert_int_equal(ll_env_write(fmt, &v, 1, &b, &err), expect_r);
	ll_error_clear(&err);
	return ll_buf_detach(&b);
}

static void check(enum ll_env_format fmt, const char *value, const char *expected)
{
	char *s = write_one(fmt, "V", value, 0);

	assert_string_equal(s, expected);
	free(s);
}

static void t_sh(void **state)
{
	(void)state;
	check(LL_ENV_SH, "=mlx5_0:1", "export V='=mlx5_0:1'\n");
	check(LL_ENV_SH, "it's $HOME \\n", "export V='it'\\''s $HOME \\n'\n");
	check(LL_ENV_SH, "", "export V=''\n");
	check(LL_ENV_SH, "a\nb", "export V='a\nb'\n");
}

static void t_fish(void **state)
{
	(void)state;
	check(LL_ENV_FISH, "it's a \\ $x", "set -gx V 'it\\'s a \\\\ $x'\n");
	check(LL_ENV_FISH, "", "set -gx V ''\n");
}

static void t_dotenv(void **state)
{
	char *s;
	(void)state;

	check(LL_ENV_DOTENV, "it's $X \\ y", "V='it\\'s $X \\\\ y'\n");
	check(LL_ENV_DOTENV, "\\'", "V='\\\\\\''\n");
	/* What python-dotenv cannot read back is refused, not altered. */
	s = write_one(LL_ENV_DOTENV, "V", "a\nb", -EINVAL);
	assert_string_equal(s, "");
	free(s);
	free(write_one(LL_ENV_DOTENV, "V", "${HOME}", -EINVAL));
	free(write_one(LL_ENV_DOTENV, "V", "end\\", -EINVAL));
}

static void t_slurm(void **state)
{
	struct ll_envvar vars[] = { { "A", "x y 'z' $w \\" }, { "B", "two\nlines" } };
	struct ll_error err = { 0 };
	struct ll_buf b;
	(void)state;

	check(LL_ENV_SLURM, "x y 'z' $w \\", "export V=x y 'z' $w \\\n");
	/* A newline is an error that names the variable, and nothing is written. */
	ll_buf_init(&b);
	assert_int_equal(ll_env_write(LL_ENV_SLURM, vars, 2, &b, &err), -EINVAL);
	assert_string_equal(b.s, "");
	assert_string_equal(err.message, "value of 'B' contains a newline, which the slurm format cannot express");
	ll_buf_release(&b);
	ll_error_clear(&err);
}

static void t_json(void **state)
{
	struct ll_envvar vars[] = { { "Z", "\"q\" \\ \xc3\xa9" }, { "A", "1" } };
	struct ll_error err = { 0 };
	struct ll_buf b;
	(void)state;

	ll_buf_init(&b);
	assert_int_equal(ll_env_write(LL_ENV_JSON, vars, 2, &b, &err), 0);
	assert_string_equal(b.s, "{\n  \"Z\": \"\\\"q\\\" \\\\ \xc3\xa9\",\n  \"A\": \"1\"\n}\n");
	ll_buf_release(&b);

	vars[1].value = "\xff";
	ll_buf_init(&b);
	assert_int_equal(ll_env_write(LL_ENV_JSON, vars, 2, &b, &err), -EINVAL);
	assert_string_equal(err.message, "value of 'A' is not valid UTF-8, which JSON cannot carry");
	ll_buf_release(&b);
	ll_error_clear(&err);
}

static void t_names_and_formats(void **state)
{
	enum ll_env_format f;
	char *s;
	(void)state;

	s = write_one(LL_ENV_SH, "1BAD", "x", -EINVAL);
	free(s);
	s = write_one(LL_ENV_SH, "A-B", "x", -EINVAL);
	free(s);
	assert_int_equal(ll_env_format_parse("fish", &f), 0);
	assert_int_equal(f, LL_ENV_FISH);
	assert_int_equal(ll_env_format_parse("csh", &f), -EINVAL);
	assert_string_equal(ll_env_format_name(LL_ENV_DOTENV), "dotenv");
}

static void t_plan(void **state)
{
	struct ll_plan p = { 0 };
	struct ll_setting s[] = {
		{ .name = "A", .value = "1", .exported = true },
		{ .name = "B", .value = NULL, .exported = true },
		{ .name = "bind", .value = "numa", .exported = false },
		{ .name = "C", .value = "x y", .exported = true },
	};
	struct ll_error err = { 0 };
	struct ll_buf b;
	(void)state;

	p.settings = s;
	p.n_settings = 4;
	ll_buf_init(&b);
	assert_int_equal(ll_env_write_plan(LL_ENV_SH, &p, &b, &err), 0);
	assert_string_equal(b.s, "export A='1'\nexport C='x y'\n");
	ll_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_sh),     cmocka_unit_test(t_fish), cmocka_unit_test(t_dotenv),
		cmocka_unit_test(t_slurm),  cmocka_unit_test(t_json), cmocka_unit_test(t_names_and_formats),
		cmocka_unit_test(t_plan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
