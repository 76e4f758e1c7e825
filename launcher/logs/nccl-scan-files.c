/* Files and directories for the NCCL log scanner: each file becomes one stream. */
#include "nccl-scan-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCAN_READ_BUFFER (1u << 20)

/* Regular files are mapped a window (SCAN_WINDOW) at a time (no copy into a buffer, and
 * the window is unmapped before the next, so memory stays flat); anything mmap refuses
 * (pipes, /proc) is read through a fixed buffer. */

static int scan_fd_read(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, int fd, const char *path,
			struct ll_error *err)
{
	_cleanup_free_ char *buf = ll_malloc(SCAN_READ_BUFFER);

	for (;;) {
		ssize_t got = read(fd, buf, SCAN_READ_BUFFER);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return ll_error_set(err, -errno, "cannot read '%s': %s", path, strerror(errno));
		}
		if (got == 0)
			return 0;
		ll_ncclscan_feed(s, st, buf, (size_t)got);
	}
}

static int scan_fd_mapped(struct ll_ncclscan *s, struct ll_ncclscan_stream *st, int fd, off_t size)
{
	for (off_t off = 0; off < size; off += SCAN_WINDOW) {
		size_t len = size - off < SCAN_WINDOW ? (size_t)(size - off) : SCAN_WINDOW;
		void *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, off);

		/* At the start: let the caller read() instead. Later: the file shrank. */
		if (p == MAP_FAILED)
			return off == 0 ? -errno : -EIO;
		ll_ncclscan_feed(s, st, p, len);
		munmap(p, len);
	}
	return 0;
}

/* A log given by name may be a pipe (`llmlaunch logs <(zcat job.log.gz)`, a FIFO
 * a job writes): it is read until its writers close it. Opened O_NONBLOCK so that a
 * FIFO nobody writes cannot make open() wait; then read blocking, where a FIFO
 * without writers reads as its end. Devices and sockets are refused: /dev/zero
 * would be read forever. */
static int open_log(const char *path, bool pipes, struct stat *sb, struct ll_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return ll_error_set(err, -errno, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, sb) < 0) {
		int r = -errno;
		close(fd);
		return ll_error_set(err, r, "cannot read '%s': %s", path, strerror(-r));
	}
	if (S_ISREG(sb->st_mode) || (pipes && S_ISFIFO(sb->st_mode))) {
		if (S_ISFIFO(sb->st_mode))
			(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		return fd;
	}
	close(fd);
	if (S_ISDIR(sb->st_mode))
		return ll_error_set(err, -EISDIR, "cannot read '%s': %s", path, strerror(EISDIR));
	return ll_error_set(err, -EINVAL, "cannot read '%s': not a regular file or a pipe (a socket or device)", path);
}

static int scan_file(struct ll_ncclscan *s, const char *path, bool pipes, struct ll_error *err)
{
	struct ll_ncclscan_stream *st;
	struct stat sb;
	int fd, r = -1;

	fd = open_log(path, pipes, &sb, err);
	if (fd < 0)
		return fd;
	st = ll_ncclscan_stream_new(s, path);
	if (S_ISREG(sb.st_mode) && sb.st_size > 0) {
		r = ncclscan_parallel_file(s, st, fd, sb.st_size);
		/* Its pieces are read once: after an error some were, so reading the file
		 * again would count their lines twice. */
		if (r < 0) {
			close(fd);
			return ll_error_set(err, r, "cannot read '%s': %s%s", path, strerror(-r),
					    r == -EIO ? " (did it shrink while being read?)" : "");
		}
		if (r == 1)
			r = scan_fd_mapped(s, st, fd, sb.st_size);
		if (r == -EIO) {
			close(fd);
			return ll_error_set(err, -EIO, "cannot map '%s' (did it shrink while being read?)", path);
		}
	}
	if (r < 0) {
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
		r = scan_fd_read(s, st, fd, path, err);
	}
	ll_ncclscan_flush(s, st);
	close(fd);
	return r;
}

int ll_ncclscan_file(struct ll_ncclscan *s, const char *path, struct ll_error *err)
{
	return scan_file(s, path, true, err);
}

static int name_order(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static void skip(struct ll_ncclscan *s, const char *path, const char *why)
{
	s->skipped_total++;
	if (s->n_skipped < LL_NCCL_MAX_SKIPPED)
		*(char **)ll_array_push(&s->skipped, &s->n_skipped, sizeof(char *)) = ll_asprintf("%s: %s", path, why);
}

#define SCAN_MAX_DEPTH 32

/* Directory links are not followed: no loop can form, and a link to '/' cannot make
 * `logs` read the machine. What cannot be read is skipped, never the end of the walk. */
static void scan_dir(struct ll_ncclscan *s, const char *path, int depth)
{
	struct dirent **names = NULL;
	int n;

	n = scandir(path, &names, NULL, name_order);
	if (n < 0) {
		skip(s, path, strerror(errno));
		return;
	}
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *child = NULL;
		struct ll_error err = { 0 };
		struct stat sb;

		if (names[i]->d_name[0] == '.') {
			free(names[i]);
			continue;
		}
		child = ll_asprintf("%s/%s", path, names[i]->d_name);
		free(names[i]);
		if (lstat(child, &sb) < 0) {
			skip(s, child, strerror(errno));
			continue;
		}
		if (S_ISLNK(sb.st_mode)) {
			if (stat(child, &sb) < 0) {
				skip(s, child, errno == ENOENT ? "a dangling symbolic link" : strerror(errno));
				continue;
			}
			if (S_ISDIR(sb.st_mode)) {
				skip(s, child, "a symbolic link to a directory, not followed");
				continue;
			}
		}
		if (S_ISDIR(sb.st_mode)) {
			if (depth + 1 > SCAN_MAX_DEPTH)
				skip(s, child, "directories nested more than 32 deep");
			else
				scan_dir(s, child, depth + 1);
		} else if (!S_ISREG(sb.st_mode)) {
			skip(s, child, "not a regular file (a FIFO, socket or device)");
		} else if (scan_file(s, child, false, &err) < 0) {
			/* The message names the file already; keep only why. */
			const char *why = err.message ? strstr(err.message, "': ") : NULL;

			skip(s, child, why ? why + 3 : "cannot be read");
			ll_error_clear(&err);
		}
	}
	free(names);
}

int ll_ncclscan_path(struct ll_ncclscan *s, const char *path, struct ll_error *err)
{
	struct stat sb;

	if (stat(path, &sb) < 0)
		return ll_error_set(err, -errno, "cannot read '%s': %s", path, strerror(errno));
	if (S_ISDIR(sb.st_mode)) {
		/* Only a directory that cannot be listed at all is this path's failure. */
		DIR *d = opendir(path);

		if (!d)
			return ll_error_set(err, -errno, "cannot read directory '%s': %s", path, strerror(errno));
		closedir(d);
		scan_dir(s, path, 0);
		return 0;
	}
	return ll_ncclscan_file(s, path, err);
}
