#include "llmlaunch/env.h"

#include <string.h>

extern char **environ;

char *const *ll_env_or_process(char *const *env)
{
	return env ? env : environ;
}

const char *ll_env_get(char *const *env, const char *name)
{
	size_t n = strlen(name);

	env = ll_env_or_process(env);
	for (; env && *env; env++)
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

const char *ll_env_get_nonempty(char *const *env, const char *name)
{
	const char *v = ll_env_get(env, name);

	return v && *v ? v : NULL;
}
