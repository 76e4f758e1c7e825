/* The job channel (llmlaunch/channel.h): node 0 decides, every node stops and says
 * the same.
 *
 * One text line each, '\n'-terminated, after the agreement's hello
 * ("LLMLAUNCH2 TOKEN RANK NNODES CHANNEL", ll_rdzv_hello):
 *   node -> 0   NAME HOST                   the node's name, for the verdicts
 *               EXIT RANK LOCAL ATTEMPT KIND CODE TIME_NS HOST\tCAUSE
 *               STACK RANK COLLECTIVE WHERE  a hang here: each rank's frame, then
 *               HANG SILENT_S
 *               DONE STATUS                 this node's torchrun ended
 *   0 -> node   HELLO HOST | ALIEN          accepted (node 0's name) | another job's
 *               STACKS                      take your ranks' stacks (a hang elsewhere)
 *               STOP                        stop your torchrun
 *               VERDICT STATUS TEXT         the job's verdict and exit status
 *               END                         node 0's job ended well: go on without it
 *
 * A node sees node 0 go away as a closed or reset connection, and a node 0 whose host
 * died through TCP keepalive (KEEPALIVE_*: about 11 s), which the kernel runs even
 * while llmlaunch waits elsewhere (a stop's grace, the stacks). Node 0 sees another
 * node go away the same way: before its DONE, while the job runs, that is a failure
 * (peer_gone). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "llmlaunch/agree.h"
#include "llmlaunch/channel.h"
#include "llmlaunch/clock.h"
#include "llmlaunch/port.h"

#define LINE_MAX_BYTES 4096
#define RETRY_PAUSE_S 0.2       /* between rounds of connection attempts */
#define HELLO_WAIT_S 2.0        /* a port whose listener does not answer: the next one */
#define HANG_GATHER_S 5.0       /* node 0 waits this long for every node's stacks */
#define DONE_WAIT_S 8.0         /* after STOP: for every node's torchrun to end (grace 2 s) */
#define CLOSE_WAIT_S 1.0        /* node 0 waits this long for the nodes to close first */
#define KEEPALIVE_IDLE_S 5
#define KEEPALIVE_INTERVAL_S 2
#define KEEPALIVE_COUNT 3

struct peer {
	int fd;                     /* -1: closed */
	size_t node;                /* its node rank; (size_t)-1 before its hello */
	struct ll_buf in, out;
	bool done, hung;
};

enum phase { RUNNING, GATHERING, STOPPING, OVER };

struct ll_channel {
	struct ll_channel_job job;
	char *id, *master_addr, *name, *node0;
	char *hello;                /* this node's hello (others), '\n'-terminated */
	int flags;
	char *lost;
	char *verdict;
	int status;

	/* node 0 */
	int listen_fd;
	struct peer **peers;
	size_t n_peers;
	char **names;               /* by node rank */
	struct ll_worker_exit *recs;
	size_t n_recs;
	size_t *rec_node;           /* which node sent recs[i] */
	struct ll_rank_stack *stacks;
	size_t n_stacks;
	enum phase phase;
	double phase_at;            /* ll_now_s() when the phase began */
	char *hang_host;
	double hang_silent;
	bool hang_self, done_self;
	int status_self;

	/* the other nodes */
	struct peer up;             /* the connection to node 0 */
	int ports[LL_RDZV_PORTS];
	size_t port_i;
	bool greeted;
	double connect_until, next_try, hello_until;
	char *last_error;
	struct ll_buf queue;        /* lines for node 0, sent once it answered HELLO */
	int *sent;                  /* (local rank, attempt) pairs reported */
	size_t n_sent;
};

/* ---- lines ---- */

/* A value on one line: control characters (a tab, a newline) become blanks. */
static void add_clean(struct ll_buf *b, const char *s)
{
	for (; s && *s; s++)
		ll_buf_addc(b, (unsigned char)*s < 0x20 || *s == 0x7f ? ' ' : *s);
}

char *ll_channel_exit_line(const struct ll_worker_exit *x)
{
	struct ll_buf b;

	ll_buf_init(&b);
	ll_buf_addf(&b, "EXIT %d %d %d %s %d %lld ", x->rank, x->local_rank, x->attempt,
		    x->signaled ? "signal" : "exit", x->code, x->time_ns);
	if (x->host && *x->host && !strpbrk(x->host, " \t\n"))
		ll_buf_add(&b, x->host);
	else
		ll_buf_add(&b, "-");
	ll_buf_addc(&b, '\t');
	add_clean(&b, x->cause);
	ll_buf_addc(&b, '\n');
	return ll_buf_detach(&b);
}

int ll_channel_exit_parse(const char *line, struct ll_worker_exit *ret)
{
	char kind[8], host[256];
	const char *tab;
	int used = 0;

	*ret = (struct ll_worker_exit){ 0 };
	if (sscanf(line, "EXIT %d %d %d %7s %d %lld %255s%n", &ret->rank, &ret->local_rank, &ret->attempt, kind,
		   &ret->code, &ret->time_ns, host, &used) != 7 ||
	    (strcmp(kind, "signal") != 0 && strcmp(kind, "exit") != 0))
		return -EPROTO;
	ret->signaled = strcmp(kind, "signal") == 0;
	if (strcmp(host, "-") != 0)
		ret->host = ll_strdup(host);
	tab = strchr(line + used, '\t');
	if (tab && tab[1])
		ret->cause = ll_strndup(tab + 1, strcspn(tab + 1, "\n"));
	return 0;
}

/* ---- node 0's decision ---- */

char *ll_channel_failure_verdict(const struct ll_worker_exit *v, size_t n, int *ret_status)
{
	struct ll_worker_exit *s = ll_calloc(n ? n : 1, sizeof(*s));
	struct ll_failure f;
	char *text;

	/* Every node's records together: a rank's "Connection closed by peer" on one node
	 * is a consequence of a failure on another, and the cause is whichever rank
	 * failed first of its own accord, wherever it ran. */
	if (n)
		memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), ll_worker_exit_cmp);
	ll_failure_find(s, n, &f);
	/* Only consequences: the rank that caused them reported nothing (its node's
	 * llmlaunch went with it), and the verdict says so. */
	text = ll_failure_text(&f, true);
	if (ret_status)
		*ret_status = f.first ? f.status : 0;
	free(s);
	return text;
}

static int by_rank(const void *a, const void *b)
{
	const struct ll_rank_stack *x = a, *y = b;

	return x->rank != y->rank ? (x->rank < y->rank ? -1 : 1) : 0;
}

char *ll_channel_hang_verdict(const char *host, double silent_s, const struct ll_rank_stack *v, size_t n)
{
	_cleanup_free_ struct ll_rank_stack *s = ll_calloc(n ? n : 1, sizeof(*s));
	_cleanup_free_ char *where = NULL;

	/* The nodes' stacks arrive in any order: the ranks are named in theirs. */
	if (n)
		memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), by_rank);
	ll_stacks_group(s, n, &where);
	return ll_asprintf("the job hangs: no rank on %s has printed anything for %.0f s; %s; each node's job "
			   "directory keeps its ranks' stacks",
			   host ? host : "?", silent_s, where);
}

/* ---- connections ---- */

static void keepalive(int fd)
{
	int one = 1, idle = KEEPALIVE_IDLE_S, intvl = KEEPALIVE_INTERVAL_S, cnt = KEEPALIVE_COUNT;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void peer_send(struct peer *p, const char *line)
{
	if (p->fd >= 0)
		ll_buf_add(&p->out, line);
}

/* Write what is queued; false when the connection failed. */
static bool peer_flush(struct peer *p)
{
	while (p->fd >= 0 && p->out.len) {
		ssize_t w = send(p->fd, p->out.s, p->out.len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0)
			return errno == EAGAIN || errno == EINTR;
		memmove(p->out.s, p->out.s + w, p->out.len - (size_t)w + 1);
		p->out.len -= (size_t)w;
	}
	return true;
}

/* Read what arrived: 1 more to read later, 0 closed (*ret_error 0) or failed. */
static int peer_read(struct peer *p, int *ret_error)
{
	char buf[4096];

	*ret_error = 0;
	for (;;) {
		ssize_t r = recv(p->fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (r > 0) {
			ll_buf_addn(&p->in, buf, (size_t)r);
			if (p->in.len > LINE_MAX_BYTES * 16) {
				*ret_error = EPROTO;
				return 0;
			}
			continue;
		}
		if (r == 0)
			return 0;
		/* ENOTCONN: a connection not yet made */
		if (errno == EAGAIN || errno == EINTR || errno == ENOTCONN)
			return 1;
		*ret_error = errno;
		return 0;
	}
}

/* The next complete line of `p->in` (without its '\n', malloc'ed), or NULL. */
static char *peer_line(struct peer *p)
{
	char *nl = memchr(p->in.s, '\n', p->in.len), *line;
	size_t n;

	if (!nl)
		return NULL;
	n = (size_t)(nl - p->in.s);
	line = ll_strndup(p->in.s, n);
	memmove(p->in.s, nl + 1, p->in.len - n);
	p->in.len -= n + 1;
	return line;
}

static void peer_close(struct peer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

/* ---- node 0 ---- */

static void broadcast(struct ll_channel *c, const char *line)
{
	for (size_t i = 0; i < c->n_peers; i++)
		if (c->peers[i]->node != (size_t)-1)
			peer_send(c->peers[i], line);
}

static const char *name_of(const struct ll_channel *c, size_t node)
{
	return node < c->job.nnodes && c->names[node] ? c->names[node] : "?";
}

static bool final_failure(const struct ll_channel *c)
{
	for (size_t i = 0; i < c->n_recs; i++)
		if (c->recs[i].node_left ||
		    ((c->recs[i].signaled || c->recs[i].code != 0) && c->recs[i].attempt >= c->job.max_restarts))
			return true;
	return false;
}

static bool node_left(const struct ll_channel *c)
{
	for (size_t i = 0; i < c->n_recs; i++)
		if (c->recs[i].node_left)
			return true;
	return false;
}

/* The attempt the job runs now, as far as the records say: a failure torchrun
 * restarts (before the last of --max-restarts) began the next one. */
static int job_attempt(const struct ll_channel *c)
{
	int a = 0;

	for (size_t i = 0; i < c->n_recs; i++) {
		const struct ll_worker_exit *x = &c->recs[i];
		int next = (x->signaled || x->code != 0) && x->attempt < c->job.max_restarts ? x->attempt + 1 : x->attempt;

		if (!x->node_left && next > a)
			a = next;
	}
	return a;
}

static void add_record(struct ll_channel *c, size_t node, struct ll_worker_exit *x)
{
	for (size_t i = 0; i < c->n_recs; i++)
		if (c->rec_node[i] == node && c->recs[i].local_rank == x->local_rank &&
		    c->recs[i].attempt == x->attempt) {
			free(x->host);
			free(x->cause);
			return;
		}
	*(size_t *)ll_array_push(&c->rec_node, &(size_t){ c->n_recs }, sizeof(size_t)) = node;
	*(struct ll_worker_exit *)ll_array_push(&c->recs, &c->n_recs, sizeof(*x)) = *x;
}

static void add_stack(struct ll_channel *c, int rank, bool collective, const char *where)
{
	struct ll_rank_stack *s = ll_array_push(&c->stacks, &c->n_stacks, sizeof(*s));

	*s = (struct ll_rank_stack){ .rank = rank, .collective = collective, .where = ll_strdup(where) };
}

static void note_hang(struct ll_channel *c, size_t node, double silent_s)
{
	if (!c->hang_host) {
		c->hang_host = ll_strdup(name_of(c, node));
		c->hang_silent = silent_s;
	}
	if (c->phase == RUNNING) {
		/* The other nodes' ranks went silent too, waiting for the one that hangs:
		 * every node's stacks together name it. */
		broadcast(c, "STACKS\n");
		c->flags |= LL_CHANNEL_STACKS;
		c->phase = GATHERING;
		c->phase_at = ll_now_s();
	}
}

/* One line from node `p`. */
static void server_line(struct ll_channel *c, struct peer *p, const char *line)
{
	if (p->node == (size_t)-1) {
		size_t rank, nnodes;
		_cleanup_free_ char *want = NULL;

		/* The hello names the node's rank; the token must be this job's for it. */
		if (sscanf(line, "LLMLAUNCH2 %*16s %zu %zu CHANNEL", &rank, &nnodes) == 2 && nnodes == c->job.nnodes &&
		    rank > 0 && rank < nnodes) {
			struct ll_rdzv_job rj = { .id = c->id, .nnodes = nnodes, .rank = rank };

			want = ll_rdzv_hello(&rj, "CHANNEL");
		}
		if (!want || strncmp(line, want, strlen(want) - 1) != 0 || line[strlen(want) - 1]) {
			peer_send(p, "ALIEN\n");
			peer_flush(p);
			peer_close(p);
			return;
		}
		p->node = rank;
		_cleanup_free_ char *hello = ll_asprintf("HELLO %s\n", c->name);
		peer_send(p, hello);
		/* A node that comes after the decision is told at once. */
		if (c->phase == GATHERING)
			peer_send(p, "STACKS\n");
		if (c->phase >= STOPPING)
			peer_send(p, "STOP\n");
		return;
	}
	if (ll_startswith(line, "NAME ")) {
		free(c->names[p->node]);
		c->names[p->node] = ll_strdup(line + 5);
	} else if (ll_startswith(line, "EXIT ")) {
		struct ll_worker_exit x;

		if (ll_channel_exit_parse(line, &x) == 0)
			add_record(c, p->node, &x);
	} else if (ll_startswith(line, "STACK ")) {
		int rank, coll, used = 0;

		if (sscanf(line, "STACK %d %d %n", &rank, &coll, &used) == 2 && used)
			add_stack(c, rank, coll != 0, line + used);
	} else if (ll_startswith(line, "HANG ")) {
		p->hung = true;
		note_hang(c, p->node, atof(line + 5));
	} else if (ll_startswith(line, "DONE ")) {
		p->done = true;
	}
}

/* Node `p`'s connection ended (`error`: its errno, 0 for a close). A node that said
 * hello and has not said its torchrun ended, while the job runs, had its llmlaunch
 * killed or its host go down: its ranks went with it, unreported. That is a failure
 * of the job at this time, the first unless an earlier one is on record (its peers'
 * "Connection closed by peer" on the other nodes are its consequences), and node 0
 * stops the job as for a rank's. After its DONE, or once the job is stopping or
 * over, a close is no failure. */
static void peer_gone(struct ll_channel *c, struct peer *p, int error)
{
	struct ll_worker_exit x;
	struct timespec ts;

	if (p->node != (size_t)-1 && !p->done && (c->phase == RUNNING || c->phase == GATHERING)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		/* Status 137, as if killed: what its own llmlaunch would have said, had it
		 * lived to, of a SIGKILL. */
		x = (struct ll_worker_exit){ .node_left = true,
					     .node = (int)p->node,
					     .rank = -1,
					     .local_rank = -1,
					     .attempt = job_attempt(c),
					     .signaled = true,
					     .code = SIGKILL,
					     .time_ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec,
					     .host = ll_strdup(name_of(c, p->node)),
					     .cause = ll_strdup(error ? strerror(error) : "its connection closed") };
		add_record(c, p->node, &x);
	}
	peer_close(p);
}

static void server_accept(struct ll_channel *c)
{
	for (;;) {
		int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct peer *p;

		if (fd < 0)
			return;
		keepalive(fd);
		p = ll_calloc(1, sizeof(*p));
		p->fd = fd;
		p->node = (size_t)-1;
		ll_buf_init(&p->in);
		ll_buf_init(&p->out);
		*(struct peer **)ll_array_push(&c->peers, &c->n_peers, sizeof(p)) = p;
	}
}

static bool all_done(const struct ll_channel *c)
{
	size_t n = c->done_self ? 1 : 0;

	for (size_t i = 0; i < c->n_peers; i++)
		n += c->peers[i]->node != (size_t)-1 && (c->peers[i]->done || c->peers[i]->fd < 0);
	return n >= c->job.nnodes;
}

static bool all_hung(const struct ll_channel *c)
{
	size_t n = c->hang_self ? 1 : 0;

	for (size_t i = 0; i < c->n_peers; i++)
		n += c->peers[i]->node != (size_t)-1 && (c->peers[i]->hung || c->peers[i]->fd < 0);
	return n >= c->job.nnodes;
}

static void server_stop(struct ll_channel *c)
{
	broadcast(c, "STOP\n");
	c->flags |= LL_CHANNEL_STOP;
	c->phase = STOPPING;
	c->phase_at = ll_now_s();
}

static void server_decide(struct ll_channel *c)
{
	double now = ll_now_s();

	/* A node lost while a hang's stacks are gathered sends none, and its ranks are
	 * gone: the job stops now, for that node. */
	if ((c->phase == RUNNING && final_failure(c)) || (c->phase == GATHERING && node_left(c)))
		server_stop(c);
	if (c->phase == GATHERING && (all_hung(c) || now >= c->phase_at + HANG_GATHER_S)) {
		c->verdict = ll_channel_hang_verdict(c->hang_host, c->hang_silent, c->stacks, c->n_stacks);
		c->status = 1;
		server_stop(c);
	}
	if (c->phase == RUNNING && c->done_self && c->status_self != 0) {
		/* torchrun here failed with no rank's record (its rendezvous, say). */
		server_stop(c);
	}
	if (c->phase == STOPPING && (all_done(c) || now >= c->phase_at + DONE_WAIT_S)) {
		_cleanup_free_ char *line = NULL;

		if (!c->verdict) {
			c->verdict = ll_channel_failure_verdict(c->recs, c->n_recs, &c->status);
			if (!c->verdict) {
				c->verdict = ll_asprintf("torchrun on %s ended with status %d before any rank failed",
							 name_of(c, 0), c->status_self);
				c->status = c->status_self ? c->status_self : 1;
			}
		}
		line = ll_asprintf("VERDICT %d %s\n", c->status, c->verdict);
		broadcast(c, line);
		c->flags |= LL_CHANNEL_VERDICT;
		c->phase = OVER;
	}
	if (c->phase == RUNNING && c->done_self && c->status_self == 0) {
		/* Node 0's job ended well and nothing failed: the others go on alone. */
		broadcast(c, "END\n");
		c->flags |= LL_CHANNEL_GONE;
		c->phase = OVER;
	}
}

static void server_poll(struct ll_channel *c)
{
	server_accept(c);
	for (size_t i = 0; i < c->n_peers; i++) {
		struct peer *p = c->peers[i];
		char *line;
		int e;

		if (p->fd < 0)
			continue;
		if (!peer_read(p, &e)) {
			/* What it sent before it went stays (its DONE, say). */
			while ((line = peer_line(p))) {
				server_line(c, p, line);
				free(line);
			}
			peer_gone(c, p, e);
			continue;
		}
		while (p->fd >= 0 && (line = peer_line(p))) {
			server_line(c, p, line);
			free(line);
		}
	}
	server_decide(c);
	for (size_t i = 0; i < c->n_peers; i++)
		if (!peer_flush(c->peers[i]))
			peer_gone(c, c->peers[i], errno);
}

/* ---- the other nodes ---- */

static void client_lost(struct ll_channel *c, const char *why)
{
	if (c->flags & (LL_CHANNEL_LOST | LL_CHANNEL_GONE | LL_CHANNEL_VERDICT))
		return;
	peer_close(&c->up);
	c->lost = ll_asprintf("the channel to node 0 (%s) was lost: %s", c->node0, why);
	c->flags |= LL_CHANNEL_LOST;
}

static void client_try(struct ll_channel *c)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd;

	if (ll_now_s() < c->next_try)
		return;
	if (ll_now_s() >= c->connect_until) {
		c->lost = ll_asprintf("node 0 (%s) did not answer on ports %d-%d within %.0f s (last: %s): the job "
				      "goes on without the channel",
				      c->node0, c->ports[0], c->ports[LL_RDZV_PORTS - 1], c->job.connect_s,
				      c->last_error ? c->last_error : "no answer");
		c->flags |= LL_CHANNEL_GONE;
		return;
	}
	if (ll_sockaddr_numeric(c->master_addr, c->ports[c->port_i], &ss, &len) < 0) {
		c->lost = ll_asprintf("node 0's address '%s' is not numeric: the job goes on without the channel",
				      c->master_addr);
		c->flags |= LL_CHANNEL_GONE;
		return;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return;
	keepalive(fd);
	if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
		free(c->last_error);
		c->last_error = ll_strdup(strerror(errno));
		close(fd);
		c->port_i = (c->port_i + 1) % LL_RDZV_PORTS;
		if (!c->port_i)
			c->next_try = ll_now_s() + RETRY_PAUSE_S;
		return;
	}
	c->up.fd = fd;
	c->greeted = false;
	c->hello_until = ll_now_s() + HELLO_WAIT_S;
	ll_buf_reset(&c->up.in);
	ll_buf_reset(&c->up.out);
	peer_send(&c->up, c->hello);
}

/* This port's answer was not ours (refused, another job's): the next one. */
static void client_next_port(struct ll_channel *c, const char *why)
{
	free(c->last_error);
	c->last_error = ll_strdup(why);
	peer_close(&c->up);
	c->port_i = (c->port_i + 1) % LL_RDZV_PORTS;
	if (!c->port_i)
		c->next_try = ll_now_s() + RETRY_PAUSE_S;
}

static void client_line(struct ll_channel *c, const char *line)
{
	if (ll_startswith(line, "HELLO ")) {
		c->greeted = true;
		free(c->node0);
		c->node0 = ll_strdup(line + 6);
		peer_send(&c->up, c->queue.s);
		ll_buf_reset(&c->queue);
	} else if (strcmp(line, "ALIEN") == 0) {
		client_next_port(c, "another job's node 0 answered");
	} else if (strcmp(line, "STOP") == 0) {
		c->flags |= LL_CHANNEL_STOP;
	} else if (strcmp(line, "STACKS") == 0) {
		c->flags |= LL_CHANNEL_STACKS;
	} else if (ll_startswith(line, "VERDICT ")) {
		int used = 0;

		if (sscanf(line, "VERDICT %d %n", &c->status, &used) == 1 && used && !c->verdict) {
			c->verdict = ll_strdup(line + used);
			c->flags |= LL_CHANNEL_VERDICT | LL_CHANNEL_STOP;
		}
	} else if (strcmp(line, "END") == 0) {
		c->flags |= LL_CHANNEL_GONE;
	}
}

static void client_poll(struct ll_channel *c)
{
	char *line;
	int e;

	if (c->flags & (LL_CHANNEL_LOST | LL_CHANNEL_GONE))
		return;
	if (c->up.fd < 0) {
		client_try(c);
		if (c->up.fd < 0)
			return;
	}
	if (!c->greeted && ll_now_s() >= c->hello_until) {
		client_next_port(c, "no answer to the hello");
		return;
	}
	if (c->greeted && c->queue.len) {
		peer_send(&c->up, c->queue.s);
		ll_buf_reset(&c->queue);
	}
	if (!peer_flush(&c->up)) {
		e = errno;
		if (!c->greeted)
			client_next_port(c, strerror(e));
		else
			client_lost(c, strerror(e));
		return;
	}
	if (!peer_read(&c->up, &e)) {
		while (c->up.fd >= 0 && (line = peer_line(&c->up))) {
			client_line(c, line);
			free(line);
		}
		if (c->up.fd < 0) /* ALIEN: the next port */
			return;
		if (c->flags & (LL_CHANNEL_VERDICT | LL_CHANNEL_GONE)) {
			peer_close(&c->up);
			return;
		}
		if (!c->greeted)
			client_next_port(c, e ? strerror(e) : "closed before answering");
		else
			client_lost(c, e ? strerror(e) : "node 0's llmlaunch closed it");
		return;
	}
	while (c->up.fd >= 0 && (line = peer_line(&c->up))) {
		client_line(c, line);
		free(line);
	}
	if (c->flags & LL_CHANNEL_GONE)
		peer_close(&c->up);
}

/* ---- both ---- */

int ll_channel_open(const struct ll_channel_job *job, struct ll_channel **ret, struct ll_error *err)
{
	struct ll_channel *c = ll_calloc(1, sizeof(*c));
	int ports[LL_RDZV_PORTS];

	c->job = *job;
	c->id = ll_strdup(job->id);
	c->master_addr = ll_strdup(job->master_addr);
	c->name = ll_strdup(job->name ? job->name : "?");
	c->node0 = ll_strdup(job->master_addr);
	c->job.id = c->id;
	c->job.master_addr = c->master_addr;
	c->job.name = c->name;
	c->listen_fd = c->up.fd = -1;
	ll_buf_init(&c->up.in);
	ll_buf_init(&c->up.out);
	ll_buf_init(&c->queue);
	/* torchrun's store holds the master port, and the check's store the next one
	 * while a preflight check runs: the channel's ports begin after both. */
	ll_rdzv_ports(job->master_port + 2, ports);
	memcpy(c->ports, ports, sizeof(ports));
	if (job->node_rank == 0) {
		int r = -EADDRINUSE;

		for (size_t i = 0; i < LL_RDZV_PORTS && r < 0; i++)
			r = ll_listen_any(ports[i], &c->listen_fd);
		if (r < 0) {
			ll_channel_close(c);
			return ll_error_set(err, r, "cannot listen for the job channel on ports %d-%d: %s", ports[0],
					    ports[LL_RDZV_PORTS - 1], strerror(-r));
		}
		c->names = ll_calloc(job->nnodes ? job->nnodes : 1, sizeof(char *));
		c->names[0] = ll_strdup(c->name);
	} else {
		struct ll_rdzv_job rj = { .id = c->id, .nnodes = job->nnodes, .rank = job->node_rank };
		_cleanup_free_ char *hello = ll_rdzv_hello(&rj, "CHANNEL");

		c->hello = ll_asprintf("%sNAME %s\n", hello, c->name);
		c->connect_until = ll_now_s() + job->connect_s;
	}
	*ret = c;
	return 0;
}

int ll_channel_poll(struct ll_channel *c)
{
	if (c->job.node_rank == 0)
		server_poll(c);
	else
		client_poll(c);
	return c->flags;
}

void ll_channel_exit(struct ll_channel *c, const struct ll_worker_exit *x)
{
	if (c->job.node_rank == 0) {
		struct ll_worker_exit copy = *x;

		copy.host = x->host ? ll_strdup(x->host) : NULL;
		copy.cause = x->cause ? ll_strdup(x->cause) : NULL;
		add_record(c, 0, &copy);
		return;
	}
	for (size_t i = 0; i + 1 < c->n_sent; i += 2)
		if (c->sent[i] == x->local_rank && c->sent[i + 1] == x->attempt)
			return;
	*(int *)ll_array_push(&c->sent, &c->n_sent, sizeof(int)) = x->local_rank;
	*(int *)ll_array_push(&c->sent, &c->n_sent, sizeof(int)) = x->attempt;
	{
		_cleanup_free_ char *line = ll_channel_exit_line(x);

		ll_buf_add(&c->queue, line);
	}
}

void ll_channel_stack(struct ll_channel *c, int rank, bool collective, const char *where)
{
	_cleanup_free_ char *line = NULL;
	struct ll_buf b;

	if (c->job.node_rank == 0) {
		add_stack(c, rank, collective, where ? where : "no Python stack");
		return;
	}
	ll_buf_init(&b);
	ll_buf_addf(&b, "STACK %d %d ", rank, collective ? 1 : 0);
	add_clean(&b, where ? where : "no Python stack");
	ll_buf_addc(&b, '\n');
	ll_buf_add(&c->queue, b.s);
	ll_buf_release(&b);
}

void ll_channel_hang(struct ll_channel *c, double silent_s)
{
	if (c->job.node_rank == 0) {
		c->hang_self = true;
		note_hang(c, 0, silent_s);
		return;
	}
	{
		_cleanup_free_ char *line = ll_asprintf("HANG %.1f\n", silent_s);

		ll_buf_add(&c->queue, line);
	}
}

int ll_channel_done(struct ll_channel *c, int status, double wait_s)
{
	double until = ll_now_s() + wait_s;

	if (c->job.node_rank == 0) {
		c->done_self = true;
		c->status_self = status;
		/* Serve until the verdict is out, then give the nodes a moment to close
		 * first (they then read all of it). */
		while (c->phase != OVER && ll_now_s() < until) {
			ll_channel_poll(c);
			usleep(20000);
		}
		until = ll_now_s() + CLOSE_WAIT_S;
		for (bool open = true; open && ll_now_s() < until; usleep(20000)) {
			ll_channel_poll(c);
			open = false;
			for (size_t i = 0; i < c->n_peers; i++)
				open = open || (c->peers[i]->fd >= 0 && c->peers[i]->node != (size_t)-1);
		}
		return c->flags;
	}
	{
		_cleanup_free_ char *line = ll_asprintf("DONE %d\n", status);

		ll_buf_add(&c->queue, line);
	}
	/* A node whose job ended well, with no stop asked, has nothing to wait for. */
	if (status == 0 && !(c->flags & LL_CHANNEL_STOP)) {
		ll_channel_poll(c);
		return c->flags;
	}
	while (!(c->flags & (LL_CHANNEL_VERDICT | LL_CHANNEL_LOST | LL_CHANNEL_GONE)) && ll_now_s() < until) {
		struct pollfd pfd = { .fd = c->up.fd, .events = POLLIN };

		ll_channel_poll(c);
		if (c->up.fd >= 0)
			poll(&pfd, 1, 50);
		else
			usleep(50000);
	}
	if (!(c->flags & (LL_CHANNEL_VERDICT | LL_CHANNEL_LOST | LL_CHANNEL_GONE))) {
		_cleanup_free_ char *why = ll_asprintf("no verdict %.0f s after this node's job ended", wait_s);

		client_lost(c, why);
	}
	return c->flags;
}

const char *ll_channel_verdict(const struct ll_channel *c, int *ret_status)
{
	if (ret_status)
		*ret_status = c->status;
	return c->verdict;
}

const char *ll_channel_lost(const struct ll_channel *c)
{
	return c->lost;
}

char *ll_channel_record(const struct ll_channel *c)
{
	struct ll_buf b;

	if (c->job.node_rank != 0)
		return NULL;
	ll_buf_init(&b);
	for (size_t i = 0; i < c->n_recs; i++) {
		const struct ll_worker_exit *x = &c->recs[i];

		if (x->node_left) {
			ll_buf_addf(&b, "%s node %d: llmlaunch left the job at %lld.%09lld: %s\n", x->host ? x->host : "?",
				    x->node, x->time_ns / 1000000000LL, x->time_ns % 1000000000LL, x->cause ? x->cause : "?");
			continue;
		}
		ll_buf_addf(&b, "%s rank %d (local %d, attempt %d): %s %d at %lld.%09lld", x->host ? x->host : "?",
			    x->rank, x->local_rank, x->attempt, x->signaled ? "signal" : "exit", x->code,
			    x->time_ns / 1000000000LL, x->time_ns % 1000000000LL);
		if (x->cause)
			ll_buf_addf(&b, ": %s", x->cause);
		ll_buf_addc(&b, '\n');
	}
	return ll_buf_detach(&b);
}

void ll_channel_close(struct ll_channel *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_peers; i++) {
		peer_close(c->peers[i]);
		ll_buf_release(&c->peers[i]->in);
		ll_buf_release(&c->peers[i]->out);
		free(c->peers[i]);
	}
	free(c->peers);
	if (c->listen_fd >= 0)
		close(c->listen_fd);
	peer_close(&c->up);
	ll_buf_release(&c->up.in);
	ll_buf_release(&c->up.out);
	ll_buf_release(&c->queue);
	if (c->names)
		ll_strv_free(c->names, c->job.nnodes);
	ll_worker_exits_free(c->recs, c->n_recs);
	free(c->rec_node);
	for (size_t i = 0; i < c->n_stacks; i++)
		free(c->stacks[i].where);
	free(c->stacks);
	free(c->hang_host);
	free(c->sent);
	free(c->id);
	free(c->master_addr);
	free(c->name);
	free(c->node0);
	free(c->hello);
	free(c->lost);
	free(c->verdict);
	free(c->last_error);
	free(c);
}
