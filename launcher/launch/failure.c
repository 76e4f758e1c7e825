/* Which rank failed first, and where each rank waits when a job hangs
 * (llmlaunch/launch.h). Pure where it can be: the records and dumps are read here,
 * the verdicts are strings the command layer prints.
 *
 * When one rank dies, its peers fail too, a moment later and with errors of their
 * own ("Connection closed by peer"), and torchrun stops the rest with SIGTERM; its
 * "Root Cause" block names whichever rank of that node failed first, which on a
 * healthy node is a victim. The time of each record and the text of its cause tell
 * the first failure from its consequences. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "llmlaunch/file.h"
#include "llmlaunch/launch.h"

/* ---- the records ---- */

/* Keep a value on one line of the record: control characters become blanks. */
static void add_line(struct ll_buf *b, const char *key, const char *value)
{
	if (!value || !*value)
		return;
	ll_buf_addf(b, "%s ", key);
	for (const char *c = value; *c; c++)
		ll_buf_addc(b, (unsigned char)*c < 0x20 || *c == 0x7f ? ' ' : *c);
	ll_buf_addc(b, '\n');
}

int ll_worker_end_write(const char *dir, const struct ll_worker_end *e, struct ll_error *err)
{
	struct timespec ts;
	struct ll_buf b;
	char *path;
	long long t;
	int r;

	clock_gettime(CLOCK_REALTIME, &ts);
	t = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	ll_buf_init(&b);
	if (WIFSIGNALED(e->wstatus))
		ll_buf_addf(&b, "signal %d %lld\n", WTERMSIG(e->wstatus), t);
	else
		ll_buf_addf(&b, "exit %d %lld\n", WEXITSTATUS(e->wstatus), t);
	if (e->rank >= 0)
		ll_buf_addf(&b, "rank %d\n", e->rank);
	if (e->shutdown_signal > 0)
		ll_buf_addf(&b, "shutdown-signal %d\n", e->shutdown_signal);
	add_line(&b, "host", e->host);
	add_line(&b, "cause", e->cause);
	path = ll_asprintf("%s/rank-%d-attempt-%d", dir, e->local_rank, e->attempt);
	/* Replaced whole: the reader never sees half a record. */
	r = ll_file_replace(path, b.s, b.len, 0600);
	if (r < 0)
		ll_error_set(err, r, "cannot write the exit record '%s': %s", path, strerror(-r));
	free(path);
	ll_buf_release(&b);
	return r;
}

static int parse_record(const char *text, struct ll_worker_exit *x)
{
	char kind[8];
	const char *line;

	if (sscanf(text, "%7s %d %lld", kind, &x->code, &x->time_ns) != 3 ||
	    (strcmp(kind, "signal") != 0 && strcmp(kind, "exit") != 0))
		return -EINVAL;
	x->signaled = strcmp(kind, "signal") == 0;
	x->rank = -1;
	for (line = strchr(text, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
		const char *s = line + 1;
		size_t n = strcspn(s, "\n");

		if (ll_startswith(s, "rank "))
			ll_parse_digits(s + 5, n - 5, &x->rank);
		else if (ll_startswith(s, "shutdown-signal "))
			ll_parse_digits(s + 16, n - 16, &x->shutdown_signal);
		else if (ll_startswith(s, "host ") && !x->host)
			x->host = ll_strndup(s + 5, n - 5);
		else if (ll_startswith(s, "cause ") && !x->cause)
			x->cause = ll_strndup(s + 6, n - 6);
	}
	return 0;
}

int ll_worker_exit_cmp(const void *a, const void *b)
{
	const struct ll_worker_exit *x = a, *y = b;

	if (x->attempt != y->attempt)
		return x->attempt < y->attempt ? -1 : 1;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->local_rank - y->local_rank;
}

int ll_worker_exits_read(const char *dir, struct ll_worker_exit **ret, size_t *ret_n)
{
	struct ll_worker_exit *v = NULL;
	size_t n = 0;
	struct dirent *e;
	DIR *d = opendir(dir);

	*ret = NULL;
	*ret_n = 0;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		struct ll_worker_exit x = { 0 };
		_cleanup_free_ char *path = NULL, *text = NULL;

		if (sscanf(e->d_name, "rank-%d-attempt-%d", &x.local_rank, &x.attempt) != 2 || strchr(e->d_name, '.'))
			continue;
		path = ll_asprintf("%s/%s", dir, e->d_name);
		if (ll_read_file(path, 4096, &text) < 0 || parse_record(text, &x) < 0)
			continue;
		*(struct ll_worker_exit *)ll_array_push(&v, &n, sizeof(*v)) = x;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), ll_worker_exit_cmp);
	*ret = v;
	*ret_n = n;
	return 0;
}

void ll_worker_exits_free(struct ll_worker_exit *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].host);
		free(v[i].cause);
	}
	free(v);
}

/* ---- the first failure ---- */

bool ll_worker_cause_is_consequence(const char *cause)
{
	/* Each is what a rank says when a peer went away or the job is being stopped:
	 * gloo (third_party/gloo/gloo/transport/tcp/pair.cc: "Connection closed by
	 * peer", a reset or broken pipe from the socket), NCCL (ncclRemoteError's
	 * "remote process exited or there was a network error"), ProcessGroupNCCL
	 * ("NCCL communicator was aborted"), torch.distributed.elastic when torchrun
	 * passes SIGTERM on ("SignalException", "Received Signals"). */
	static const char *const patterns[] = {
		"Connection closed by peer", "Connection reset by peer", "Broken pipe",
		"communicator was aborted",  "remote process exited",    "SignalException",
		"Received Signals",
	};

	if (!cause)
		return false;
	for (size_t i = 0; i < LL_ARRAY_SIZE(patterns); i++)
		if (strstr(cause, patterns[i]))
			return true;
	return false;
}

static bool failed(const struct ll_worker_exit *x)
{
	return x->signaled || x->code != 0;
}

/* A signal that stops a job: what torchrun (SIGTERM, then SIGKILL) or a person
 * (SIGINT) sends to the rest once one rank has failed. */
static bool is_stop_signal(const struct ll_worker_exit *x)
{
	return x->signaled && (x->code == SIGTERM || x->code == SIGKILL || x->code == SIGINT);
}

void ll_failure_find(const struct ll_worker_exit *v, size_t n, struct ll_failure *ret)
{
	const struct ll_worker_exit *first = NULL, *earliest = NULL;
	size_t n_failed = 0, start = n;

	*ret = (struct ll_failure){ 0 };
	if (!n)
		return;
	/* v is sorted: the latest attempt is the last run of records. */
	while (start > 0 && v[start - 1].attempt == v[n - 1].attempt)
		start--;
	for (size_t i = start; i < n; i++) {
		const struct ll_worker_exit *x = &v[i];

		if (!failed(x))
			continue;
		n_failed += !x->node_left;
		if (!earliest)
			earliest = x;
		/* A node's llmlaunch that left took its ranks with it (their peers' "Connection
		 * closed by peer" may come first by the clock); its connection's error is not
		 * a rank's cause. */
		if (!first && (x->node_left ||
			       (!ll_worker_cause_is_consequence(x->cause) && !(is_stop_signal(x) && earliest != x))))
			first = x;
	}
	if (!first) {
		first = earliest;
		ret->consequence = first != NULL;
	}
	if (!first)
		return;
	ret->first = first;
	ret->n_after = n_failed - !first->node_left;
	ret->status = first->signaled ? 128 + first->code : first->code;
}

char *ll_failure_text(const struct ll_failure *f, bool other_nodes)
{
	bool elsewhere = other_nodes && f->consequence;
	const struct ll_worker_exit *x = f->first;
	struct ll_buf b;
	char when[16] = "?";
	time_t t;
	struct tm tm;

	if (!x)
		return NULL;
	t = (time_t)(x->time_ns / 1000000000LL);
	if (localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	ll_buf_init(&b);
	if (x->node_left) {
		/* Its connection's end (closed, reset, timed out) stays in the job's record:
		 * each says only that the node is gone. */
		ll_buf_addf(&b, "llmlaunch on %s (node %d) left the job at %s without a word (killed, or its host went down)",
			    x->host ? x->host : "?", x->node, when);
	} else {
		if (x->rank >= 0)
			ll_buf_addf(&b, "rank %d", x->rank);
		else
			ll_buf_addf(&b, "local rank %d", x->local_rank);
		ll_buf_addf(&b, " on %s failed %s (", x->host ? x->host : "this node",
			    elsewhere ? "because another rank did" : "first");
		if (x->signaled)
			ll_buf_addf(&b, "signal %s", sigabbrev_np(x->code) ? sigabbrev_np(x->code) : "?");
		else
			ll_buf_addf(&b, "exit %d", x->code);
		ll_buf_addf(&b, ", %s)", when);
		if (x->cause)
			ll_buf_addf(&b, ": %s", x->cause);
		else if (x->signaled)
			ll_buf_addf(&b, ": killed by SIG%s", sigabbrev_np(x->code) ? sigabbrev_np(x->code) : "?");
	}
	if (f->n_after)
		ll_buf_addf(&b, "; %zu other rank%s stopped after it", f->n_after, f->n_after == 1 ? "" : "s");
	if (elsewhere)
		ll_buf_add(&b, "; the first failure was on another node");
	return ll_buf_detach(&b);
}

/* ---- causes ---- */

static char *clip(const char *s, size_t n)
{
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (!n)
		return NULL;
	return ll_strndup(s, n < LL_CAUSE_MAX ? n : LL_CAUSE_MAX);
}

/* The line from p to e without the "[rankN]: " that torch >= 2.2 puts before every
 * line of an uncaught exception once the process group exists (the excepthook that
 * init_process_group installs, torch/distributed/distributed_c10d.py): the verdict
 * names the rank already, and the frames' indentation comes after it. */
static const char *skip_rank_prefix(const char *p, const char *e)
{
	const char *q = p + 5;

	if (e - p < 8 || memcmp(p, "[rank", 5) != 0 || !isdigit((unsigned char)*q))
		return p;
	while (q < e && isdigit((unsigned char)*q))
		q++;
	if (e - q < 2 || q[0] != ']' || q[1] != ':')
		return p;
	q += 2;
	return q < e && *q == ' ' ? q + 1 : q;
}

char *ll_worker_cause_from_output(const char *text, size_t len)
{
	const char *end = text + len, *p, *tb = NULL, *last = NULL;
	size_t last_n = 0;
	static const char marker[] = "Traceback (most recent call last):";

	/* The last traceback's exception line: the first line after it that is not
	 * indented (frames and source lines are). */
	for (p = text; p < end;) {
		const char *nl = memchr(p, '\n', end - p), *e = nl ? nl : end;
		const char *l = skip_rank_prefix(p, e);

		if ((size_t)(e - l) >= sizeof(marker) - 1 && memcmp(l, marker, sizeof(marker) - 1) == 0)
			tb = e;
		p = nl ? nl + 1 : end;
	}
	if (tb) {
		for (p = tb < end ? tb + 1 : end; p < end;) {
			const char *nl = memchr(p, '\n', end - p), *e = nl ? nl : end;
			const char *l = skip_rank_prefix(p, e);

			if (e > l && !isspace((unsigned char)*l))
				return clip(l, e - l);
			p = nl ? nl + 1 : end;
		}
	}
	for (p = text; p < end;) {
		const char *nl = memchr(p, '\n', end - p), *e = nl ? nl : end;
		const char *l = skip_rank_prefix(p, e), *q = l;

		while (q < e && isspace((unsigned char)*q))
			q++;
		if (q < e) {
			last = l;
			last_n = e - l;
		}
		p = nl ? nl + 1 : end;
	}
	return last ? clip(last, last_n) : NULL;
}

char *ll_worker_cause_from_error_file(const char *path)
{
	json_t *root, *m;
	char *r = NULL;

	if (!path || !*path)
		return NULL;
	root = json_load_file(path, 0, NULL);
	if (!root)
		return NULL;
	/* torch.distributed.elastic.multiprocessing.errors.error_handler writes
	 * {"message": {"message": "ValueError: boom", "extraInfo": {...}}}; older and
	 * hand-written files have the string directly. */
	m = json_object_get(root, "message");
	if (json_is_object(m))
		m = json_object_get(m, "message");
	if (json_is_string(m)) {
		const char *s = json_string_value(m);
		const char *nl = strchr(s, '\n');

		r = clip(s, nl ? (size_t)(nl - s) : strlen(s));
	}
	json_decref(root);
	return r;
}

/* ---- stacks ---- */

struct frame {
	const char *file, *func; /* into the dump */
	size_t file_n, func_n;
	int line;
};

/* `  File "PATH", line N in FUNC` */
static bool parse_frame(const char *p, const char *e, struct frame *f)
{
	const char *q, *fe;

	while (p < e && *p == ' ')
		p++;
	if ((size_t)(e - p) < 7 || memcmp(p, "File \"", 6) != 0)
		return false;
	q = p + 6;
	fe = memchr(q, '"', e - q);
	if (!fe || sscanf(fe, "\", line %d", &f->line) != 1)
		return false;
	f->file = q;
	f->file_n = fe - q;
	q = fe;
	while (q + 4 <= e && memcmp(q, " in ", 4) != 0)
		q++;
	if (q + 4 > e)
		return false;
	f->func = q + 4;
	f->func_n = e - f->func;
	while (f->func_n && isspace((unsigned char)f->func[f->func_n - 1]))
		f->func_n--;
	return true;
}

static bool in_library(const struct frame *f)
{
	_cleanup_free_ char *path = ll_strndup(f->file, f->file_n);

	return strstr(path, "/site-packages/") || strstr(path, "/dist-packages/") || strstr(path, "/lib/python") ||
	       path[0] == '<';
}

static const char *base_name(const char *path, size_t n, size_t *ret_n)
{
	const char *b = path + n;

	while (b > path && b[-1] != '/')
		b--;
	*ret_n = path + n - b;
	return b;
}

/* The call on line `line` of `file` ("time.sleep" of "    time.sleep(args.sleep)"):
 * what a frame in user code is waiting in when the callee has no Python frame. */
static char *call_on_line(const char *file, size_t file_n, int line)
{
	_cleanup_free_ char *path = ll_strndup(file, file_n), *text = NULL;
	const char *p;
	int at = 1;

	if (line < 1 || ll_read_file(path, 4 << 20, &text) < 0)
		return NULL;
	for (p = text; *p && at < line; p++)
		if (*p == '\n')
			at++;
	if (at != line || !*p)
		return NULL;
	for (const char *e = p + strcspn(p, "\n"); p < e; p++) {
		const char *q = p;

		if (!(isalpha((unsigned char)*p) || *p == '_') || (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '.')))
			continue;
		while (q < e && (isalnum((unsigned char)*q) || *q == '_' || *q == '.'))
			q++;
		if (q < e && *q == '(')
			return ll_strndup(p, q - p);
	}
	return NULL;
}

char *ll_stack_where(const char *text)
{
	const char *p = text, *end = text + strlen(text), *block = NULL;
	struct frame inner = { 0 }, user = { 0 };
	bool have_inner = false, have_user = false, in_block = false;
	_cleanup_free_ char *call = NULL;
	size_t bn, un;
	const char *b, *u;

	/* The thread that took the signal is Python's main thread (CPython runs its
	 * signal handlers there); faulthandler lists it as "Current thread". */
	block = strstr(text, "Current thread ");
	if (!block)
		block = strstr(text, "Thread 0x");
	if (!block)
		block = strstr(text, "Stack (most recent call first):");
	if (!block)
		return NULL;
	for (p = block; p < end;) {
		const char *nl = memchr(p, '\n', end - p), *e = nl ? nl : end;
		struct frame f;

		if (in_block && (e == p || !isspace((unsigned char)*p)))
			break; /* the next thread or the end of the dump */
		if (parse_frame(p, e, &f)) {
			if (!have_inner) {
				inner = f;
				have_inner = true;
			}
			if (!have_user && !in_library(&f)) {
				user = f;
				have_user = true;
			}
		}
		in_block = true;
		p = nl ? nl + 1 : end;
	}
	if (!have_inner)
		return NULL;
	b = base_name(inner.file, inner.file_n, &bn);
	if (!in_library(&inner)) {
		call = call_on_line(inner.file, inner.file_n, inner.line);
		if (call)
			return ll_asprintf("%s in %.*s:%d", call, (int)bn, b, inner.line);
		return ll_asprintf("%.*s in %.*s:%d", (int)inner.func_n, inner.func, (int)bn, b, inner.line);
	}
	if (!have_user)
		return ll_asprintf("%.*s in %.*s:%d", (int)inner.func_n, inner.func, (int)bn, b, inner.line);
	u = base_name(user.file, user.file_n, &un);
	return ll_asprintf("%.*s in %.*s:%d (from %.*s:%d)", (int)inner.func_n, inner.func, (int)bn, b, inner.line,
			   (int)un, u, user.line);
}

/* A group of ranks that wait in the same place. */
struct group {
	const char *where;
	int *ranks;
	size_t n;
	bool collective;
};

static void add_ranks(struct ll_buf *b, const struct group *g)
{
	ll_buf_addf(b, "rank%s ", g->n == 1 ? "" : "s");
	for (size_t i = 0; i < g->n; i++)
		ll_buf_addf(b, "%s%d", i ? "," : "", g->ranks[i]);
}

size_t ll_stacks_group(const struct ll_rank_stack *v, size_t n, char **ret_text)
{
	struct group *g = NULL;
	size_t n_g = 0, major = 0, outside;
	struct ll_buf b;

	for (size_t i = 0; i < n; i++) {
		const char *w = v[i].where ? v[i].where : "no Python stack";
		size_t k;

		for (k = 0; k < n_g && strcmp(g[k].where, w) != 0; k++)
			;
		if (k == n_g) {
			struct group *ng = ll_array_push(&g, &n_g, sizeof(*g));

			ng->where = w;
			/* Ranks inside torch.distributed wait for a peer: on a tie they are
			 * the victims, the others the ones that keep them waiting. */
			ng->collective = v[i].collective || (v[i].text && strstr(v[i].text, "torch/distributed/"));
		}
		*(int *)ll_array_push(&g[k].ranks, &g[k].n, sizeof(int)) = v[i].rank;
	}
	for (size_t k = 1; k < n_g; k++)
		if (g[k].n > g[major].n || (g[k].n == g[major].n && g[k].collective && !g[major].collective))
			major = k;
	ll_buf_init(&b);
	if (n_g == 0) {
		ll_buf_add(&b, "no rank's stack was collected");
	} else if (n_g == 1) {
		ll_buf_addf(&b, "every rank (%zu) waits in %s", n, g[0].where);
	} else {
		bool first = true;

		for (size_t k = 0; k < n_g; k++) {
			if (k == major)
				continue;
			ll_buf_add(&b, first ? "" : "; ");
			add_ranks(&b, &g[k]);
			ll_buf_addf(&b, " wait%s in %s", g[k].n == 1 ? "s" : "", g[k].where);
			first = false;
		}
		ll_buf_add(&b, ", while ");
		add_ranks(&b, &g[major]);
		ll_buf_addf(&b, " wait%s in %s", g[major].n == 1 ? "s" : "", g[major].where);
	}
	outside = n_g > 1 ? n - g[major].n : 0;
	for (size_t k = 0; k < n_g; k++)
		free(g[k].ranks);
	free(g);
	*ret_text = ll_buf_detach(&b);
	ll_buf_release(&b);
	return outside;
}
