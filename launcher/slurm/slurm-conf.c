/* One value of slurm.conf, for the few node-side decisions that depend on how the
 * site configured Slurm. slurm.conf(5): "Key=Value" pairs separated by white space
 * (several may share a line, as NodeName lines do), keywords case-insensitive,
 * '#' starts a comment. Files named by Include lines are not followed: the keys
 * read here are global settings, which sites keep in the main file. */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "llmlaunch/file.h"
#include "llmlaunch/slurm.h"

/* slurm.conf of a large site lists thousands of nodes; a few MiB is plenty. */
#define SLURM_CONF_MAX (8u << 20)

int ll_slurm_conf_get(const char *path, const char *key, char **ret)
{
	_cleanup_free_ char *text = NULL;
	size_t klen = strlen(key);
	char *line, *save = NULL;
	int r;

	*ret = NULL;
	if (!path || !*path)
		return -ENOENT;
	if ((r = ll_read_file(path, SLURM_CONF_MAX, &text)) < 0)
		return r;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *hash = strchr(line, '#');
		char *tok, *tsave = NULL;

		if (hash)
			*hash = '\0';
		for (tok = strtok_r(line, " \t\r", &tsave); tok; tok = strtok_r(NULL, " \t\r", &tsave))
			if (strncasecmp(tok, key, klen) == 0 && tok[klen] == '=') {
				/* The last one wins, as in Slurm's own parser. */
				free(*ret);
				*ret = ll_strdup(tok + klen + 1);
			}
	}
	return *ret ? 0 : -ENOENT;
}

bool ll_slurm_conf_imex_switch(const char *path)
{
	_cleanup_free_ char *v = NULL;

	return ll_slurm_conf_get(path, "SwitchType", &v) == 0 && strcasecmp(v, "switch/nvidia_imex") == 0;
}
