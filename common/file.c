#include "llmlaunch/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llmlaunch/util.h"

int ll_read_file(const char *path, size_t max, char **ret)
{
	struct ll_buf b;
	char chunk[4096];
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ll_buf_init(&b);
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0) {
			int r = -errno;
			if (r == -EINTR)
				continue;
			close(fd);
			ll_buf_release(&b);
			return r;
		}
		if (n == 0)
			break;
		if (b.len + (size_t)n > max) {
			close(fd);
			ll_buf_release(&b);
			return -EFBIG;
		}
		ll_buf_addn(&b, chunk, (size_t)n);
	}
	close(fd);
	if (memchr(b.s, '\0', b.len)) {
		ll_buf_release(&b);
		return -EBADMSG;
	}
	*ret = b.s;
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

int ll_file_replace(const char *path, const void *data, size_t len, mode_t mode)
{
	_cleanup_free_ char *tmp = ll_asprintf("%s.tmpXXXXXX", path);
	int fd, r = 0;

	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
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
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}
