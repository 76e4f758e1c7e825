/* The engines' contracts (launcher/agree/agree-contract.c) on environments as each
 * engine gives them (tests/fixtures/contracts, one .env file each, each with what it must read as),
 * and the backend choice and plan values they lead to (agree-run.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmlaunch/agree.h"
#include "llmlaunch/agree-contract.h"

struct recorded {
	char **env;                 /* NULL-terminated */
	size_t n_env;
	char *expect;               /* "#expect ..." without the prefix */
	char *expect_usage;
	bool expect_none;
};

static void recorded_release(struct recorded *r)
{
	for (size_t i = 0; i < r->n_env; i++)
		free(r->env[i]);
	free(r->env);
	free(r->expect);
	free(r->expect_usage);
}

/* "\n" in a value is a newline (SKYPILOT_NODE_IPS). */
static char *unescape(const char *s)
{
	char *out = ll_malloc(strlen(s) + 1), *o = out;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] == 'n') {
			*o++ = '\n';
			s++;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
	return out;
}

static void recorded_load(const char *path, struct recorded *r)
{
	FILE *f = fopen(path, "r");
	char line[4096];

	memset(r, 0, sizeof(*r));
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "#expect-usage ", 14) == 0)
			r->expect_usage = ll_strdup(line + 14);
		else if (strcmp(line, "#expect none") == 0)
			r->expect_none = true;
		else if (strncmp(line, "#expect ", 8) == 0)
			r->expect = ll_strdup(line + 8);
		else if (line[0] && line[0] != '#')
			*(char **)ll_array_push(&r->env, &r->n_env, sizeof(char *)) = unescape(line);
	}
	fclose(f);
	*(char **)ll_array_push(&r->env, &r->n_env, sizeof(char *)) = NULL;
	r->n_env--;
}

/* The value of KEY in "#expect engine=... nnodes=..." */
static const char *expect_field(const char *expect, const char *key, char *buf, size_t len)
{
	size_t klen = strlen(key);

	for (const char *p = expect; p && *p;) {
		size_t n = strcspn(p, " ");

		if (n > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') {
			snprintf(buf, len, "%.*s", (int)(n - klen - 1), p + klen + 1);
			return buf;
		}
		p += n;
		p += strspn(p, " ");
	}
	return NULL;
}

static void check_one(const char *dir, const char *file)
{
	_cleanup_free_ char *path = ll_asprintf("%s/%s", dir, file);
	struct recorded rec;
	struct ll_contract c = { 0 };
	struct ll_error err = { 0 };
	char buf[256];
	const char *v;
	int r;

	recorded_load(path, &rec);
	r = ll_contract_read(rec.env, &c, &err);
	if (rec.expect_usage) {
		if (r != -EINVAL || !err.usage || !strstr(err.message, rec.expect_usage))
			fail_msg("%s: expected the usage error '%s', got %d (usage %d): %s", file, rec.expect_usage, r, err.usage,
				 err.message ? err.message : "(none)");
		/* Exit status 2 when the command plans: the same error from the launcher's read. */
		ll_error_clear(&err);
		{
			const char *name, *why;

			assert_int_equal(ll_agree_launcher_read(rec.env, &name, &why, &err), -EINVAL);
			assert_true(err.usage);
		}
	} else if (rec.expect_none) {
		if (r != 0)
			fail_msg("%s: expected no contract, got %d (%s): %s", file, r, c.name ? c.name : "-",
				 err.message ? err.message : "");
		assert_int_equal(ll_agree_detect(rec.env), LL_AGREE_SINGLE);
	} else {
		assert_non_null(rec.expect);
		if (r != 1)
			fail_msg("%s: expected a contract, got %d: %s", file, r, err.message ? err.message : "");
		assert_string_equal(c.name, expect_field(rec.expect, "engine", buf, sizeof(buf)));
		assert_int_equal(c.nnodes, atol(expect_field(rec.expect, "nnodes", buf, sizeof(buf))));
		assert_int_equal(c.node_rank, atol(expect_field(rec.expect, "rank", buf, sizeof(buf))));
		assert_string_equal(c.master_host, expect_field(rec.expect, "host", buf, sizeof(buf)));
		assert_int_equal(c.master_port, atoi(expect_field(rec.expect, "port", buf, sizeof(buf))));
		if ((v = expect_field(rec.expect, "nproc", buf, sizeof(buf))))
			assert_int_equal(c.nproc_per_node, atol(v));
		if ((v = expect_field(rec.expect, "agreeing", buf, sizeof(buf))))
			assert_string_equal(c.agreeing ? c.agreeing : "-", v);
		/* Every variable read is there for explain, each with where upstream sets it. */
		assert_true(c.n_vars >= 3);
		for (size_t i = 0; i < c.n_vars; i++)
			assert_non_null(c.vars[i].meaning);
		assert_int_equal(ll_agree_detect(rec.env), LL_AGREE_CONTRACT);
		{
			const char *why;

			assert_string_equal(ll_agree_launcher(rec.env, &why), c.name);
			assert_non_null(strstr(why, c.rank_var));
		}
	}
	ll_error_clear(&err);
	ll_contract_release(&c);
	recorded_release(&rec);
}

static void test_recorded(void **state)
{
	const char *fixtures = getenv("LL_FIXTURES");
	_cleanup_free_ char *dir = NULL;
	struct dirent **list = NULL;
	int n, checked = 0;

	(void)state;
	assert_non_null(fixtures);
	dir = ll_asprintf("%s/contracts", fixtures);
	n = scandir(dir, &list, NULL, alphasort);
	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		size_t len = strlen(list[i]->d_name);

		if (len > 4 && strcmp(list[i]->d_name + len - 4, ".env") == 0) {
			check_one(dir, list[i]->d_name);
			checked++;
		}
		free(list[i]);
	}
	free(list);
	/* One per engine and per error at least: a lost fixture is a lost case. */
	assert_true(checked >= 17);
}

/* PMIx and Slurm come first: a Slurm job that also carries an engine's variables is
 * agreed by Slurm's environment. */
static void test_order(void **state)
{
	char *slurm_and_pet[] = { "SLURM_JOB_ID=7", "SLURM_JOB_NODELIST=n[1-2]", "PET_NNODES=2", "PET_NODE_RANK=0",
				  "PET_MASTER_ADDR=n1", NULL };
	char *pmix_and_lws[] = { "PMIX_NAMESPACE=x", "LWS_GROUP_SIZE=2", NULL };
	char *nothing[] = { "HOME=/root", NULL };

	(void)state;
	assert_int_equal(ll_agree_detect(slurm_and_pet), LL_AGREE_SLURM);
	assert_int_equal(ll_agree_detect(pmix_and_lws), LL_AGREE_PMIX);
	assert_int_equal(ll_agree_detect(nothing), LL_AGREE_SINGLE);
	assert_string_equal(ll_agree_backend_name(LL_AGREE_CONTRACT), "contract");
	for (int e = 0; e < LL_CONTRACT_N; e++)
		assert_int_equal(ll_contract_engine_of(ll_contract_engine_name((enum ll_contract_engine)e)), e);
	assert_int_equal(ll_contract_engine_of("pmix"), -1);
}

/* The contract's world written into a plan: each torchrun value names its variable,
 * and every variable read is a setting of its own (explain shows them). */
static void test_apply(void **state)
{
	char *env[] = { "PET_NNODES=4", "PET_NODE_RANK=2", "PET_NPROC_PER_NODE=1", "PET_MASTER_ADDR=j-node-0-0.j",
			"PET_MASTER_PORT=29400", NULL };
	struct ll_plan *plan = NULL;
	struct ll_plan_input in = { .environ = env, .nnodes = 1, .launcher = "trainjob" };
	struct ll_facts facts = { 0 };
	struct ll_cluster c = { .backend = LL_AGREE_CONTRACT, .nnodes = 4, .node_rank = 2 };
	struct ll_error err = { 0 };
	const struct ll_setting *s;

	(void)state;
	facts.hostname = "pod";
	in.facts = &facts;
	if (ll_plan_build(&in, &plan, &err) < 0)
		fail_msg("ll_plan_build: %s", err.message);
	c.contract = ll_calloc(1, sizeof(*c.contract));
	assert_int_equal(ll_contract_read(env, c.contract, &err), 1);
	c.master_addr = ll_strdup("198.51.100.1");
	c.master_port = 29400;
	ll_cluster_apply(plan, &c);
	s = ll_plan_get(plan, "torchrun.nnodes");
	assert_string_equal(s->value, "4");
	assert_non_null(strstr(s->reason, "PET_NNODES"));
	s = ll_plan_get(plan, "torchrun.node_rank");
	assert_string_equal(s->value, "2");
	assert_non_null(strstr(s->reason, "PET_NODE_RANK (trainjob)"));
	s = ll_plan_get(plan, "torchrun.master_addr");
	assert_string_equal(s->value, "198.51.100.1");
	assert_non_null(strstr(s->reason, "PET_MASTER_ADDR 'j-node-0-0.j'"));
	s = ll_plan_get(plan, "torchrun.master_port");
	assert_non_null(strstr(s->reason, "PET_MASTER_PORT"));
	s = ll_plan_get(plan, "contract.PET_NPROC_PER_NODE");
	assert_non_null(s);
	assert_int_equal(s->source, LL_SOURCE_ENVIRONMENT);
	assert_non_null(strstr(s->reason, "kubeflow/trainer"));
	assert_string_equal(ll_plan_value(plan, "agreement"), "trainjob");
	ll_cluster_release(&c);
	ll_plan_free(plan);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recorded),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_apply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
