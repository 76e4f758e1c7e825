/* Reading NCCL's configuration files the way NCCL does (llmlaunch/nccl-conf.h). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "llmlaunch/file.h"
#include "llmlaunch/nccl-conf.h"

/* NCCL reads them with fgets into 4096 bytes and copies at most 1023 bytes of a
 * name or a value (src/misc/param.cc setEnvFile). */
#define NCCL_CONF_LINE_MAX 4095
#define NCCL_CONF_FIELD_MAX 1023
/* Far beyond any real file: only a wrong path (a device, a huge file) is refused. */
#define NCCL_CONF_FILE_MAX (1u << 20)

static char *keep(struct ll_nccl_conf *c, char *s)
{
	*(char **)ll_array_push(&c->strings, &c->n_strings, sizeof(char *)) = s;
	return s;
}

void ll_nccl_conf_parse(struct ll_nccl_conf *c, const char *text, const char *path)
{
	unsigned lineno = 0;

	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		const char *eq;
		struct ll_assignment *a;

		lineno++;
		/* A longer line is split by fgets into pieces NCCL reads as lines; such
		 * files do not exist in practice: skip it whole. */
		if (len > NCCL_CONF_LINE_MAX)
			goto next;
		if (len > 0 && p[len - 1] == '\r')
			len--;
		eq = memchr(p, '=', len);
		if (len == 0 || p[0] == '#' || !eq)
			goto next;
		a = ll_array_push(&c->entries, &c->n_entries, sizeof(*a));
		{
			size_t nlen = (size_t)(eq - p), vlen = len - nlen - 1;

			a->name = keep(c, ll_strndup(p, nlen > NCCL_CONF_FIELD_MAX ? NCCL_CONF_FIELD_MAX : nlen));
			a->value = keep(c, ll_strndup(eq + 1, vlen > NCCL_CONF_FIELD_MAX ? NCCL_CONF_FIELD_MAX : vlen));
			a->origin = keep(c, ll_asprintf("%s:%u", path, lineno));
		}
	next:
		if (!nl)
			break;
		p = nl + 1;
	}
}

/* What a path that is not a regular file is, for the plan's message. */
static const char *kind_of(const char *path, bool *ret_blocks)
{
	struct stat st;

	*ret_blocks = false;
	if (stat(path, &st) < 0 || S_ISREG(st.st_mode))
		return NULL;
	/* A directory: fopen() succeeds and the first fgets() fails (EISDIR), so NCCL
	 * reads nothing. Anything else is read as a stream: a FIFO blocks fopen()
	 * until a writer comes, /dev/zero and /dev/urandom never end. */
	*ret_blocks = !S_ISDIR(st.st_mode);
	if (S_ISDIR(st.st_mode))
		return "a directory";
	if (S_ISFIFO(st.st_mode))
		return "a FIFO";
	if (S_ISCHR(st.st_mode))
		return "a character device";
	if (S_ISBLK(st.st_mode))
		return "a block device";
	if (S_ISSOCK(st.st_mode))
		return "a socket";
	return "not a regular file";
}

/* 0 when read, -errno otherwise (-ENOENT: not there, which is normal). */
static int read_one(struct ll_nccl_conf *c, const char *path, const char *shown)
{
	_cleanup_free_ char *text = NULL;
	int r = ll_read_file(path, NCCL_CONF_FILE_MAX, &text);

	if (r == 0)
		ll_nccl_conf_parse(c, text, shown);
	return r;
}

int ll_nccl_conf_load(struct ll_nccl_conf *c, const char *conf_file, const char *home, const char *fsroot,
		      bool read_etc)
{
	if (conf_file && *conf_file) {
		int r = read_one(c, conf_file, conf_file);

		if (r < 0) {
			const char *kind = r == -EINVAL || r == -EISDIR ? kind_of(conf_file, &c->unreadable_blocks) : NULL;

			c->unreadable = keep(c, ll_strdup(conf_file));
			c->unreadable_why = keep(c, ll_strdup(kind ? kind : ll_file_strerror(r)));
		}
	} else if (home && *home) {
		_cleanup_free_ char *path = ll_asprintf("%s/.nccl.conf", home);

		read_one(c, path, path);
	}
	if (read_etc) {
		_cleanup_free_ char *path = ll_asprintf("%s/etc/nccl.conf", fsroot ? fsroot : "");

		read_one(c, path, "/etc/nccl.conf");
	}
	return 0;
}

void ll_nccl_conf_release(struct ll_nccl_conf *c)
{
	if (!c)
		return;
	free(c->entries);
	ll_strv_free(c->strings, c->n_strings);
	*c = (struct ll_nccl_conf){ 0 };
}
