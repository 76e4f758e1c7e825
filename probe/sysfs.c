#include "sysfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llmlaunch/file.h"
#include "annotations.h"

char *ll_sysfs_path(const char *fsroot, const char *fmt, ...)
{
	struct ll_buf b;
	va_list ap;

	ll_buf_init(&b);
	if (fsroot && *fsroot) {
		ll_buf_add(&b, fsroot);
		/* "DIR/" and "DIR" give the same path. */
		while (b.len > 1 && b.s[b.len - 1] == '/')
			b.s[--b.len] = '\0';
	}
	va_start(ap, fmt);
	ll_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	return ll_buf_detach(&b);
}

int ll_sysfs_read(const char *path, char **ret)
{
	char buf[LL_SYSFS_VALUE_MAX + 2];
	struct stat st;
	size_t len = 0;
	char *nl;
	int fd;

	/* O_NONBLOCK and the S_ISREG check: a FIFO or device planted in a fake
	 * tree must not hang or flood the probe. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		ll_io_resource_note(-errno);
		return -errno;
	}
	if (fstat(fd, &st) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	while (len < sizeof(buf) - 1) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0) {
			int r = -errno;
			if (r == -EINTR)
				continue;
			close(fd);
			return r;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	nl = memchr(buf, '\n', len);
	if (nl) {
		*nl = '\0';
		len = (size_t)(nl - buf);
	} else if (len > LL_SYSFS_VALUE_MAX) {
		return -EINVAL;
	}
	if (memchr(buf, '\0', len))
		return -EINVAL;
	ll_strstrip_end(buf);
	if (buf[0] == '\0')
		return -EINVAL;
	for (const char *p = buf; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			return -EINVAL;
	*ret = ll_strdup(buf);
	return 0;
}

int ll_sysfs_read_long(const char *path, int base, long *ret)
{
	_cleanup_free_ char *s = NULL;
	char *end;
	long v;
	int r;

	r = ll_sysfs_read(path, &s);
	if (r < 0)
		return r;
	errno = 0;
	v = strtol(s, &end, base);
	if (errno || end == s || *end != '\0')
		return -EINVAL;
	*ret = v;
	return 0;
}

int ll_sysfs_readlink(const char *path, char **ret)
{
	char buf[PATH_MAX];
	ssize_t n;

	n = readlink(path, buf, sizeof(buf) - 1);
	if (n < 0)
		ll_io_resource_note(-errno);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	*ret = ll_strdup(buf);
	return 0;
}

bool ll_sysfs_is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int natcmp_qsort(const void *a, const void *b)
{
	int c = strverscmp(*(char *const *)a, *(char *const *)b);

	/* "eth01" and "eth1" compare equal as numbers: fall back to bytes so the
	 * order stays total and stable across runs. */
	return c ? c : strcmp(*(char *const *)a, *(char *const *)b);
}

int ll_sysfs_list(const char *path, char ***ret, size_t *n)
{
	char **v = NULL;
	size_t count = 0;
	struct dirent *de;
	DIR *d;

	d = opendir(path);
	if (!d) {
		ll_io_resource_note(-errno);
		return -errno;
	}
	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		*(char **)ll_array_push(&v, &count, sizeof(*v)) = ll_strdup(de->d_name);
	}
	if (errno) {
		int r = -errno;
		closedir(d);
		ll_strv_free(v, count);
		return r;
	}
	closedir(d);
	if (count)
		qsort(v, count, sizeof(*v), natcmp_qsort);
	*ret = v;
	*n = count;
	return 0;
}

bool ll_parse_uint(const char *s, unsigned *ret)
{
	unsigned long v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > UINT_MAX)
		return false;
	*ret = (unsigned)v;
	return true;
}

void ll_obj_info_once(hwloc_obj_t obj, const char *name, const char *value)
{
	if (!hwloc_obj_get_info_by_name(obj, name))
		hwloc_obj_add_info(obj, name, value);
}

void ll_obj_info_oncef(hwloc_obj_t obj, const char *name, const char *fmt, ...)
{
	struct ll_buf b;
	va_list ap;

	if (hwloc_obj_get_info_by_name(obj, name))
		return;
	ll_buf_init(&b);
	va_start(ap, fmt);
	ll_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	hwloc_obj_add_info(obj, name, b.s);
	ll_buf_release(&b);
}

void ll_obj_info_set(hwloc_obj_t obj, const char *name, const char *value)
{
	for (unsigned i = 0; i < obj->infos_count; i++) {
		if (strcmp(obj->infos[i].name, name) == 0) {
			free(obj->infos[i].value);
			obj->infos[i].value = ll_strdup(value);
			return;
		}
	}
	hwloc_obj_add_info(obj, name, value);
}

unsigned ll_obj_infos_drop(hwloc_obj_t obj, bool (*drop)(const char *name))
{
	unsigned j = 0, n = obj->infos_count;

	for (unsigned i = 0; i < n; i++) {
		if (drop(obj->infos[i].name)) {
			free(obj->infos[i].name);
			free(obj->infos[i].value);
		} else {
			obj->infos[j++] = obj->infos[i];
		}
	}
	obj->infos_count = j;
	return n - j;
}

hwloc_obj_t ll_topo_standin(hwloc_topology_t topo, const char *name, const char *standin)
{
	hwloc_obj_t root = hwloc_get_root_obj(topo), misc;

	for (misc = root->misc_first_child; misc; misc = misc->next_sibling)
		if (ll_streq(misc->name, name) &&
		    ll_streq(hwloc_obj_get_info_by_name(misc, LL_INFO_STANDIN), standin))
			return misc;
	misc = hwloc_topology_insert_misc_object(topo, root, name);
	if (misc)
		hwloc_obj_add_info(misc, LL_INFO_STANDIN, standin);
	return misc;
}
