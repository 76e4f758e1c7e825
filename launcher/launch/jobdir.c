/* The job directory: $TMPDIR/llmlaunch-PID, torchrun's --log_dir, the workers' exit
 * records and NCCL's logs. A launch holds an exclusive flock() on its LOCK file for
 * as long as the job runs: the descriptor is inherited across exec and fork, so
 * `run --exec` (llmlaunch becomes torchrun) and torchrun's workers hold it too, and
 * the kernel drops it when the last of them dies, however it dies. The lock file
 * names the host and the boot that took it. A directory is stale when its lock
 * file says this host and this boot and its lock can be taken: the launcher and
 * its job were killed (SIGKILL, the OOM killer, a node reset of the cgroup), and
 * the next launch removes it; or this host but an earlier boot. Another host's
 * directory (a TMPDIR shared between nodes, where flock() may not reach) and one
 * whose lock file says nothing are never ours to judge; nor is a PID: kill(pid, 0)
 * says ESRCH for a live launcher in another PID namespace or on another node. A
 * directory kept on purpose (NCCL logs of a failed job) has no lock file and is
 * left alone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llmlaunch/file.h"
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

/* "host HOSTNAME\nboot BOOT_ID\n": who holds the lock (a boot id is unique per boot,
 * /proc/sys/kernel/random/boot_id, proc(5)). NULL when either is unknown. */
static char *owner_text(void)
{
	_cleanup_free_ char *boot = NULL;
	char host[256];

	if (gethostname(host, sizeof(host)) < 0 || !host[0] || ll_read_line("/proc/sys/kernel/random/boot_id", &boot) < 0 ||
	    !*boot)
		return NULL;
	host[sizeof(host) - 1] = '\0';
	return ll_asprintf("host %s\nboot %s\n", host, boot);
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
	_cleanup_free_ char *d = ll_jobdir_path(tmp), *lock = NULL, *lock_tmp = NULL, *owner = owner_text();
	int fd;

	if (mkdir(d, 0700) < 0) {
		free(d);
		d = ll_asprintf("%s/" JOBDIR_PREFIX "%d-XXXXXX", tmp_dir(tmp), (int)getpid());
		if (!mkdtemp(d))
			return ll_error_set(err, -errno, "cannot create the job directory '%s': %s", d, strerror(errno));
	}
	/* Locked and signed before it gets its name: a cleaner never sees our lock file
	 * unlocked or anonymous. No O_CLOEXEC: the lock must outlive an exec (--exec)
	 * and be held by the job's processes too. */
	lock_tmp = ll_asprintf("%s/" LL_JOBDIR_LOCK ".XXXXXX", d);
	lock = ll_asprintf("%s/" LL_JOBDIR_LOCK, d);
	fd = mkostemp(lock_tmp, 0);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0 ||
	    (owner && write(fd, owner, strlen(owner)) != (ssize_t)strlen(owner) && (errno = EIO)) ||
	    rename(lock_tmp, lock) < 0) {
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

/* "llmlaunch-PID" or "llmlaunch-PID-XXXXXX": the name of a job directory. */
static bool is_jobdir_name(const char *name)
{
	const char *p = name + strlen(JOBDIR_PREFIX);
	char *end;
	long v;

	if (!ll_startswith(name, JOBDIR_PREFIX) || *p < '1' || *p > '9')
		return false;
	v = strtol(p, &end, 10);
	return (*end == '\0' || *end == '-') && v > 0 && v <= (1L << 22);
}

/* Is dirfd/name a job directory whose launcher and job are gone? Ours, a real
 * directory, its lock file signed by this host, and either an earlier boot or a
 * lock that can be taken (nobody holds it: the launcher, an exec'ed torchrun and
 * every worker are gone). Never our own. */
static bool is_stale(int dirfd, const char *name, const char *self, const char *owner)
{
	_cleanup_free_ char *text = NULL;
	struct stat st;
	int fd, lock;
	bool stale = false;

	if (!owner || !is_jobdir_name(name) || (self && strcmp(name, self) == 0))
		return false;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return false;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	lock = openat(fd, LL_JOBDIR_LOCK, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (lock >= 0 && fstat(lock, &st) == 0 && S_ISREG(st.st_mode) && ll_read_fd(lock, 4096, &text, NULL) == 0) {
		const char *nl = strchr(owner, '\n');
		size_t host_len = nl ? (size_t)(nl - owner) + 1 : 0;

		if (strcmp(text, owner) == 0)
			stale = flock(lock, LOCK_EX | LOCK_NB) == 0;
		else if (host_len && strncmp(text, owner, host_len) == 0 && ll_startswith(text + host_len, "boot "))
			stale = true; /* this host, another boot: nothing of it runs */
	}
	if (lock >= 0)
		close(lock);
	close(fd);
	return stale;
}

int ll_jobdir_clean_stale(const char *tmp, char ***ret_removed, size_t *ret_n)
{
	const char *dir = tmp_dir(tmp);
	_cleanup_free_ char *owner = owner_text(), *self_path = ll_jobdir_path(tmp);
	const char *self = strrchr(self_path, '/') + 1;
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
		if (!is_stale(fd, e->d_name, self, owner))
			continue;
		if (rm_tree_at(fd, e->d_name, 0) == 0)
			*(char **)ll_array_push(ret_removed, ret_n, sizeof(char *)) =
				ll_asprintf("%s/%s", dir, e->d_name);
	}
	closedir(d);
	return 0;
}
