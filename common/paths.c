#include "llmlaunch/paths.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

char *ll_installed_python_file(const char *name)
{
	_cleanup_free_ char *dir = NULL;

	if (ll_running_from_build_tree())
		return ll_asprintf("%s/%s", LLMLAUNCH_SOURCE_PYTHON_DIR, name);
	dir = ll_exe_dir();
	if (!dir)
		return NULL;
	return ll_asprintf("%s/%s/%s", dir, LLMLAUNCH_BIN_TO_PYTHON_DIR, name);
}

static bool is_program(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

char *ll_find_program(const char *name)
{
	const char *path;

	if (strchr(name, '/'))
		return is_program(name) ? ll_strdup(name) : NULL;
	path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path;;) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		char *cand = ll_asprintf("%.*s%s%s", (int)n, p, n ? "/" : "", name);

		if (is_program(cand))
			return cand;
		free(cand);
		if (!colon)
			return NULL;
		p = colon + 1;
	}
}
