#include "llmlaunch/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llmlaunch/util.h"

static int io_resource_errno;

void ll_io_resource_note(int r)
{
	if (!io_resource_errno && (r == -EMFILE || r == -ENFILE || r == -ENOMEM))
		io_resource_errno = r;
}

int ll_io_resource_take(void)
{
	int r = io_resource_errno;

	io_resource_errno = 0;
	return r;
}

int ll_open_regular(const char *path, int flags, struct stat *ret_st)
{
	struct stat st;
	int fd, r = 0;

	/* O_NONBLOCK: opening a FIFO with no writer would wait for one forever.
	 * It changes nothing for a regular file, the only kind read on from here. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | flags);
	if (fd < 0) {
		ll_io_resource_note(-errno);
		return -errno;
	}
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (S_ISDIR(st.st_mode))
		r = -EISDIR;
	else if (!S_ISREG(st.st_mode))
		r = -EINVAL;
	if (r < 0) {
		close(fd);
		return r;
	}
	if (ret_st)
		*ret_st = st;
	return fd;
}

const char *ll_file_strerror(int r)
{
	switch (r) {
	case -EINVAL:
		return "not a regular file (a FIFO, socket or device)";
	case -EBADMSG:
		return "it holds a NUL byte (binary data)";
	case -EFBIG:
		return "too large";
	default:
		return strerror(-r);
	}
}

int ll_read_fd(int fd, size_t max, char **ret, size_t *ret_len)
{
	struct ll_buf b;
	char chunk[16384];

	ll_buf_init(&b);
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0) {
			int r = -errno;
			if (r == -EINTR)
				continue;
			ll_io_resource_note(r);
			ll_buf_release(&b);
			return r;
		}
		if (n == 0)
			break;
		if (b.len + (size_t)n > max) {
			ll_buf_release(&b);
			return -EFBIG;
		}
		ll_buf_addn(&b, chunk, (size_t)n);
	}
	if (ret_len)
		*ret_len = b.len;
	*ret = ll_buf_detach(&b);
	return 0;
}

int ll_read_file_n(const char *path, size_t max, char **ret, size_t *ret_len)
{
	/* Filled whenever a descriptor comes back; GCC's Release build cannot see that. */
	struct stat st = { 0 };
	int fd, r;

	fd = ll_open_regular(path, 0, &st);
	if (fd < 0)
		return fd;
	/* The size first: a wrong path (a disk image) fails without being read. */
	if ((uintmax_t)st.st_size > max)
		r = -EFBIG;
	else
		r = ll_read_fd(fd, max, ret, ret_len);
	close(fd);
	return r;
}

int ll_read_file(const char *path, size_t max, char **ret)
{
	char *s;
	size_t len;
	int r;

	r = ll_read_file_n(path, max, &s, &len);
	if (r < 0)
		return r;
	if (memchr(s, '\0', len)) {
		free(s);
		return -EBADMSG;
	}
	*ret = s;
	return 0;
}

int ll_read_line(const char *path, char **ret)
{
	char *s, *nl;
	int r;

	r = ll_read_file(path, 1 << 16, &s);
	if (r < 0)
		return r;
	nl = strchr(s, '\n');
	if (nl)
		*nl = '\0';
	ll_strstrip_end(s);
	*ret = s;
	return 0;
}

/* Write all of data to fd, give it `mode`, close it: 0 or the first -errno. */
static int write_whole(int fd, const void *data, size_t len, mode_t mode)
{
	int r = 0;

	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, (const char *)data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		off += (size_t)n;
	}
	if (r == 0 && fchmod(fd, mode) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

int ll_file_replace_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode)
{
	static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
	_cleanup_free_ char *tmp = NULL;
	unsigned long long x = (unsigned long long)getpid() * 2654435761u ^ (unsigned long long)(uintptr_t)&x;
	int fd = -1, r = 0;

	if (strchr(name, '/'))
		return -EINVAL;
	for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
		char suffix[7];

		for (size_t i = 0; i < 6; i++, x = x * 6364136223846793005ull + 1442695040888963407ull)
			suffix[i] = digits[(x >> 33) % 36];
		suffix[6] = '\0';
		free(tmp);
		tmp = ll_asprintf("%s.tmp%s", name, suffix);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	r = write_whole(fd, data, len, mode);
	if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dirfd, tmp, 0);
	return r;
}

int ll_file_replace(const char *path, const void *data, size_t len, mode_t mode)
{
	_cleanup_free_ char *tmp = ll_asprintf("%s.tmpXXXXXX", path);
	int fd, r = 0;

	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = write_whole(fd, data, len, mode);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}
