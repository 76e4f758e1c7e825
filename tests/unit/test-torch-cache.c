/* The torch question's cache (probe/torch.c) with real interpreters, in a private
 * $LLMLAUNCH_CACHE_DIR: a python without torch (a venv of the system's python, no
 * system site-packages) is asked once and its "not importable" answer kept, until a
 * torch appears where it looks; a failure to ask (an interpreter that does not run,
 * or dies after saying the same words) is never kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "llmlaunch/child.h"
#include "llmlaunch/file.h"
#include "llmlaunch/torch.h"

#define SYSTEM_PYTHON "/usr/bin/python3"

struct work {
	char dir[64];
	char *cache; /* DIR/cache: $LLMLAUNCH_CACHE_DIR */
};

static int work_setup(void **state)
{
	struct work *w = ll_calloc(1, sizeof(*w));

	snprintf(w->dir, sizeof(w->dir), "/tmp/ll-torch-cache-XXXXXX");
	if (!mkdtemp(w->dir)) {
		free(w);
		return -1;
	}
	w->cache = ll_asprintf("%s/cache", w->dir);
	if (mkdir(w->cache, 0700) < 0)
		return -1;
	setenv("LLMLAUNCH_CACHE_DIR", w->cache, 1);
	*state = w;
	return 0;
}

static int work_teardown(void **state)
{
	struct work *w = *state;
	char *cmd = ll_asprintf("rm -rf '%s'", w->dir);
	int r = system(cmd);

	free(cmd);
	free(w->cache);
	free(w);
	return r == 0 ? 0 : -1;
}

static bool starts_with(const char *s, const char *prefix)
{
	return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

static size_t count_cache_files(const char *cache)
{
	char *cmd = ll_asprintf("ls '%s' | grep -c '^torch-'", cache);
	FILE *f = popen(cmd, "r");
	unsigned n = 0;

	free(cmd);
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%u", &n), 1);
	pclose(f);
	return n;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	assert_int_equal(ll_file_replace(path, text, strlen(text), mode), 0);
}

/* A python without torch: asked once, then the cache answers; a torch installed where
 * it looks is seen on the next question. */
static void test_no_torch_kept(void **state)
{
	struct work *w = *state;
	struct ll_torch_facts t = { 0 };
	_cleanup_free_ char *venv = ll_asprintf("%s/venv", w->dir);
	_cleanup_free_ char *python = ll_asprintf("%s/bin/python3", venv);
	char *argv[] = { SYSTEM_PYTHON, "-m", "venv", "--without-pip", venv, NULL };
	struct ll_error err = { 0 };
	_cleanup_free_ char *site = NULL, *pkg = NULL, *cmd = NULL;
	FILE *f;
	int status = -1;

	if (access(SYSTEM_PYTHON, X_OK) < 0 || ll_run_quiet(argv, 60, &status, &err) < 0 || status != 0) {
		ll_error_clear(&err);
		print_message("SKIP: '%s -m venv' made no venv here\n", SYSTEM_PYTHON);
		skip();
	}

	ll_torch_probe(python, NULL, false, &t);
	assert_string_equal(t.error, "torch is not importable");
	assert_int_equal(t.libuv, LL_TORCH_LIBUV_UNKNOWN);
	assert_true(t.n_path > 0);
	assert_true(starts_with(t.cache_status, "miss ("));
	assert_non_null(strstr(t.cache_status, "; written '"));
	assert_int_equal(count_cache_files(w->cache), 1);

	/* The same question again: the kept answer, python not run. */
	ll_torch_probe(python, NULL, false, &t);
	assert_true(starts_with(t.cache_status, "hit '"));
	assert_string_equal(t.error, "torch is not importable");
	assert_int_equal(t.libuv, LL_TORCH_LIBUV_UNKNOWN);

	/* --no-cache asks anyway. */
	ll_torch_probe(python, NULL, true, &t);
	assert_string_equal(t.cache_status, "off (--no-cache)");
	assert_string_equal(t.error, "torch is not importable");

	/* torch installed in the venv's site-packages (a torch too old to import, read
	 * from its version.py): the kept "no" no longer holds. */
	cmd = ll_asprintf("%s -c 'import site; print(site.getsitepackages()[0])'", python);
	f = popen(cmd, "r");
	assert_non_null(f);
	site = ll_calloc(1, 4096);
	assert_non_null(fgets(site, 4096, f));
	pclose(f);
	site[strcspn(site, "\n")] = '\0';
	pkg = ll_asprintf("%s/torch", site);
	assert_int_equal(mkdir(pkg, 0755), 0);
	{
		_cleanup_free_ char *init = ll_asprintf("%s/__init__.py", pkg);
		_cleanup_free_ char *version = ll_asprintf("%s/version.py", pkg);

		write_file(init, "", 0644);
		write_file(version, "__version__ = '1.13.1'\n", 0644);
	}
	ll_torch_probe(python, NULL, false, &t);
	assert_true(starts_with(t.cache_status, "miss ("));
	assert_null(t.error);
	assert_string_equal(t.version, "1.13.1");
	assert_int_equal(t.libuv, LL_TORCH_LIBUV_NOT_ASKED);
	ll_torch_probe(python, NULL, false, &t);
	assert_true(starts_with(t.cache_status, "hit '"));
	assert_string_equal(t.version, "1.13.1");
	ll_torch_facts_release(&t);
}

/* Failures to ask are not answers: nothing is kept, and the next question asks again. */
static void test_failure_not_kept(void **state)
{
	struct work *w = *state;
	struct ll_torch_facts t = { 0 };
	/* Says the words of a "no", then dies: not a whole answer. */
	_cleanup_free_ char *dies = ll_asprintf("%s/dies", w->dir);
	/* Not executable: the start itself fails. */
	_cleanup_free_ char *cannot = ll_asprintf("%s/cannot", w->dir);
	const char *const pythons[] = { dies, cannot };

	write_file(dies, "#!/bin/sh\necho 'error torch is not importable'\necho 'path /'\nexit 3\n", 0755);
	write_file(cannot, "#!/bin/sh\nexit 0\n", 0644);
	for (size_t i = 0; i < LL_ARRAY_SIZE(pythons); i++) {
		for (int round = 0; round < 2; round++) {
			ll_torch_probe(pythons[i], NULL, false, &t);
			assert_int_equal(t.libuv, LL_TORCH_LIBUV_UNKNOWN);
			assert_non_null(t.error);
			assert_true(starts_with(t.cache_status, "miss ("));
			assert_non_null(strstr(t.cache_status, "; no answer to keep"));
		}
	}
	assert_int_equal(count_cache_files(w->cache), 0);
	ll_torch_facts_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_no_torch_kept, work_setup, work_teardown),
		cmocka_unit_test_setup_teardown(test_failure_not_kept, work_setup, work_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
