#include "llmlaunch/paths.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "llmlaunch/version.h"

char *ll_exe_dir(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	return ll_strndup(exe, slash == exe ? 1 : (size_t)(slash - exe));
}

bool ll_running_from_build_tree(void)
{
	_cleanup_free_ char *dir = ll_exe_dir();

	if (!dir)
		return false;
	for (int up = 0; up < 2; up++) {
		_cleanup_free_ char *cache = ll_asprintf("%s/CMakeCache.txt", dir);
		char *slash;

		if (access(cache, F_OK) == 0)
			return true;
		slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			return false;
		*slash = '\0';
	}
	return false;
}

char *ll_installed_profile_dir(void)
{
	_cleanup_free_ char *dir = NULL;

	if (ll_running_from_build_tree())
		return ll_strdup(LLMLAUNCH_SOURCE_PROFILE_DIR);
	dir = ll_exe_dir();
	if (!dir)
		return ll_strdup(LLMLAUNCH_PROFILE_DIR);
	return ll_asprintf("%s/%s", dir, LLMLAUNCH_BIN_TO_PROFILE_DIR);
}

static void *module_open(const char *dir, const char *module, struct ll_buf *tried)
{
	_cleanup_free_ char *path = ll_asprintf("%s/llmlaunch-%s.so", dir, module);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		if (tried->len)
			ll_buf_add(tried, "; ");
		ll_buf_add(tried, dlerror());
	}
	return h;
}

int ll_module_symbol(const char *module, const char *symbol, void **ret, struct ll_error *err)
{
	const char *env = getenv("LLMLAUNCH_MODULE_DIR");
	_cleanup_free_ char *exe_dir = ll_exe_dir();
	struct ll_buf tried;
	void *h = NULL, *sym;

	ll_buf_init(&tried);
	if (env && *env)
		h = module_open(env, module, &tried);
	if (!h && exe_dir) {
		_cleanup_free_ char *installed = ll_asprintf("%s/%s", exe_dir, LLMLAUNCH_BIN_TO_MODULE_DIR);
		h = module_open(installed, module, &tried);
		if (!h)
			h = module_open(exe_dir, module, &tried);
	}
	if (!h) {
		ll_error_set(err, -ENOENT, "cannot load the '%s' module: %s", module, tried.s);
		ll_error_hint(err, "reinstall llmlaunch, or point LLMLAUNCH_MODULE_DIR at the directory holding llmlaunch-%s.so",
			      module);
		ll_buf_release(&tried);
		return -ENOENT;
	}
	ll_buf_release(&tried);
	sym = dlsym(h, symbol);
	if (!sym)
		return ll_error_set(err, -ENOENT, "module '%s' has no '%s': version mismatch between the binary and its modules",
				    module, symbol);
	*ret = sym;
	return 0;
}
