/* The libuv decision on recorded answers: what the asking script printed for the
 * torch of Debian 12 (1.13), Debian 13 (2.6 without libuv), PyTorch's own wheels
 * (libuv built in) and a torch without the use_libuv parameter, turned into the
 * plan's LLMLAUNCH_BOOTSTRAP with its reason, and into the command torchrun gets. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "llmlaunch/launch.h"
#include "llmlaunch/torch.h"
#include "llmlaunch/torchrun-options.h"

/* Recorded answers (the script's stdout). */
static const char debian12[] = "dir /usr/lib/python3/dist-packages/torch\nversion 1.13.0a0\nlibuv not-asked\n";
static const char debian13[] = "dir /usr/lib/python3/dist-packages/torch\nversion 2.6.0+debian\nlibuv missing\n";
static const char wheel[] = "dir /venv/lib/python3.12/site-packages/torch\nversion 2.5.1+cu124\nlibuv works\n";
static const char no_knob[] = "dir /opt/torch\nversion 2.4.0a0+custom\nlibuv no-knob\n";
static const char no_torch[] = "error torch is not importable\n";

static struct ll_plan *plan_new(void)
{
	struct ll_plan *p = ll_calloc(1, sizeof(*p));

	p->nproc_per_node = 2;
	p->nnodes = 1;
	ll_plan_set(p, "torchrun.nproc_per_node", "2", LL_SOURCE_PROBE, NULL, "r", false);
	return p;
}

/* Decide from a recorded answer; returns the decision's result. */
static int decide(const char *answer, struct ll_plan *p, char *const *env, struct ll_error *err)
{
	struct ll_torch_facts t = { 0 };
	int r;

	assert_int_equal(ll_torch_facts_parse(answer, &t), 0);
	r = ll_launch_plan_bootstrap(p, &t, NULL, env, err);
	ll_torch_facts_release(&t);
	return r;
}

static void test_parse(void **state)
{
	struct ll_torch_facts t = { 0 };

	(void)state;
	assert_int_equal(ll_torch_facts_parse(debian13, &t), 0);
	assert_string_equal(t.version, "2.6.0+debian");
	assert_string_equal(t.dir, "/usr/lib/python3/dist-packages/torch");
	assert_int_equal(t.libuv, LL_TORCH_LIBUV_MISSING);
	assert_string_equal(ll_torch_libuv_name(t.libuv), "missing");
	assert_int_equal(ll_torch_facts_parse(no_torch, &t), 0);
	assert_int_equal(t.libuv, LL_TORCH_LIBUV_UNKNOWN);
	assert_string_equal(t.error, "torch is not importable");
	assert_null(t.version);
	/* What the script never says is not an answer (a python that prints on import). */
	assert_int_equal(ll_torch_facts_parse("libuv maybe\n", &t), -EBADMSG);
	assert_int_equal(ll_torch_facts_parse("hello from sitecustomize\nlibuv works\n", &t), -EBADMSG);
	assert_null(t.version);
	ll_torch_facts_release(&t);
}

static void test_debian13_libuv_off(void **state)
{
	struct ll_plan *p = plan_new();
	struct ll_error err = { 0 };
	const struct ll_setting *s;

	(void)state;
	assert_int_equal(decide(debian13, p, NULL, &err), 0);
	s = ll_plan_get(p, LL_BOOTSTRAP_ENV);
	assert_non_null(s);
	assert_string_equal(s->value, "libuv-off");
	assert_int_equal(s->source, LL_SOURCE_LAUNCH);
	assert_true(s->exported);
	assert_string_equal(s->reason,
			    "torch 2.6.0+debian is built without libuv, and TCPStore asks for it by default since torch "
			    "2.4: torchrun and each worker start through llmlaunch's bootstrap, which makes "
			    "use_libuv=False the default (torch's error otherwise: 'use_libuv was requested but PyTorch "
			    "was build without libuv support')");
	ll_plan_free(p);
}

static void test_no_bootstrap(void **state)
{
	static const struct {
		const char *answer, *reason;
	} cases[] = {
		{ debian12, "torch 1.13.0a0 predates TCPStore's libuv default (2.4): no bootstrap" },
		{ wheel, "torch 2.5.1+cu124 starts its TCPStore as it is: no bootstrap" },
		{ no_torch, "torch's TCPStore was not asked about libuv (torch is not importable): no bootstrap" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ll_plan *p = plan_new();
		struct ll_error err = { 0 };
		const struct ll_setting *s;

		assert_int_equal(decide(cases[i].answer, p, NULL, &err), 0);
		s = ll_plan_get(p, LL_BOOTSTRAP_ENV);
		assert_non_null(s);
		assert_null(s->value);
		assert_string_equal(s->reason, cases[i].reason);
		ll_plan_free(p);
	}
}

static void test_no_knob_fails(void **state)
{
	struct ll_plan *p = plan_new();
	struct ll_error err = { 0 };

	(void)state;
	assert_int_equal(decide(no_knob, p, NULL, &err), -ENOTSUP);
	assert_string_equal(err.message, "torch 2.4.0a0+custom in /opt/torch cannot start its TCPStore: built without "
					 "libuv, and no use_libuv parameter to turn libuv off");
	assert_non_null(err.hint);
	assert_null(ll_plan_value(p, LL_BOOTSTRAP_ENV));
	ll_error_clear(&err);
	ll_plan_free(p);
}

static void test_user_wins(void **state)
{
	char *env_off[] = { "LLMLAUNCH_BOOTSTRAP=", NULL };
	struct ll_plan *p = plan_new();
	struct ll_error err = { 0 };
	const struct ll_setting *s;

	(void)state;
	/* The environment's value, even empty, is the user's choice. */
	assert_int_equal(decide(debian13, p, env_off, &err), 0);
	s = ll_plan_get(p, LL_BOOTSTRAP_ENV);
	assert_string_equal(s->value, "");
	assert_int_equal(s->source, LL_SOURCE_ENVIRONMENT);
	ll_plan_free(p);
	/* --set wins over the environment and the decision. */
	p = plan_new();
	ll_plan_set(p, LL_BOOTSTRAP_ENV, "libuv-off", LL_SOURCE_CLI, "--set", "r", true);
	assert_int_equal(decide(debian12, p, env_off, &err), 0);
	assert_string_equal(ll_plan_value(p, LL_BOOTSTRAP_ENV), "libuv-off");
	assert_int_equal(ll_plan_get(p, LL_BOOTSTRAP_ENV)->source, LL_SOURCE_CLI);
	ll_plan_free(p);
}

static void test_not_asked(void **state)
{
	struct ll_plan *p = plan_new();
	struct ll_error err = { 0 };

	(void)state;
	assert_int_equal(ll_launch_plan_bootstrap(p, NULL, "--fsroot describes another node", NULL, &err), 0);
	assert_null(ll_plan_value(p, LL_BOOTSTRAP_ENV));
	assert_string_equal(ll_plan_get(p, LL_BOOTSTRAP_ENV)->reason,
			    "torch was not asked (--fsroot describes another node): no bootstrap");
	ll_plan_free(p);
}

/* The command: the bootstrap before torchrun's module and before each worker's script,
 * never before a --no_python program; without its file the build says so. */
static void test_command(void **state)
{
	struct ll_plan *p = plan_new();
	struct ll_error err = { 0 };
	struct ll_launch *l = NULL;
	char *args[] = { "--steps", "1" };
	struct ll_launch_request req = {
		.self_exe = "/usr/bin/llmlaunch",
		.python = "/usr/bin/python3",
		.script = "train.py",
		.script_args = args,
		.n_script_args = 2,
		.bootstrap = "/usr/share/llmlaunch/python/llmlaunch_boot.py",
	};
	struct ll_buf b;

	(void)state;
	assert_int_equal(decide(debian13, p, NULL, &err), 0);
	assert_int_equal(ll_launch_build(p, &req, &l, &err), 0);
	ll_buf_init(&b);
	for (size_t i = 0; i < l->argc; i++)
		ll_buf_addf(&b, "%s%s", i ? " " : "", l->argv[i]);
	assert_string_equal(b.s, "/usr/bin/python3 /usr/share/llmlaunch/python/llmlaunch_boot.py -m "
				 "torch.distributed.run --nproc_per_node 2 --no_python /usr/bin/llmlaunch __worker -- "
				 "/usr/bin/python3 -u /usr/share/llmlaunch/python/llmlaunch_boot.py train.py --steps 1");
	ll_buf_release(&b);
	ll_launch_free(l);
	l = NULL;

	req.bootstrap = NULL;
	assert_int_equal(ll_launch_build(p, &req, &l, &err), -ENOENT);
	assert_string_equal(err.message, "cannot build the torchrun command: LLMLAUNCH_BOOTSTRAP=libuv-off needs "
					 "llmlaunch's bootstrap (llmlaunch_boot.py), which was not found");
	ll_error_clear(&err);

	/* Nothing to do: no bootstrap in the command, found or not. */
	ll_plan_set(p, LL_BOOTSTRAP_ENV, NULL, LL_SOURCE_CLI, "--set", "r", true);
	assert_int_equal(ll_launch_build(p, &req, &l, &err), 0);
	assert_string_equal(l->argv[1], "-m");
	ll_launch_free(l);
	ll_plan_free(p);
}

static const struct ll_lint *lint_of(const struct ll_plan *p, const char *variable)
{
	for (size_t i = 0; i < p->n_lints; i++)
		if (p->lints[i].variable && strcmp(p->lints[i].variable, variable) == 0)
			return &p->lints[i];
	return NULL;
}

/* torchrun's options and torch's variables against the torch that runs them. */
static void test_surface(void **state)
{
	char *env_new[] = { "TORCH_NCCL_ASYNC_ERROR_HANDLING=1", NULL };
	char *env_old[] = { "NCCL_BLOCKING_WAIT=1", NULL };
	struct ll_torch_facts t13 = { 0 }, t26 = { 0 };
	struct ll_plan *p;
	const struct ll_lint *l;

	(void)state;
	assert_int_equal(ll_torch_version_code("2.6.0+debian"), 206);
	assert_int_equal(ll_torch_version_code("1.13.0a0"), 113);
	assert_int_equal(ll_torch_version_code("2.10.1"), 210);
	assert_int_equal(ll_torch_version_code("nightly"), -1);
	assert_int_equal(ll_torch_facts_parse(debian12, &t13), 0);
	assert_int_equal(ll_torch_facts_parse(debian13, &t26), 0);
	assert_int_equal(ll_torchrun_option_find("local_ranks_filter")->since, 203);
	assert_int_equal(ll_torchrun_option_find("local_addr")->since, 200);
	assert_int_equal(ll_torchrun_option_find("nproc_per_node")->since, 0);

	/* --local-ranks-filter on 1.13: blocking; on 2.6: fine. */
	p = plan_new();
	ll_plan_set(p, "torchrun.local_ranks_filter", "0", LL_SOURCE_CLI, "--local-ranks-filter", "r", false);
	ll_launch_lint_torch(p, &t13, NULL);
	l = lint_of(p, "torchrun.local_ranks_filter");
	assert_non_null(l);
	assert_true(l->blocking);
	assert_string_equal(l->message, "--local_ranks_filter (--local-ranks-filter) is a torchrun option since torch "
					"2.3; torch 1.13.0a0 would stop at 'unrecognized arguments': remove it, or install "
					"torch 2.3 or later");
	ll_plan_free(p);
	p = plan_new();
	ll_plan_set(p, "torchrun.local_ranks_filter", "0", LL_SOURCE_CLI, "--local-ranks-filter", "r", false);
	ll_launch_lint_torch(p, &t26, NULL);
	assert_int_equal(p->n_lints, 0);
	ll_plan_free(p);

	/* The new name on 1.13 does nothing: a warning; the old one on 2.6 is read, deprecated. */
	p = plan_new();
	ll_launch_lint_torch(p, &t13, env_new);
	l = lint_of(p, "TORCH_NCCL_ASYNC_ERROR_HANDLING");
	assert_non_null(l);
	assert_int_equal(l->level, LL_LINT_WARNING);
	assert_false(l->blocking);
	ll_plan_free(p);
	p = plan_new();
	ll_launch_lint_torch(p, &t26, env_old);
	l = lint_of(p, "NCCL_BLOCKING_WAIT");
	assert_non_null(l);
	assert_int_equal(l->level, LL_LINT_INFO);
	assert_string_equal(l->message, "torch 2.6.0+debian still reads NCCL_BLOCKING_WAIT but warns that it is "
					"deprecated: its name since torch 2.2 is TORCH_NCCL_BLOCKING_WAIT");
	ll_plan_free(p);
	p = plan_new();
	ll_launch_lint_torch(p, &t26, env_new);
	ll_launch_lint_torch(p, &t13, env_old);
	assert_int_equal(p->n_lints, 0);
	ll_plan_free(p);
	ll_torch_facts_release(&t13);
	ll_torch_facts_release(&t26);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_debian13_libuv_off),
		cmocka_unit_test(test_no_bootstrap),
		cmocka_unit_test(test_no_knob_fails),
		cmocka_unit_test(test_user_wins),
		cmocka_unit_test(test_not_asked),
		cmocka_unit_test(test_command),
		cmocka_unit_test(test_surface),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
