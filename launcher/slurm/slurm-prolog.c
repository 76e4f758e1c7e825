/* What the Slurm Prolog needs besides the health check: the state directory it
 * shares with the TaskProlog, and the drain call. A Prolog that hangs holds the job
 * (and, after PrologEpilogTimeout, drains the node for a fault that is ours), so
 * every child here runs bounded (llmlaunch/child.h). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llmlaunch/probe.h"
#include "llmlaunch/slurm.h"

char *ll_slurm_snapshot_path(const char *state_dir)
{
	return ll_asprintf("%s/%s", state_dir, LL_SLURM_SNAPSHOT_NAME);
}

int ll_slurm_save_snapshot(hwloc_topology_t topo, const char *state_dir, char **ret_path, struct ll_error *err)
{
	_cleanup_free_ char *path = ll_slurm_snapshot_path(state_dir);
	int r;

	/* Users read the snapshot from their TaskProlog: the directory must be searchable,
	 * whatever umask slurmd gave its Prolog (an existing directory is the admin's). */
	if (mkdir(state_dir, 0755) == 0) {
		if (chmod(state_dir, 0755) < 0) {
			r = -errno;
			return ll_error_set(err, r, "cannot make state directory '%s' readable: %s", state_dir,
					    strerror(-r));
		}
	} else if (errno != EEXIST) {
		r = -errno;
		ll_error_set(err, r, "cannot create state directory '%s': %s", state_dir, strerror(-r));
		ll_error_hint(err, "create its parent or pass --state-dir DIR");
		return r;
	}
	/* ll_probe_save writes a temporary file next to the target, 0644, then renames it. */
	r = ll_probe_save(topo, path, err);
	if (r < 0)
		return r;
	if (ret_path)
		*ret_path = LL_TAKE(path);
	return 0;
}


static bool executable(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

char *ll_slurm_find_scontrol(const char *hint)
{
	static const char *const fallback[] = { "/usr/bin/scontrol", "/usr/local/bin/scontrol", "/opt/slurm/bin/scontrol" };
	const char *path = getenv("PATH");

	if (hint)
		return executable(hint) ? ll_strdup(hint) : NULL;
	if (path && *path) {
		_cleanup_free_ char *copy = ll_strdup(path);
		char *save = NULL;

		for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
			_cleanup_free_ char *p = NULL;

			if (*d != '/')
				continue; /* a relative PATH entry means the Prolog's cwd: never trusted as root */
			p = ll_asprintf("%s/scontrol", d);
			if (executable(p))
				return LL_TAKE(p);
		}
	}
	for (size_t i = 0; i < LL_ARRAY_SIZE(fallback); i++)
		if (executable(fallback[i]))
			return ll_strdup(fallback[i]);
	return NULL;
}

int ll_slurm_drain(const char *scontrol, const char *node, const char *reason, double timeout_s,
		   struct ll_error *err)
{
	_cleanup_free_ char *nodearg = ll_asprintf("NodeName=%s", node);
	_cleanup_free_ char *reasonarg = ll_asprintf("Reason=%.200s", reason);
	char *argv[] = { (char *)scontrol, "update", nodearg, "State=DRAIN", reasonarg, NULL };
	int r;

	for (char *c = reasonarg; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	r = ll_spawn_bounded(argv, timeout_s, err);
	if (r > 0)
		return ll_error_set(err, -EIO, "'%s update NodeName=%s State=DRAIN' exited with status %d", scontrol,
				    node, r);
	return r;
}
