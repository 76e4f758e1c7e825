/* Live watcher of NCCL_DEBUG_FILE outputs (see include/llmlaunch/nccl-watch.h). */
#include "llmlaunch/nccl-watch.h"
#include "llmlaunch/clock.h"
#include "llmlaunch/quote.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Bytes read from one file per poll, so a flood from one process cannot starve the
 * supervisor loop; the rest is read on the next poll. */
#define WATCH_CHUNK (256u << 10)
#define WATCH_READ_PER_POLL (4u << 20)
/* Quiet periods after which a node without "Init COMPLETE" is summarised anyway
 * (see host_settled). */
#define WATCH_SETTLE_S 5.0
#define WATCH_CHANNELS_QUIET_S 0.5

struct watch_file {
	char *path;
	int fd;
	off_t offset;
	struct ll_ncclscan_stream *stream;
};

struct printed {
	char *host;    /* NULL for prefix-less lines */
	char *summary; /* last line printed for it */
};

struct ll_ncclwatch {
	char *dir;
	char *prefix;           /* NULL: every regular file */
	enum ll_fallback_policy policy;
	struct ll_ncclscan *scan;
	struct watch_file *files;
	size_t n_files;
	struct printed *printed;
	size_t n_printed;
	size_t warnings_printed;
	bool overflow_said;
	int inotify_fd;
	char *stop_reason;
	char *buf;
};

static const char *const policy_names[] = { [LL_FALLBACK_WARN] = "warn", [LL_FALLBACK_STOP] = "stop" };

int ll_fallback_policy_parse(const char *s, enum ll_fallback_policy *ret)
{
	for (size_t i = 0; i < LL_ARRAY_SIZE(policy_names); i++)
		if (s && strcmp(s, policy_names[i]) == 0) {
			*ret = (enum ll_fallback_policy)i;
			return 0;
		}
	return -EINVAL;
}

enum ll_net_expect ll_ncclwatch_expect(const char *llmlaunch_net)
{
	if (ll_streq(llmlaunch_net, "ib"))
		return LL_NET_EXPECT_IB;
	if (ll_streq(llmlaunch_net, "roce"))
		return LL_NET_EXPECT_ROCE;
	if (ll_streq(llmlaunch_net, "socket"))
		return LL_NET_EXPECT_SOCKET;
	return LL_NET_EXPECT_ANY;
}

int ll_ncclwatch_new(const char *dir, const char *prefix, enum ll_net_expect expect, enum ll_fallback_policy policy,
		     struct ll_ncclwatch **ret, struct ll_error *err)
{
	struct ll_ncclwatch *w;
	struct stat sb;

	/* Not created here: `logs --follow /typo` watching a new empty directory forever
	 * (and exiting 0 with nothing said) helps nobody; `run` creates its own. */
	if (stat(dir, &sb) < 0)
		return ll_error_set(err, -errno, "cannot watch '%s': %s", dir, strerror(errno));
	if (!S_ISDIR(sb.st_mode))
		return ll_error_set(err, -ENOTDIR, "cannot watch '%s': not a directory", dir);
	w = ll_calloc(1, sizeof(*w));
	w->dir = ll_strdup(dir);
	w->prefix = ll_strdup(prefix);
	w->policy = policy;
	w->scan = ll_ncclscan_new(expect);
	w->buf = ll_malloc(WATCH_CHUNK);
	w->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->inotify_fd >= 0 &&
	    inotify_add_watch(w->inotify_fd, dir, IN_CREATE | IN_MODIFY | IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
		close(w->inotify_fd);
		w->inotify_fd = -1;
	}
	*ret = w;
	return 0;
}

void ll_ncclwatch_free(struct ll_ncclwatch *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n_files; i++) {
		if (w->files[i].fd >= 0)
			close(w->files[i].fd);
		free(w->files[i].path);
	}
	free(w->files);
	for (size_t i = 0; i < w->n_printed; i++) {
		free(w->printed[i].host);
		free(w->printed[i].summary);
	}
	free(w->printed);
	if (w->inotify_fd >= 0)
		close(w->inotify_fd);
	ll_ncclscan_free(w->scan);
	free(w->stop_reason);
	free(w->buf);
	free(w->dir);
	free(w->prefix);
	free(w);
}

int ll_ncclwatch_fd(const struct ll_ncclwatch *w)
{
	return w->inotify_fd;
}

const char *ll_ncclwatch_stop_reason(const struct ll_ncclwatch *w)
{
	return w->stop_reason;
}

static void drain_inotify(struct ll_ncclwatch *w)
{
	char ev[4096];

	if (w->inotify_fd < 0)
		return;
	while (read(w->inotify_fd, ev, sizeof(ev)) > 0)
		;
}

/* A line from the logs, whose text a terminal must not act on (quote.h). */
static void put_line(FILE *out, const char *text)
{
	_cleanup_free_ char *safe = ll_text_escaped(text, 0);

	fprintf(out, "%s\n", safe);
}

static bool known_file(const struct ll_ncclwatch *w, const char *path)
{
	for (size_t i = 0; i < w->n_files; i++)
		if (strcmp(w->files[i].path, path) == 0)
			return true;
	return false;
}

/* Pick up files that appeared since the last poll. */
static void discover(struct ll_ncclwatch *w)
{
	DIR *d = opendir(w->dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct watch_file *f;
		struct stat sb;
		char *path;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		if (w->prefix && !ll_startswith(de->d_name, w->prefix))
			continue;
		path = ll_asprintf("%s/%s", w->dir, de->d_name);
		if (known_file(w, path)) {
			free(path);
			continue;
		}
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
			if (fd >= 0)
				close(fd);
			free(path);
			continue;
		}
		f = ll_array_push(&w->files, &w->n_files, sizeof(*f));
		f->path = path;
		f->fd = fd;
		f->stream = ll_ncclscan_stream_new(w->scan, path);
	}
	closedir(d);
}

static void read_new(struct ll_ncclwatch *w)
{
	for (size_t i = 0; i < w->n_files; i++) {
		struct watch_file *f = &w->files[i];
		size_t budget = WATCH_READ_PER_POLL;
		struct stat sb;

		/* NCCL truncates its file when a process reuses the name: start over. */
		if (fstat(f->fd, &sb) == 0 && sb.st_size < f->offset)
			f->offset = 0;
		while (budget > 0) {
			ssize_t n = pread(f->fd, w->buf, WATCH_CHUNK, f->offset);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			f->offset += n;
			budget = (size_t)n >= budget ? 0 : budget - (size_t)n;
			ll_ncclscan_feed(w->scan, f->stream, w->buf, (size_t)n);
		}
	}
}

static struct printed *printed_for(struct ll_ncclwatch *w, const char *host)
{
	struct printed *p;

	for (size_t i = 0; i < w->n_printed; i++)
		if (ll_streq(w->printed[i].host, host))
			return &w->printed[i];
	p = ll_array_push(&w->printed, &w->n_printed, sizeof(*p));
	p->host = ll_strdup(host);
	return p;
}

/* When a node's summary is due: NCCL said "Init COMPLETE"; or it fell back (say so at
 * once); or older NCCL, which has no "Init COMPLETE", set up its network channels and
 * then went quiet for WATCH_CHANNELS_QUIET_S; or it named its network and has been
 * quiet for WATCH_SETTLE_S; or the job ended. */
static bool host_settled(const struct ll_nccl_host *h, double now, bool final)
{
	double last = 0;
	bool channels = false;

	/* A failed init (docs/logs.md, G42) is said as soon as it is seen, as a fallback is. */
	if (h->initialized || h->fallback || h->init_failed)
		return true;
	if (h->transport == LL_NCCL_TRANSPORT_UNKNOWN)
		return false;
	if (final)
		return true;
	for (size_t i = 0; i < h->n_ranks; i++) {
		if (h->ranks[i]->last_seen > last)
			last = h->ranks[i]->last_seen;
		channels |= h->ranks[i]->net_channels > 0 || h->ranks[i]->socket_channels > 0;
	}
	return now - last >= (channels ? WATCH_CHANNELS_QUIET_S : WATCH_SETTLE_S);
}

static void report(struct ll_ncclwatch *w, FILE *out, bool final)
{
	const struct ll_nccl_verdict *v = ll_ncclscan_result(w->scan);
	double now = ll_now_s();

	for (size_t i = 0; i < v->n_hosts; i++) {
		const struct ll_nccl_host *h = &v->hosts[i];
		struct printed *p;
		struct ll_buf b;

		if (!host_settled(h, now, final))
			continue;
		ll_buf_init(&b);
		ll_nccl_host_summary(h, &b);
		p = printed_for(w, h->name);
		if (!ll_streq(p->summary, b.s)) {
			put_line(out, b.s);
			free(p->summary);
			p->summary = ll_buf_detach(&b);
		}
		ll_buf_release(&b);
	}
	for (; w->warnings_printed < v->n_warnings; w->warnings_printed++) {
		const struct ll_nccl_warning *x = &v->warnings[w->warnings_printed];
		_cleanup_free_ char *line = ll_asprintf("NCCL warning on %s (%s:%lu, %s): %s",
							 x->host ? x->host : "(no host prefix)", x->file, x->line,
							 ll_nccl_warn_class_name(x->cls), x->text);

		put_line(out, line);
	}
	if (v->warnings_total > v->n_warnings && !w->overflow_said) {
		fprintf(out, "more than %d NCCL warnings: further ones are counted, not shown\n",
			LL_NCCL_MAX_WARNINGS);
		w->overflow_said = true;
	}
	fflush(out);

	if (w->policy == LL_FALLBACK_STOP && v->fallback && !w->stop_reason) {
		for (size_t i = 0; i < v->n_hosts; i++) {
			const struct ll_nccl_host *h = &v->hosts[i];
			struct ll_buf b;

			if (!h->fallback)
				continue;
			/* Which host, and the lines that proved it: the cause, then sockets. */
			ll_buf_init(&b);
			ll_buf_addf(&b, "NCCL on %s is not using RDMA: %s", h->name ? h->name : "(no host prefix)",
				    h->fallback_reason);
			if (h->fallback_cause) {
				ll_buf_add(&b, " (shown by ");
				ll_nccl_proof_describe(h->fallback_cause, &b);
				ll_buf_add(&b, ")");
			}
			if (h->fallback_via) {
				ll_buf_add(&b, "; sockets: ");
				ll_nccl_proof_describe(h->fallback_via, &b);
			}
			w->stop_reason = ll_buf_detach(&b);
			break;
		}
	}
}

int ll_ncclwatch_poll(struct ll_ncclwatch *w, FILE *out)
{
	drain_inotify(w);
	discover(w);
	ll_ncclscan_set_clock(w->scan, ll_now_s());
	read_new(w);
	report(w, out, false);
	return w->stop_reason ? 1 : 0;
}

void ll_ncclwatch_finish(struct ll_ncclwatch *w, FILE *out)
{
	discover(w);
	ll_ncclscan_set_clock(w->scan, ll_now_s());
	read_new(w);
	for (size_t i = 0; i < w->n_files; i++)
		ll_ncclscan_flush(w->scan, w->files[i].stream);
	report(w, out, true);
}

const struct ll_nccl_verdict *ll_ncclwatch_verdict(struct ll_ncclwatch *w)
{
	return ll_ncclscan_result(w->scan);
}
