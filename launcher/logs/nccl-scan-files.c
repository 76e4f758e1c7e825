/* Files and directories for the NCCL log scanner: each file becomes one stream. */
#include "llmlaunch/nccl-scan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCAN_READ_BUFFER (1u << 20)

/* Regular files are mapped a window at a time (no copy into a buffer, and the
 * window is unmapped before the next, so memory stays flat); anything mmap refuses
 * (pipes, /proc) is read through a fixed buffer. */
#define SCAN_WINDOW (8u << 20)

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

int ll_ncclscan_file(struct ll_ncclscan *s, const char *path, struct ll_error *err)
{
	struct ll_ncclscan_stream *st;
	struct stat sb;
	int fd, r = -1;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ll_error_set(err, -errno, "cannot open '%s': %s", path, strerror(errno));
	st = ll_ncclscan_stream_new(s, path);
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
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

static int name_order(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int scan_dir(struct ll_ncclscan *s, const char *path, int depth, struct ll_error *err)
{
	struct dirent **names = NULL;
	int n, r = 0;

	if (depth > 32)
		return ll_error_set(err, -ELOOP, "cannot read '%s': directories nested too deep", path);
	n = scandir(path, &names, NULL, name_order);
	if (n < 0)
		return ll_error_set(err, -errno, "cannot read directory '%s': %s", path, strerror(errno));
	for (int i = 0; i < n; i++) {
		struct stat sb;
		_cleanup_free_ char *child = NULL;

		if (r < 0 || names[i]->d_name[0] == '.') {
			free(names[i]);
			continue;
		}
		child = ll_asprintf("%s/%s", path, names[i]->d_name);
		free(names[i]);
		if (stat(child, &sb) < 0) {
			r = ll_error_set(err, -errno, "cannot read '%s': %s", child, strerror(errno));
			continue;
		}
		if (S_ISDIR(sb.st_mode))
			r = scan_dir(s, child, depth + 1, err);
		else if (S_ISREG(sb.st_mode))
			r = ll_ncclscan_file(s, child, err);
	}
	free(names);
	return r;
}

int ll_ncclscan_path(struct ll_ncclscan *s, const char *path, struct ll_error *err)
{
	struct stat sb;

	if (stat(path, &sb) < 0)
		return ll_error_set(err, -errno, "cannot read '%s': %s", path, strerror(errno));
	if (S_ISDIR(sb.st_mode))
		return scan_dir(s, path, 0, err);
	return ll_ncclscan_file(s, path, err);
}

