#include "llmlaunch/module.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

#include "llmlaunch/paths.h"
#include "llmlaunch/version.h"

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
