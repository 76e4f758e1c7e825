/* Layers and precedence, extends chains and cycles, when_exists, the assignments
 * handed to the planner (with FILE:LINE origins). Everything in a temporary tree. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <ftw.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llmlaunch/profile.h"

static char tmp[64];
static char *dirs[1];

static void put(const char *rel, const char *text)
{
	_cleanup_free_ char *path = ll_asprintf("%s/%s", tmp, rel);
	FILE *f;

	for (char *c = path + strlen(tmp) + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		mkdir(path, 0755);
		*c = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

static int setup(void **state)
{
	(void)state;
	strcpy(tmp, "/tmp/ll-layers-XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	dirs[0] = ll_asprintf("%s/profiles", tmp);
	put("profiles/base.yaml", "description: base\n"
				  "env:\n"
				  "  A: base\n"
				  "  B: base\n");
	put("profiles/mid.yaml", "extends: base\n"
				 "env:\n"
				 "  B: mid\n"
				 "  C: mid\n");
	put("profiles/other.yaml", "env:\n"
				   "  C: other\n");
	put("profiles/top.yaml", "extends: [mid, other]\n"
				 "nccl:\n"
				 "  NCCL_IB_HCA: auto\n"
				 "torchrun:\n"
				 "  max_restarts: 2\n"
				 "expect:\n"
				 "  gpus: 8\n");
	put("profiles/cyc-a.yaml", "extends: cyc-b\n");
	put("profiles/cyc-b.yaml", "extends: [base, cyc-c]\n");
	put("profiles/cyc-c.yaml", "extends: cyc-a\n");
	put("profiles/self.yaml", "extends: self\n");
	put("profiles/m-any-gpu.yaml", "match:\n"
				       "  gpu_count_min: 1\n"
				       "env:\n"
				       "  M: any-gpu\n"
				       "  S: any-gpu\n"
				       "expect:\n"
				       "  gpus: 1\n"
				       "  link_layer: Ethernet\n");
	put("profiles/m-h100x8.yaml", "match:\n"
				      "  gpu_count: 8\n"
				      "  gpu_model: '*H100*'\n"
				      "env:\n"
				      "  M: h100x8\n"
				      "expect:\n"
				      "  gpus: 8\n");
	put("profiles/m-never.yaml", "match:\n"
				     "  dmi_product_name: nothing-like-this\n"
				     "env:\n"
				     "  M: never\n");
	put("profiles/broken.yaml", "match:\n  gpu_count: many\n");
	put("profiles/when.yaml", "env:\n"
				  "  TOPO:\n"
				  "    value: /opt/present.xml\n"
				  "    when_exists: [/opt/absent.xml, /opt/present.xml]\n"
				  "  PLUGIN:\n"
				  "    value: x\n"
				  "    when_exists: /opt/absent.so\n");
	put("root/opt/present.xml", "<system/>\n");
	put("etc/config.yaml", "env:\n  S: system\n  U: system\n");
	put("home/config.yaml", "env:\n  U: user\n  L: user\n");
	put("project/.llmlaunch.yaml", "extends: ../extra/local-base.yaml\nenv:\n  L: local\n");
	put("extra/local-base.yaml", "env:\n  LB: local-base\n");
	put("conditional.yaml", "match:\n  hostname: other-host\nenv:\n  X: conditional\n");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(dirs[0]);
	return 0;
}

static struct ll_profile_opts base_opts(void)
{
	return (struct ll_profile_opts){ .dirs = dirs, .n_dirs = 1, .no_config = true, .no_auto = true };
}

/* "NAME=VALUE@ORIGIN-RELATIVE-TO-TMP" for every assignment, joined by ' '. */
static char *dump(const struct ll_profile_set *s)
{
	const struct ll_assignment *a;
	struct ll_buf b;
	size_t n;

	ll_profile_set_assignments(s, &a, &n);
	ll_buf_init(&b);
	for (size_t i = 0; i < n; i++) {
		const char *o = a[i].origin;
		if (ll_startswith(o, tmp))
			o += strlen(tmp) + 1;
		ll_buf_addf(&b, "%s%s=%s@%s", i ? " " : "", a[i].name, a[i].value, o);
	}
	return ll_buf_detach(&b);
}

static void test_extends_chain(void **state)
{
	(void)state;
	struct ll_profile_opts o = base_opts();
	struct ll_profile_set *s = NULL;
	struct ll_error err = { 0 };
	char *refs[] = { "top" };
	char *d;

	assert_int_equal(ll_profiles_resolve(NULL, refs, 1, &o, &s, &err), 0);
	d = dump(s);
	/* Depth first, what a profile extends before the profile itself, in listed order. */
	assert_string_equal(d, "A=base@profiles/base.yaml:3 B=mid@profiles/mid.yaml:3 C=other@profiles/other.yaml:2 "
			       "NCCL_IB_HCA=auto@profiles/top.yaml:3 torchrun.max_restarts=2@profiles/top.yaml:5");
	/* Everything applied stays visible (for `profiles show`), in order. */
	assert_int_equal(s->n_applied, 7);
	assert_string_equal(s->applied[1].value->value, "base");
	assert_string_equal(s->applied[2].value->value, "mid");
	free(d);
	assert_int_equal(s->n_layers, 1);
	assert_int_equal(s->layers[0].kind, LL_LAYER_CLI);
	assert_string_equal(s->layers[0].profile->name, "top");
	assert_int_equal(s->n_profiles, 4);
	assert_int_equal(s->expect.gpus, 8);
	ll_profile_set_free(s);
}

/* `auto` in a higher layer undoes a value from a lower one. */
static void test_auto_undoes(void **state)
{
	(void)state;
	struct ll_profile_opts o = base_opts();
	struct ll_profile_set *s = NULL;
	struct ll_error err = { 0 };
	char *refs[] = { "hca", "top" };
	char *d;

	put("profiles/hca.yaml", "nccl:\n  NCCL_IB_HCA: =mlx5_0:1\n");
	assert_int_equal(ll_profiles_resolve(NULL, refs, 1, &o, &s, &err), 0);
	d = dump(s);
	assert_string_equal(d, "NCCL_IB_HCA==mlx5_0:1@profiles/hca.yaml:2");
	free(d);
	ll_profile_set_free(s);
	assert_int_equal(ll_profiles_resolve(NULL, refs, 2, &o, &s, &err), 0);
	d = dump(s);
	assert_string_equal(d, "A=base@profiles/base.yaml:3 B=mid@profiles/mid.yaml:3 C=other@profiles/other.yaml:2 "
			       "NCCL_IB_HCA=auto@profiles/top.yaml:3 torchrun.max_restarts=2@profiles/top.yaml:5");
	free(d);
	ll_profile_set_free(s);
}

static void test_cycles(void **state)
{
	(void)state;
	struct ll_profile_opts o = base_opts();
	struct ll_profile_set *s = NULL;
	struct ll_error err = { 0 };
	char *refs[] = { "cyc-a" }, *self[] = { "self" };
	_cleanup_free_ char *expected = NULL;

	assert_int_equal(ll_profiles_resolve(NULL, refs, 1, &o, &s, &err), -ELOOP);
	assert_null(s);
	expected = ll_asprintf("%s/profiles/cyc-c.yaml:1:10: extends: cycle '%s/profiles/cyc-a.yaml' -> "
			       "'%s/profiles/cyc-b.yaml' -> '%s/profiles/cyc-c.yaml' -> '%s/profiles/cyc-a.yaml'",
			       tmp, tmp, tmp, tmp, tmp);
	assert_string_equal(err.message, expected);
	ll_error_clear(&err);

	assert_int_equal(ll_profiles_resolve(NULL, self, 1, &o, &s, &err), -ELOOP);
	free(expected);
	expected = ll_asprintf("%s/profiles/self.yaml:1:10: extends: cycle '%s/profiles/self.yaml' -> "
			       "'%s/profiles/self.yaml'",
			       tmp, tmp, tmp);
	assert_string_equal(err.message, expected);
	ll_error_clear(&err);

	/* A diamond (two paths to one profile) is not a cycle. */
	put("profiles/diamond.yaml", "extends: [mid, base]\n");
	refs[0] = "diamond";
	assert_int_equal(ll_profiles_resolve(NULL, refs, 1, &o, &s, &err), 0);
	assert_int_equal(s->n_applied, 6);
	assert_int_equal(s->n_assignments, 3); /* C=mid, then A and B from base, applied last */
	assert_string_equal(s->assignments[1].value, "base");
	ll_profile_set_free(s);
}

/* levels of `width` profiles each, every one extending all of the next level. */
static void put_diamond(const char *stem, int width, int depth)
{
	for (int l = 0; l <= depth; l++) {
		for (int i = 0; i < (l == 0 ? 1 : width); i++) {
			_cleanup_free_ char *rel = ll_asprintf("profiles/%s-%d-%d.yaml", stem, l, i);
			struct ll_buf b;

			ll_buf_init(&b);
			if (l < depth) {
				ll_buf_add(&b, "extends: [");
				for (int j = 0; j < width; j++)
					ll_buf_addf(&b, "%s%s-%d-%d", j ? ", " : "", stem, l + 1, j);
				ll_buf_add(&b, "]\n");
			}
			ll_buf_addf(&b, "env:\n  L%d: \"%d\"\n", l, i);
			put(rel, b.s);
			ll_buf_release(&b);
		}
	}
}

/* Diamonds of extends: each profile is loaded once however many paths reach it, and
 * the paths themselves are bounded. 8 extends per level and 6 levels took 5.2 s and
 * 160 MB (262,144 loads) and over HTTPS made about 2,450 requests. */
static void test_diamond_bounds(void **state)
{
	(void)state;
	struct ll_profile_opts o = base_opts();
	struct ll_profile_set *s = NULL;
	struct ll_error err = { 0 };
	_cleanup_free_ char *expected = NULL;
	char *refs[] = { "dm-0-0" }, *wide[] = { "wide" };
	struct ll_buf b;

	/* 3 x 3: 40 applications, 10 distinct profiles, each loaded once. */
	put_diamond("dm", 3, 3);
	assert_int_equal(ll_profiles_resolve(NULL, refs, 1, &o, &s, &err), 0);
	assert_int_equal(s->n_profiles, 10);
	assert_int_equal(s->n_applied, 40);
	ll_profile_set_free(s);
	s = NULL;

	/* 8 x 6: refused at once, before 1,024 applications. */
	put_diamond("dx", 8, 6);
	refs[0] = "dx-0-0";
	assert_int_equal(ll_profiles_resolve(NULL, refs, 1, &o, &s, &err), -E2BIG);
	assert_null(s);
	free(expected);
	expected = ll_asprintf("'%s/profiles/dx-0-0.yaml': extends reaches more than 1024 profiles counting repeats (a "
			       "diamond of extends too wide and deep)", tmp);
	assert_string_equal(err.message, expected);
	free(expected);
	expected = NULL;
	ll_error_clear(&err);

	/* Too many distinct profiles: 70 names. */
	ll_buf_init(&b);
	ll_buf_add(&b, "extends: [");
	for (int i = 0; i < 70; i++) {
		_cleanup_free_ char *rel = ll_asprintf("profiles/w%d.yaml", i);
		put(rel, "env:\n  W: \"1\"\n");
		ll_buf_addf(&b, "%sw%d", i ? ", " : "", i);
	}
	ll_buf_add(&b, "]\n");
	put("profiles/wide.yaml", b.s);
	ll_buf_release(&b);
	assert_int_equal(ll_profiles_resolve(NULL, wide, 1, &o, &s, &err), -E2BIG);
	/* wide.yaml itself and w0..w62 are the 64; the column is w63's. */
	expected = ll_asprintf("%s/profiles/wide.yaml:1:316: extends: 'w63': more than 64 distinct profiles in one "
			       "resolution", tmp);
	assert_string_equal(err.message, expected);
	ll_error_clear(&err);

	/* The same profile given twice is one profile, applied twice. */
	{
		char *twice[] = { "base", "base" };

		assert_int_equal(ll_profiles_resolve(NULL, twice, 2, &o, &s, &err), 0);
		assert_int_equal(s->n_profiles, 1);
		assert_int_equal(s->n_layers, 2);
		assert_ptr_equal(s->layers[0].profile, s->layers[1].profile);
		ll_profile_set_free(s);
	}
}

static void test_missing_and_paths(void **state)
{
	(void)state;
	struct ll_profile_opts o = base_opts();
	struct ll_profile_set *s = NULL;
	struct ll_error err = { 0 };
	char *refs[] = { "infinband" };
	_cleanup_free_ char *path = ll_asprintf("%s/project/.llmlaunch.yaml", tmp);

	put("profiles/infiniband.yaml", "name: infiniband\n");
	assert_int_equal(ll_profiles_resolve(NULL, refs, 1, &o, &s, &err), -ENOENT);
	assert_string_equal(err.message, "no profile named 'infinband'");
	assert_string_equal(err.hint, "did you mean 'infiniband'? ('llmlaunch profiles list' shows them all)");
	ll_error_clear(&err);

	/* A relative path in extends is relative to the file that says it. */
	refs[0] = path;
	assert_int_equal(ll_profiles_resolve(NULL, refs, 1, &o, &s, &err), 0);
	assert_int_equal(s->n_assignments, 2);
	assert_string_equal(s->assignments[0].name, "LB");
	assert_string_equal(s->assignments[1].value, "local");
	ll_profile_set_free(s);

	/* A broken file named on the command line is an error with its position. */
	refs[0] = "broken";
	assert_int_equal(ll_profiles_resolve(NULL, refs, 1, &o, &s, &err), -EINVAL);
	{
		_cleanup_free_ char *m = ll_asprintf("%s/profiles/broken.yaml:2:14: match.gpu_count: 'many' is not an "
						     "integer from 0 to 65536",
						     tmp);
		assert_string_equal(err.message, m);
	}
	ll_error_clear(&err);
}

static void test_when_exists(void **state)
{
	(void)state;
	struct ll_profile_opts o = base_opts();
	struct ll_profile_set *s = NULL;
	struct ll_error err = { 0 };
	char *refs[] = { "when" };
	_cleanup_free_ char *root = ll_asprintf("%s/root", tmp);

	o.root = root;
	assert_int_equal(ll_profiles_resolve(NULL, refs, 1, &o, &s, &err), 0);
	assert_int_equal(s->n_applied, 2);
	assert_false(s->applied[0].skipped); /* one of the two paths exists under the root */
	assert_true(s->applied[1].skipped);
	assert_int_equal(s->n_assignments, 1);
	assert_string_equal(s->assignments[0].name, "TOPO");
	ll_profile_set_free(s);

	/* Without the root, this machine has neither file. */
	o.root = NULL;
	assert_int_equal(ll_profiles_resolve(NULL, refs, 1, &o, &s, &err), 0);
	assert_int_equal(s->n_assignments, 0);
	ll_profile_set_free(s);
}

static void test_all_layers(void **state)
{
	(void)state;
	struct ll_profile_opts o = base_opts();
	struct ll_profile_set *s = NULL;
	struct ll_error err = { 0 };
	struct ll_gpu gpus[8] = { 0 };
	struct ll_facts f = { .gpus = gpus, .n_gpus = 8, .hostname = "gpu-1" };
	char *refs[] = { "base", "other" };
	_cleanup_free_ char *sys = ll_asprintf("%s/etc/config.yaml", tmp), *user = ll_asprintf("%s/home/config.yaml", tmp),
			    *local = ll_asprintf("%s/project/.llmlaunch.yaml", tmp), *cond = ll_asprintf("%s/conditional.yaml", tmp);
	char *d;

	for (int i = 0; i < 8; i++)
		gpus[i].model = "NVIDIA H100 80GB HBM3";
	o.no_auto = false;
	o.no_config = false;
	o.system_config = sys;
	o.user_config = user;
	o.local_config = local;
	assert_int_equal(ll_profiles_resolve(&f, refs, 2, &o, &s, &err), 0);
	d = dump(s);
	/* matched (less specific first) < system < user < local < --profile in order */
	assert_string_equal(d, "M=h100x8@profiles/m-h100x8.yaml:5 S=system@etc/config.yaml:2 "
			       "U=user@home/config.yaml:2 LB=local-base@project/../extra/local-base.yaml:2 "
			       "L=local@project/.llmlaunch.yaml:3 "
			       "A=base@profiles/base.yaml:3 B=base@profiles/base.yaml:4 C=other@profiles/other.yaml:2");
	assert_int_equal(s->n_applied, 12);
	free(d);
	assert_int_equal(s->n_layers, 7);
	assert_int_equal(s->layers[0].kind, LL_LAYER_MATCHED);
	assert_string_equal(s->layers[0].requested, "m-any-gpu");
	assert_string_equal(s->layers[1].requested, "m-h100x8");
	assert_int_equal(s->layers[2].kind, LL_LAYER_SYSTEM);
	assert_int_equal(s->layers[3].kind, LL_LAYER_USER);
	assert_int_equal(s->layers[4].kind, LL_LAYER_LOCAL);
	assert_int_equal(s->layers[6].kind, LL_LAYER_CLI);
	/* expect merges field by field, later wins. */
	assert_int_equal(s->expect.gpus, 8);
	assert_int_equal(s->expect.link_layer, LL_LINK_LAYER_ETHERNET);
	assert_int_equal(s->expect.active_rdma_ports, -1);
	/* The broken installed profile is skipped with a warning, not fatal. */
	assert_int_equal(s->n_warnings, 1);
	{
		_cleanup_free_ char *w = ll_asprintf("ignoring installed profile: %s/profiles/broken.yaml:2:14: "
						     "match.gpu_count: 'many' is not an integer from 0 to 65536",
						     tmp);
		assert_string_equal(s->warnings[0], w);
	}
	ll_profile_set_free(s);

	/* A config file with a `match` that does not apply is left out. */
	o.system_config = cond;
	o.no_auto = true;
	assert_int_equal(ll_profiles_resolve(&f, NULL, 0, &o, &s, &err), 0);
	assert_int_equal(s->n_layers, 2);
	assert_int_equal(s->layers[0].kind, LL_LAYER_USER);
	ll_profile_set_free(s);
	f.hostname = "other-host";
	assert_int_equal(ll_profiles_resolve(&f, NULL, 0, &o, &s, &err), 0);
	assert_int_equal(s->n_layers, 3);
	assert_string_equal(s->assignments[0].name, "X");
	ll_profile_set_free(s);

	/* A missing config file is simply absent; no facts: nothing matches. */
	o.system_config = "/nonexistent/config.yaml";
	o.no_auto = false;
	assert_int_equal(ll_profiles_resolve(NULL, NULL, 0, &o, &s, &err), 0);
	assert_int_equal(s->n_layers, 2);
	ll_profile_set_free(s);
}

static void test_list_and_dirs(void **state)
{
	(void)state;
	char **names = NULL, **paths = NULL, **d;
	size_t n = 0;
	_cleanup_free_ char *second = ll_asprintf("%s/extra", tmp);
	char *two[] = { dirs[0], second };

	put("extra/base.yaml", "env:\n  SHADOWED: 1\n");
	assert_int_equal(ll_profile_list_installed(two, 2, &names, &paths, &n, NULL), 0);
	/* Sorted, and the first directory wins for a name found twice. */
	assert_string_equal(names[0], "base");
	{
		_cleanup_free_ char *p = ll_asprintf("%s/profiles/base.yaml", tmp);
		assert_string_equal(paths[0], p);
	}
	assert_string_equal(names[n - 1], "local-base");
	assert_null(names[n]);
	ll_strv_free_null(names);
	ll_strv_free_null(paths);

	setenv("LLMLAUNCH_PROFILE_PATH", "/a:/b/c", 1);
	d = ll_profile_dirs();
	assert_string_equal(d[0], "/a");
	assert_string_equal(d[1], "/b/c");
	assert_null(d[2]);
	ll_strv_free_null(d);
	unsetenv("LLMLAUNCH_PROFILE_PATH");
	/* Unit tests run from the build tree: the source tree's profiles/. */
	d = ll_profile_dirs();
	assert_string_equal(d[0], LLMLAUNCH_SOURCE_PROFILE_DIR);
	ll_strv_free_null(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extends_chain),
		cmocka_unit_test(test_auto_undoes),
		cmocka_unit_test(test_cycles),
		cmocka_unit_test(test_diamond_bounds),
		cmocka_unit_test(test_missing_and_paths),
		cmocka_unit_test(test_when_exists),
		cmocka_unit_test(test_all_layers),
		cmocka_unit_test(test_list_and_dirs),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
