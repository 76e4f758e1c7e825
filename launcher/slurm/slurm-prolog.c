/* What the Slurm Prolog needs besides the health check: the state directory it
 * shares with the TaskProlog, and the drain call. A Prolog that hangs holds the job
 * (and, after PrologEpilogTimeout, drains the node for a fault that is ours), so
 * every child here runs bounded (llmlaunch/child.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llmlaunch/probe.h"
#include "llmlaunch/slurm.h"

char *ll_slurm_snapshot_path(const char *state_dir)
{
	return ll_asprintf("%s/%s", state_dir, LL_SLURM_SNAPSHOT_NAME);
}

/* Is the directory open at fd one that `owner` alone may change? */
static int check_owner(int fd, const char *dir, uid_t owner, struct ll_error *err)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return ll_error_set(err, -errno, "state directory '%s': %s", dir, strerror(errno));
	if (st.st_uid != owner)
		return ll_error_set(err, -EPERM, "state directory '%s' is owned by uid %u, not %u: refused", dir,
				    (unsigned)st.st_uid, (unsigned)owner);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return ll_error_set(err, -EPERM, "state directory '%s' is writable by %s (mode %04o): refused", dir,
				    st.st_mode & S_IWOTH ? "others" : "its group", (unsigned)(st.st_mode & 07777));
	return 0;
}

int ll_slurm_state_dir_open(const char *dir, uid_t owner, bool create, struct ll_error *err)
{
	_cleanup_free_ char *copy = NULL;
	char *save = NULL, *part, *next;
	int fd, r;

	if (!dir || dir[0] != '/')
		return ll_error_set(err, -EINVAL, "state directory '%s' is not an absolute path", dir ? dir : "");
	/* One component at a time, none of them followed if it is a link: a planted
	 * link anywhere on the path would send root's writes elsewhere. */
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return ll_error_set(err, -errno, "cannot open '/': %s", strerror(errno));
	copy = ll_strdup(dir);
	for (part = strtok_r(copy, "/", &save); part; part = next) {
		int sub;

		next = strtok_r(NULL, "/", &save);
		if (strcmp(part, ".") == 0 || strcmp(part, "..") == 0) {
			close(fd);
			return ll_error_set(err, -EINVAL, "state directory '%s' has a '%s' component: refused", dir, part);
		}
		sub = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0 && errno == ENOENT && !next && create) {
			/* Users read the snapshot from their TaskProlog: searchable whatever
			 * umask slurmd gave its Prolog. */
			if (mkdirat(fd, part, 0755) < 0 && errno != EEXIST) {
				r = -errno;
				close(fd);
				ll_error_set(err, r, "cannot create state directory '%s': %s", dir, strerror(-r));
				return ll_error_hint(err, "create its parent or pass --state-dir DIR"), r;
			}
			sub = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				struct stat st;

				if (fstat(sub, &st) == 0 && st.st_uid == owner && (st.st_mode & 07777) != 0755)
					(void)fchmod(sub, 0755);
			}
		}
		if (sub < 0) {
			r = -errno;
			close(fd);
			if (r == -ELOOP || r == -ENOTDIR)
				return ll_error_set(err, r, "state directory '%s': '%s' is a symbolic link or not a directory: refused",
						    dir, part);
			if (r == -ENOENT && create) {
				ll_error_set(err, r, "cannot create state directory '%s': %s", dir, strerror(-r));
				return ll_error_hint(err, "create its parent or pass --state-dir DIR"), r;
			}
			return ll_error_set(err, r, "cannot open state directory '%s': %s", dir, strerror(-r));
		}
		close(fd);
		fd = sub;
	}
	r = check_owner(fd, dir, owner, err);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int ll_slurm_save_snapshot(hwloc_topology_t topo, const char *state_dir, char **ret_path, struct ll_error *err)
{
	_cleanup_free_ char *path = ll_slurm_snapshot_path(state_dir);
	int fd, r;

	fd = ll_slurm_state_dir_open(state_dir, geteuid(), true, err);
	if (fd < 0)
		return fd;
	/* A temporary file next to the target, 0644, then renamed over it. */
	r = ll_probe_save_at(topo, fd, LL_SLURM_SNAPSHOT_NAME, path, err);
	close(fd);
	if (r < 0)
		return r;
	if (ret_path)
		*ret_path = LL_TAKE(path);
	return 0;
}

int ll_slurm_snapshot_trusted(const char *state_dir, char **ret_path, int *ret_dirfd, struct ll_error *err)
{
	struct stat st;
	int fd, r;

	*ret_dirfd = -1;
	fd = ll_slurm_state_dir_open(state_dir, 0, false, err);
	if (fd < 0)
		return fd;
	if (fstatat(fd, LL_SLURM_SNAPSHOT_NAME, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		r = ll_error_set(err, -errno, "'%s/%s': %s", state_dir, LL_SLURM_SNAPSHOT_NAME, strerror(errno));
	} else if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		r = ll_error_set(err, -EPERM, "'%s/%s' is not a regular file that only root may change: refused", state_dir,
				 LL_SLURM_SNAPSHOT_NAME);
	} else {
		/* Read through the directory already checked: the path cannot be swapped
		 * between the check and the load. */
		*ret_dirfd = fd;
		*ret_path = ll_asprintf("/proc/self/fd/%d/%s", fd, LL_SLURM_SNAPSHOT_NAME);
		return 0;
	}
	close(fd);
	return r;
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
