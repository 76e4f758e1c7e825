/* The job directory: $TMPDIR/llmlaunch-PID, torchrun's --log_dir, the workers' exit
 * records and NCCL's logs. A launch holds an exclusive flock() on its LOCK file for
 * as long as it runs; the kernel drops the lock when the process dies, however it
 * dies. So a directory whose lock can be taken, and whose PID is gone, was left by a
 * launcher that was killed (SIGKILL, the OOM killer, a node reset of the cgroup):
 * the next launch removes it. A directory kept on purpose (NCCL logs of a failed
 * job) has no lock file and is left alone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llmlaunch/launch.h"

#define JOBDIR_PREFIX "llmlaunch-"
/* Deeper than torchrun ever nests (attempt/rank/stderr.log), and a bound on the
 * recursion whatever the tree holds. */
#define JOBDIR_MAX_DEPTH 16

static const char *tmp_dir(const char *tmp)
{
	if (!tmp)
		tmp = getenv("TMPDIR");
	return tmp && *tmp ? tmp : "/tmp";
}

char *ll_jobdir_path(const char *tmp)
{
	return ll_asprintf("%s/" JOBDIR_PREFIX "%d", tmp_dir(tmp), (int)getpid());
}

char *ll_jobdir_pattern(const char *tmp)
{
	return ll_asprintf("%s/" JOBDIR_PREFIX "PID", tmp_dir(tmp));
}

int ll_jobdir_create(const char *tmp, struct ll_jobdir *ret, struct ll_error *err)
{
	_cleanup_free_ char *d = ll_jobdir_path(tmp), *lock = NULL, *lock_tmp = NULL;
	int fd;

	if (mkdir(d, 0700) < 0) {
		free(d);
		d = ll_asprintf("%s/" JOBDIR_PREFIX "%d-XXXXXX", tmp_dir(tmp), (int)getpid());
		if (!mkdtemp(d))
			return ll_error_set(err, -errno, "cannot create the job directory '%s': %s", d, strerror(errno));
	}
	/* Locked before it gets its name: a cleaner never sees our lock file unlocked. */
	lock_tmp = ll_asprintf("%s/" LL_JOBDIR_LOCK ".XXXXXX", d);
	lock = ll_asprintf("%s/" LL_JOBDIR_LOCK, d);
	fd = mkostemp(lock_tmp, O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0 || rename(lock_tmp, lock) < 0) {
		int r = -errno;

		if (fd >= 0) {
			close(fd);
			unlink(lock_tmp);
		}
		rmdir(d);
		return ll_error_set(err, r, "cannot lock the job directory '%s': %s", d, strerror(-r));
	}
	ret->path = LL_TAKE(d);
	ret->lock_fd = fd;
	return 0;
}

/* Remove dirfd/name and everything below it, never following a symbolic link (a
 * link is removed, not what it points to). Best effort; 0 when it is gone. */
static int rm_tree_at(int dirfd, const char *name, int depth)
{
	struct dirent *e;
	DIR *d;
	int fd, r = 0;

	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if ((errno != EISDIR && errno != EPERM) || depth > JOBDIR_MAX_DEPTH)
		return -errno;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((e = readdir(d))) {
		int k;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		k = rm_tree_at(fd, e->d_name, depth + 1);
		if (k < 0)
			r = k;
	}
	closedir(d);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && r == 0)
		r = -errno;
	return r;
}

/* Remove the directory when torchrun left only empty directories in it (it makes
 * one per attempt and rank even when nothing is redirected). Anything else, a log
 * file above all, keeps the directory. */
static bool rmdir_empty_tree(const char *path, int depth)
{
	DIR *d;
	struct dirent *e;
	bool empty = true;

	if (depth > JOBDIR_MAX_DEPTH || !(d = opendir(path)))
		return false;
	while ((e = readdir(d))) {
		char *sub;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (e->d_type != DT_DIR) {
			empty = false;
			continue;
		}
		sub = ll_asprintf("%s/%s", path, e->d_name);
		if (!rmdir_empty_tree(sub, depth + 1))
			empty = false;
		free(sub);
	}
	closedir(d);
	return empty && rmdir(path) == 0;
}

void ll_jobdir_release(struct ll_jobdir *j)
{
	_cleanup_free_ char *lock = NULL;

	if (!j->path)
		return;
	/* The lock file goes first: what stays (logs kept on purpose) is no longer a
	 * job directory that a later launch may remove. */
	lock = ll_asprintf("%s/" LL_JOBDIR_LOCK, j->path);
	unlink(lock);
	if (j->lock_fd >= 0)
		close(j->lock_fd);
	rmdir_empty_tree(j->path, 0);
	free(j->path);
	j->path = NULL;
	j->lock_fd = -1;
}

/* "llmlaunch-PID" or "llmlaunch-PID-XXXXXX": the PID, else 0. */
static pid_t name_pid(const char *name)
{
	const char *p = name + strlen(JOBDIR_PREFIX);
	char *end;
	long v;

	if (!ll_startswith(name, JOBDIR_PREFIX) || *p < '1' || *p > '9')
		return 0;
	v = strtol(p, &end, 10);
	if ((*end != '\0' && *end != '-') || v <= 0 || v > (1L << 22))
		return 0;
	return (pid_t)v;
}

/* Is dirfd/name a job directory whose launcher is gone? Ours, a real directory,
 * its PID no longer running, and its lock file there and not locked. */
static bool is_stale(int dirfd, const char *name)
{
	struct stat st;
	pid_t pid = name_pid(name);
	int fd, lock;
	bool stale = false;

	if (pid <= 0 || pid == getpid())
		return false;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return false;
	/* Alive, or alive as someone else's process: not ours to judge. */
	if (kill(pid, 0) == 0 || errno != ESRCH)
		return false;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	lock = openat(fd, LL_JOBDIR_LOCK, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (lock >= 0) {
		stale = fstat(lock, &st) == 0 && S_ISREG(st.st_mode) && flock(lock, LOCK_EX | LOCK_NB) == 0;
		close(lock);
	}
	close(fd);
	return stale;
}

int ll_jobdir_clean_stale(const char *tmp, char ***ret_removed, size_t *ret_n)
{
	const char *dir = tmp_dir(tmp);
	struct dirent *e;
	DIR *d;
	int fd;

	*ret_removed = NULL;
	*ret_n = 0;
	d = opendir(dir);
	if (!d)
		return -errno;
	fd = dirfd(d);
	while ((e = readdir(d))) {
		if (!ll_startswith(e->d_name, JOBDIR_PREFIX) || !is_stale(fd, e->d_name))
			continue;
		if (rm_tree_at(fd, e->d_name, 0) == 0)
			*(char **)ll_array_push(ret_removed, ret_n, sizeof(char *)) =
				ll_asprintf("%s/%s", dir, e->d_name);
	}
	closedir(d);
	return 0;
}
