/* Reading an environment: the process's own, or an environ-style array a command
 * was handed (tests, the TaskProlog's job environment). */
#ifndef LLMLAUNCH_ENV_H
#define LLMLAUNCH_ENV_H

#include <stdbool.h>

/* Value of NAME in `env` (an array of "NAME=value" ending in NULL; NULL means the
 * process's environment), or NULL when it is not there. The pointer is borrowed. */
const char *ll_env_get(char *const *env, const char *name);

/* The same, but an empty value counts as unset (what a user means by NAME=). */
const char *ll_env_get_nonempty(char *const *env, const char *name);

/* The environment a NULL `env` stands for. */
char *const *ll_env_or_process(char *const *env);

#endif
