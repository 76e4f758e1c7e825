/* docs/security.md's table "Who may set what" checked row by row against the code:
 * each row's example is loaded as a profile fetched over the network and as a local
 * one, and the outcome must be what the row says (yes: accepted and not marked
 * trusted; no: refused; warns: accepted, and its expectation decides nothing); the
 * `--set` column goes through ll_plan_setting_check(). A row the code contradicts,
 * or a table emptied or renamed, fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "llmlaunch/check.h"
#include "llmlaunch/file.h"
#include "llmlaunch/plan.h"
#include "llmlaunch/profile.h"
#include "llmlaunch/slurm.h"

#define HEADER "| field | example | fetched | local, site | `--set` | what it may do |"

/* Column i of a table row (0: field), trimmed, without surrounding backticks. */
static char *column(const char *row, int i)
{
	const char *p = row;
	const char *end;

	for (int k = 0; k <= i; k++) {
		p = strchr(p, '|');
		if (!p)
			return NULL;
		p++;
	}
	end = strchr(p, '|');
	if (!end)
		return NULL;
	while (*p == ' ')
		p++;
	while (end > p && end[-1] == ' ')
		end--;
	if (end - p >= 2 && *p == '`' && end[-1] == '`')
		p++, end--;
	return ll_strndup(p, (size_t)(end - p));
}

/* Does an expectation merged from `p` act? The Prolog's: a node without GPUs
 * fails (a fault), or only gets a note. The check's figures: two nodes of about
 * 1 GB/s against the figure make the verdict not ok, or leave it ok with advice. */
static bool expectation_acts(const struct ll_profile *p)
{
	struct ll_profile_expect e;
	bool acts = false;

	ll_profile_expect_init(&e);
	ll_profile_expect_merge(&e, p);
	if (e.gpus >= 0) {
		struct ll_facts f = { .gpus_known = true };
		struct ll_health h;

		ll_health_check(&f, &e, &h);
		acts = h.n_faults > 0;
		assert_true(acts || h.n_notes > 0);
		ll_health_release(&h);
	}
	if (e.pair_busbw_gbps.value > 0) {
		const char *text =
			"{\"check\":1,\"backend\":\"gloo\",\"world\":2,\"nnodes\":2,\"nproc\":1,\"rounds\":1}\n"
			"{\"node\":0,\"name\":\"n1\"}\n{\"node\":1,\"name\":\"n2\"}\n"
			"{\"pair\":{\"round\":0,\"node\":0,\"bytes\":1048576,\"time_us\":[1000],\"lat_us\":[50]}}\n"
			"{\"pair\":{\"round\":0,\"node\":1,\"bytes\":1048576,\"time_us\":[1000],\"lat_us\":[50]}}\n"
			"{\"end\":true}\n";
		struct ll_check_result r;
		struct ll_check_verdict v;
		struct ll_error err = { 0 };

		assert_int_equal(ll_check_parse(text, "t", &r, &err), 0);
		ll_check_decide(&r, &e, NULL, &v);
		acts = acts || !v.ok;
		assert_true(!v.ok || v.advice);
		ll_check_verdict_release(&v);
		ll_check_result_release(&r);
	}
	return acts;
}

/* What loading `yaml` gives: "no" (refused), "yes" (accepted, nothing trusted,
 * any expectation acts) or "warns" (accepted, its expectation does not act). */
static const char *outcome(const char *yaml, bool remote)
{
	struct ll_profile_load_opts opts = { .remote = remote };
	struct ll_profile *p = NULL;
	struct ll_error err = { 0 };
	const char *r = "yes";

	if (ll_profile_parse("t.yaml", yaml, strlen(yaml), &opts, &p, NULL, &err) < 0) {
		ll_error_clear(&err);
		return "no";
	}
	for (size_t i = 0; i < p->n_values; i++)
		assert_false(p->values[i].trusted);
	if ((p->expect.gpus >= 0 || p->expect.pair_busbw_gbps.value > 0) && !expectation_acts(p))
		r = "warns";
	ll_profile_free(p);
	return r;
}

static void test_table(void **state)
{
	const char *src = getenv("LL_SRCDIR");
	_cleanup_free_ char *path = NULL, *text = NULL;
	const char *at;
	size_t rows = 0;

	(void)state;
	if (!src)
		skip();
	path = ll_asprintf("%s/docs/security.md", src);
	assert_int_equal(ll_read_file(path, 1 << 20, &text), 0);
	at = strstr(text, HEADER);
	if (!at)
		fail_msg("%s: no table headed '%s'", path, HEADER);
	at = strchr(at, '\n') + 1; /* the header */
	at = strchr(at, '\n') + 1; /* |---| */
	while (*at == '|') {
		const char *nl = strchr(at, '\n');
		_cleanup_free_ char *row = ll_strndup(at, nl ? (size_t)(nl - at) : strlen(at));
		_cleanup_free_ char *field = column(row, 0), *example = column(row, 1), *fetched = column(row, 2);
		_cleanup_free_ char *local = column(row, 3), *set = column(row, 4);
		const char *got;

		assert_non_null(set);
		got = outcome(example, true);
		if (strcmp(got, fetched) != 0)
			fail_msg("security.md row '%s': a fetched profile with '%s': the code says %s, the table %s", field,
				 example, got, fetched);
		got = outcome(example, false);
		if (strcmp(got, local) != 0)
			fail_msg("security.md row '%s': a local profile with '%s': the code says %s, the table %s", field,
				 example, got, local);
		if (strcmp(set, "—") != 0) {
			_cleanup_free_ char *name = ll_strdup(set), *expected = NULL;
			char *eq = strchr(name, '=');

			assert_non_null(eq);
			*eq = '\0';
			if (ll_plan_setting_check(name, eq + 1, &expected) != 0)
				fail_msg("security.md row '%s': --set %s is refused: %s", field, set, expected ? expected : "");
		}
		rows++;
		at = nl ? nl + 1 : at + strlen(at);
	}
	/* every section and kind the table promises */
	assert_true(rows >= 30);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
