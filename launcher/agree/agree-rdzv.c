/* Rank 0's check-in and the proof that every node reaches the rendezvous before
 * torchrun starts (docs/multinode.md, "Check-in and reachability").
 *
 * Rank 0 listens from the start of the agreement on the port that becomes torchrun's
 * master port (ll_rdzv_listen). Every other node connects to it at most twice:
 *
 *   CHECKIN  while the agreement waits, to rank 0's name: rank 0 learns who is here
 *            without waiting for the full fence, tells the nodes that checked in who is
 *            missing (WAIT), and at its deadline the verdict naming them (FAIL);
 *   REACH    after the decision, to the agreed master address and port from the agreed
 *            interface: the proof that torchrun's rendezvous will connect. Rank 0 answers
 *            every node once all have reached it (OK) or its deadline passed (FAIL).
 *
 * Without PMIx the check-in also carries the agreement: each node's record (the
 * digests of what must match), the full summary of the first node of each digest
 * when rank 0 asks for it (SEND), and rank 0's decision back (DECIDED, or FAIL).
 *
 * One text line each, '\n'-terminated:
 *   node -> 0   LLMLAUNCH2 TOKEN RANK NNODES CHECKIN [RECORD]   (RECORD: without PMIx)
 *               SUMMARY JSON                after SEND, on the same connection
 *               LLMLAUNCH2 TOKEN RANK NNODES REACH IFNAME SOURCE
 *   0 -> node   HELLO | ALIEN               accepted | another job's rank 0: try the next port
 *               SEND                        the decision reads this node's summary
 *               WAIT MISSING NNODES NAMES   status: when the count changes, else every 2 s
 *               NOTE TEXT | DOMAIN N REASON | ORDER TEXT
 *               DECIDED RANK PORT FLAGS MASTER SUBNET   the decision (after the lines above)
 *               HINT TEXT                   before a FAIL, its hint
 *               OK | FAIL MESSAGE           the verdict; the node then closes first, so no
 *                                           TIME_WAIT is left on the port torchrun binds next
 * TOKEN is a hash of the job's identity, which every node knows (the Slurm job and
 * step, the PMIx namespace): two jobs sharing a port cannot mistake each other. */
#include "llmlaunch/agree.h"
#include "llmlaunch/addr.h"
#include "llmlaunch/clock.h"
#include "llmlaunch/hash.h"
#include "llmlaunch/hostlist.h"
#include "llmlaunch/port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define PROTO "LLMLAUNCH2"
#define LINE_MAX_BYTES 65536   /* a FAIL line names nodes; everything else is short */
#define STATUS_AFTER_S 1.5     /* rank 0's first WAIT line */
#define STATUS_EVERY_S 2.0     /* then at least this often while waiting */
#define PROGRESS_AFTER_S 2.0   /* the user hears of a wait after this long */
#define CONNECT_TRY_S 1.0      /* one check-in connection attempt */
#define RETRY_PAUSE_S 0.2      /* before the next round of attempts */
#define CLOSE_WAIT_S 2.0       /* rank 0 waits this long for nodes to close after the verdict */
#define VERDICT_GRACE_S 5.0    /* a node waits this much longer than rank 0's deadline */

enum conn_kind { CONN_NEW, CONN_CHECKIN, CONN_REACH };

struct conn {
	int fd;
	enum conn_kind kind;
	size_t rank;
	size_t index;           /* in conns[] */
	bool want_out;          /* EPOLLOUT is on */
	struct ll_buf in, out;
	size_t out_off;
	bool alien;             /* close once ALIEN is written */
	bool want_summary;      /* SEND went out: a SUMMARY line comes */
};

/* How far a node's check-in got. */
enum client_state { CLIENT_IDLE, CLIENT_CONNECTING, CLIENT_HELLO, CLIENT_UP, CLIENT_DONE };

struct ll_rdzv {
	bool server;
	char token[17];
	size_t nnodes, rank;
	char **names;
	int epfd;
	int listen_marker, wake_marker; /* epoll data for the listener and the caller's fd */
	ll_agree_progress_fn *progress;
	void *progress_data;
	bool progress_shown;
	double progress_last;
	size_t progress_missing;
	double wait_start;

	/* rank 0 */
	int listen_fd, port;
	struct conn **conns;
	size_t n_conns;
	unsigned char *seen;    /* by rank: SEEN_CHECKIN, SEEN_REACH */
	size_t n_checkin, n_reach, n_arrived;
	enum ll_agree_wait phase;
	double phase_start, status_last, status_check;
	size_t status_missing;
	char *arrival_ifname, *arrival_addr;
	/* the agreement without PMIx (ll_rdzv_gather) */
	bool gathering;
	struct ll_agree_node *nodes;
	struct ll_summary **sums;
	const struct ll_summary *self_summary;
	unsigned char *sum_state; /* SUM_WANTED, SUM_HAVE */
	size_t n_records, n_sum_pending;
	struct ll_agree_digests *digests;

	/* other nodes */
	struct addrinfo *addrs;
	size_t n_addrs, addr_i, port_i, n_ports;
	int ports[LL_RDZV_PORTS];
	enum client_state state;
	int fd;
	double try_until, next_try;
	struct ll_buf in;
	char *last_error;       /* the last attempt's failure */
	bool have_status;
	size_t status_n;
	char *status_names;
	char *verdict;          /* FAIL's message */
	char *verdict_hint;     /* HINT before it */
	const char *record, *summary; /* this node's, for the check-in (not owned) */
	struct ll_rdzv_decision decision;
	bool decided;
	bool ok;                /* OK received */
	bool lost;              /* the proof's connection failed or closed before a verdict */
};

#define SEEN_CHECKIN 1u
#define SEEN_REACH 2u
#define SUM_WANTED 1u
#define SUM_HAVE 2u

/* ---- small helpers ---- */

static void token_of(const char *id, char out[17])
{
	const char *s = id ? id : "";

	snprintf(out, 17, "%016" PRIx64, ll_hash(s, strlen(s)));
}

static char *hello_line(const char *token, size_t rank, size_t nnodes, const char *kind, const char *ifname,
			const char *source)
{
	if (strcmp(kind, "REACH") == 0)
		return ll_asprintf(PROTO " %s %zu %zu REACH %s %s\n", token, rank, nnodes, ifname ? ifname : "-",
				   source && *source ? source : "-");
	return ll_asprintf(PROTO " %s %zu %zu %s%s%s\n", token, rank, nnodes, kind, ifname ? " " : "",
			   ifname ? ifname : "");
}

char *ll_rdzv_hello(const struct ll_rdzv_job *job, const char *kind)
{
	char token[17];

	token_of(job->id, token);
	return hello_line(token, job->rank, job->nnodes, kind, strcmp(kind, "CHECKIN") == 0 ? job->record : NULL, NULL);
}

void ll_rdzv_ports(int base, int ret[LL_RDZV_PORTS])
{
	if (base < 20000 || base > 32767)
		base = 20000 + (base < 0 ? -base : base) % 12768;
	for (int i = 0; i < LL_RDZV_PORTS; i++)
		ret[i] = 20000 + (base - 20000 + i) % 12768;
}

/* Close without leaving TIME_WAIT (a reset): for connections we give up on. */
static void close_reset(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

static const char *name_of(const struct ll_rdzv *r, size_t rank)
{
	return rank < r->nnodes && r->names[rank] ? r->names[rank] : "?";
}

static struct ll_rdzv *rdzv_new(const struct ll_rdzv_job *job, bool server)
{
	struct ll_rdzv *r = ll_calloc(1, sizeof(*r));

	r->server = server;
	token_of(job->id, r->token);
	r->nnodes = job->nnodes;
	r->rank = job->rank;
	r->names = ll_calloc(job->nnodes ? job->nnodes : 1, sizeof(char *));
	for (size_t i = 0; i < job->nnodes; i++)
		r->names[i] = job->names && job->names[i] ? ll_strdup(job->names[i]) : ll_asprintf("node %zu", i);
	r->progress = job->progress;
	r->progress_data = job->progress_data;
	r->record = job->record;
	r->summary = job->summary;
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	r->listen_fd = r->fd = -1;
	r->wait_start = r->phase_start = ll_now_s();
	ll_buf_init(&r->in);
	return r;
}

static void conn_free(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	ll_buf_release(&c->in);
	ll_buf_release(&c->out);
	free(c);
}

void ll_rdzv_close(struct ll_rdzv *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_conns; i++)
		if (r->conns[i])
			conn_free(r->conns[i]);
	free(r->conns);
	if (r->listen_fd >= 0)
		close(r->listen_fd);
	if (r->fd >= 0)
		close(r->fd);
	if (r->epfd >= 0)
		close(r->epfd);
	ll_strv_free(r->names, r->nnodes);
	free(r->seen);
	free(r->arrival_ifname);
	free(r->arrival_addr);
	for (size_t i = 0; i < r->n_addrs; i++)
		free(r->addrs[i].ai_addr);
	free(r->addrs);
	ll_buf_release(&r->in);
	free(r->last_error);
	free(r->status_names);
	free(r->verdict);
	free(r->verdict_hint);
	ll_rdzv_decision_release(&r->decision);
	if (r->nodes)
		for (size_t i = 0; i < r->nnodes; i++) {
			ll_agree_node_release(&r->nodes[i]);
			if (r->sums[i] != r->self_summary)
				ll_summary_free(r->sums[i]);
		}
	free(r->nodes);
	free(r->sums);
	free(r->sum_state);
	ll_agree_digests_free(r->digests);
	free(r);
}

/* ---- progress ---- */

static void report(struct ll_rdzv *r, enum ll_agree_wait what, size_t n_missing, const char *names, bool done,
		   bool ok)
{
	double now = ll_now_s();
	struct ll_agree_progress p = {
		.what = what, .waited_s = now - r->wait_start, .n_missing = n_missing, .n_nodes = r->nnodes,
		.names = names ? names : "", .done = done, .ok = ok,
	};

	if (!r->progress || (done && !r->progress_shown))
		return;
	if (!done) {
		if (p.waited_s < PROGRESS_AFTER_S || n_missing == 0)
			return;
		/* On change, else once a second: the printer decides what a log gets. */
		if (r->progress_shown && n_missing == r->progress_missing && now - r->progress_last < 1.0)
			return;
	}
	r->progress_shown = !done;
	r->progress_last = now;
	r->progress_missing = n_missing;
	r->progress(r->progress_data, &p);
}

void ll_rdzv_progress_done(struct ll_rdzv *r, bool ok)
{
	if (r)
		report(r, r->phase, 0, NULL, true, ok);
}

/* ---- rank 0 ---- */

static bool server_done_with(const struct ll_rdzv *r, size_t rank)
{
	unsigned want = r->phase == LL_AGREE_WAIT_REACH ? SEEN_REACH : (SEEN_CHECKIN | SEEN_REACH);
	return rank == r->rank || (r->seen[rank] & want);
}

static size_t server_missing(const struct ll_rdzv *r, struct ll_buf *names)
{
	size_t idx[LL_AGREE_NAMES_SHOWN], n = 0;

	for (size_t i = 0; i < r->nnodes; i++)
		if (!server_done_with(r, i)) {
			if (n < LL_AGREE_NAMES_SHOWN)
				idx[n] = i;
			n++;
		}
	if (names)
		ll_agree_add_names(names, r->names, idx, n < LL_AGREE_NAMES_SHOWN ? n : LL_AGREE_NAMES_SHOWN, n);
	return n;
}

int ll_rdzv_port(const struct ll_rdzv *r)
{
	return r ? r->port : 0;
}

/* Rank 0 holds a connection per node: make room for them (the soft limit is often
 * 1024, the hard one far higher). */
static void raise_fd_limit(size_t need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= need + 64)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need + 64 ? need + 64 : rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
}

int ll_rdzv_listen(const struct ll_rdzv_job *job, const int *ports, size_t n_ports, struct ll_rdzv **ret,
		   struct ll_error *err)
{
	struct ll_rdzv *r;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct epoll_event ev = { .events = EPOLLIN };
	int fd = -1, rc = -EADDRINUSE;

	for (size_t i = 0; i < n_ports && rc < 0; i++)
		rc = ll_listen_any(ports[i], &fd);
	if (rc < 0)
		rc = ll_listen_any(0, &fd);
	if (rc < 0)
		return ll_error_set(err, rc, "cannot listen for the other nodes: %s", strerror(-rc));
	r = rdzv_new(job, true);
	r->listen_fd = fd;
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
		r->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							 : ((struct sockaddr_in *)&ss)->sin_port);
	r->seen = ll_calloc(job->nnodes ? job->nnodes : 1, 1);
	raise_fd_limit(job->nnodes);
	ev.data.ptr = &r->listen_marker;
	epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev);
	*ret = r;
	return 0;
}

static void conn_want_out(struct ll_rdzv *r, struct conn *c, bool want)
{
	struct epoll_event ev = { .events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c };

	if (c->want_out == want)
		return;
	c->want_out = want;
	epoll_ctl(r->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static void conn_flush(struct ll_rdzv *r, struct conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n = send(c->fd, c->out.s + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				c->out_off = c->out.len; /* the node is gone: nothing to send */
				break;
			}
			conn_want_out(r, c, true);
			return;
		}
		c->out_off += (size_t)n;
	}
	ll_buf_reset(&c->out);
	c->out_off = 0;
	conn_want_out(r, c, false);
}

static void conn_send(struct ll_rdzv *r, struct conn *c, const char *line)
{
	ll_buf_add(&c->out, line);
	ll_buf_addc(&c->out, '\n');
	conn_flush(r, c);
}

static void conn_drop(struct ll_rdzv *r, struct conn *c)
{
	size_t i = c->index;

	epoll_ctl(r->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	conn_free(c);
	if (i != --r->n_conns) {
		r->conns[i] = r->conns[r->n_conns];
		r->conns[i]->index = i;
	}
}

static void local_address(int fd, char **ret_addr, char **ret_ifname)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char text[INET6_ADDRSTRLEN];
	struct ifaddrs *ifa = NULL;

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return;
	/* an IPv4-mapped address reads as its IPv4 one (ll_addr_text) */
	if (!ll_addr_text((struct sockaddr *)&ss, text))
		return;
	*ret_addr = ll_strdup(text);
	if (getifaddrs(&ifa) < 0)
		return;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		char t[INET6_ADDRSTRLEN];

		if (i->ifa_addr && ll_addr_text(i->ifa_addr, t) && strcmp(t, text) == 0) {
			*ret_ifname = ll_strdup(i->ifa_name);
			break;
		}
	}
	freeifaddrs(ifa);
}

/* A node's record at check-in: the first of its digests asks for its summary. */
static bool conn_record(struct ll_rdzv *r, struct conn *c, const char *text)
{
	struct ll_agree_node rec = { 0 };

	if (!r->gathering || ll_agree_node_parse(text, r->names[c->rank], &rec, NULL) < 0)
		return false;
	if (!(r->seen[c->rank] & SEEN_CHECKIN)) {
		rec.name = ll_strdup(r->names[c->rank]);
		r->nodes[c->rank] = rec;
		r->n_records++;
		if (ll_agree_digests_add(r->digests, &r->nodes[c->rank], c->rank)) {
			r->sum_state[c->rank] = SUM_WANTED;
			r->n_sum_pending++;
		}
	} else {
		ll_agree_node_release(&rec); /* a node that checks in again: its first record stands */
	}
	return true;
}

/* A node's summary, after SEND. */
static void conn_summary(struct ll_rdzv *r, struct conn *c, const char *line)
{
	c->want_summary = false;
	if (r->sum_state[c->rank] != SUM_WANTED || !ll_startswith(line, "SUMMARY ") ||
	    ll_summary_parse(line + 8, r->names[c->rank], &r->sums[c->rank], NULL) < 0)
		return; /* the decision then says the summary is missing */
	r->sum_state[c->rank] = SUM_HAVE;
	r->n_sum_pending--;
}

/* The hello: "LLMLAUNCH2 TOKEN RANK NNODES KIND [RECORD | IFNAME SOURCE]". */
static void conn_hello(struct ll_rdzv *r, struct conn *c, char *line)
{
	char *save = NULL, *f[5] = { 0 }, *rest;
	size_t n = 0;
	long rank, nnodes;
	bool record;

	for (char *t = strtok_r(line, " ", &save); t && n < LL_ARRAY_SIZE(f);
	     t = n < LL_ARRAY_SIZE(f) ? strtok_r(NULL, " ", &save) : NULL)
		f[n++] = t;
	rest = save && *save ? save : NULL;
	if (n < 5 || strcmp(f[0], PROTO) != 0 || strcmp(f[1], r->token) != 0 ||
	    ll_parse_long(f[2], 1, (long)r->nnodes - 1, &rank) < 0 ||
	    ll_parse_long(f[3], (long)r->nnodes, (long)r->nnodes, &nnodes) < 0 ||
	    (strcmp(f[4], "CHECKIN") != 0 && strcmp(f[4], "REACH") != 0)) {
		c->alien = true;
		conn_send(r, c, "ALIEN");
		return;
	}
	c->rank = (size_t)rank;
	c->kind = strcmp(f[4], "REACH") == 0 ? CONN_REACH : CONN_CHECKIN;
	record = c->kind == CONN_CHECKIN && rest;
	if (record && !conn_record(r, c, rest)) {
		c->alien = true; /* a record rank 0 cannot read, or no agreement here */
		conn_send(r, c, "ALIEN");
		return;
	}
	if (!r->seen[c->rank])
		r->n_arrived++;
	if (c->kind == CONN_REACH) {
		if (!(r->seen[c->rank] & SEEN_REACH))
			r->n_reach++;
		r->seen[c->rank] |= SEEN_REACH;
		if (!r->arrival_addr)
			local_address(c->fd, &r->arrival_addr, &r->arrival_ifname);
	} else {
		if (!(r->seen[c->rank] & SEEN_CHECKIN))
			r->n_checkin++;
		r->seen[c->rank] |= SEEN_CHECKIN;
	}
	conn_send(r, c, "HELLO");
	if (record && r->sum_state[c->rank] == SUM_WANTED) {
		c->want_summary = true;
		conn_send(r, c, "SEND");
	}
}

/* Read what a node sent; false when the connection is finished. */
static bool conn_read(struct ll_rdzv *r, struct conn *c)
{
	char buf[4096];

	for (;;) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
		if (n == 0)
			return false;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
		if (c->kind != CONN_NEW && !c->want_summary)
			continue; /* nothing more is expected from a node */
		ll_buf_addn(&c->in, buf, (size_t)n);
		char *nl = memchr(c->in.s, '\n', c->in.len);
		if (nl) {
			*nl = '\0';
			if (c->kind == CONN_NEW)
				conn_hello(r, c, c->in.s);
			else
				conn_summary(r, c, c->in.s);
			ll_buf_reset(&c->in);
			if (c->alien)
				return false;
		} else if (c->in.len > (c->kind == CONN_NEW ? 1024 : LINE_MAX_BYTES)) {
			return false;
		}
	}
}

static void server_accept(struct ll_rdzv *r)
{
	for (;;) {
		int fd = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct conn *c;
		struct epoll_event ev = { .events = EPOLLIN };

		if (fd < 0)
			return;
		c = ll_calloc(1, sizeof(*c));
		c->fd = fd;
		ll_buf_init(&c->in);
		ll_buf_init(&c->out);
		ev.data.ptr = c;
		if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			conn_free(c);
			continue;
		}
		c->index = r->n_conns;
		*(struct conn **)ll_array_push(&r->conns, &r->n_conns, sizeof(*r->conns)) = c;
	}
}

static size_t server_missing_count(const struct ll_rdzv *r)
{
	size_t here = r->phase == LL_AGREE_WAIT_REACH ? r->n_reach : r->n_arrived;

	return r->nnodes - 1 - here;
}

/* Every half second at most: the user's status line, and the nodes' (WAIT) when the
 * count changed and a second has passed, else every STATUS_EVERY_S. Naming the
 * missing nodes reads every rank: never on each event, rank 0 takes thousands. */
static void server_status(struct ll_rdzv *r)
{
	double now = ll_now_s();
	struct ll_buf names;
	size_t n;
	bool send;

	if (now < r->status_check || (now - r->phase_start < STATUS_AFTER_S && !r->progress))
		return;
	r->status_check = now + 0.5;
	n = server_missing_count(r);
	send = now - r->phase_start >= STATUS_AFTER_S && n > 0 &&
	       ((n != r->status_missing && now - r->status_last >= 1.0) || now - r->status_last >= STATUS_EVERY_S);
	if (!send && (!r->progress || now - r->wait_start < PROGRESS_AFTER_S))
		return;
	ll_buf_init(&names);
	server_missing(r, &names);
	report(r, r->phase, n, names.s, false, false);
	if (send) {
		char *line = ll_asprintf("WAIT %zu %zu %s", n, r->nnodes, names.s);
		for (size_t i = 0; i < r->n_conns; i++)
			if (r->conns[i]->kind != CONN_NEW)
				conn_send(r, r->conns[i], line);
		free(line);
		r->status_missing = n;
		r->status_last = now;
	}
	ll_buf_release(&names);
}

static void server_event(struct ll_rdzv *r, void *ptr, uint32_t events)
{
	if (ptr == &r->listen_marker) {
		server_accept(r);
		return;
	}
	struct conn *c = ptr;

	if (events & EPOLLOUT)
		conn_flush(r, c);
	if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !conn_read(r, c))
		conn_drop(r, c);
}

void ll_rdzv_send_verdict(struct ll_rdzv *r, const char *fail_message)
{
	char *line = fail_message ? ll_asprintf("FAIL %s", fail_message) : ll_strdup("OK");
	double until = ll_now_s() + CLOSE_WAIT_S;

	for (char *p = line; *p; p++)
		if (*p == '\n')
			*p = ' ';
	for (size_t i = 0; i < r->n_conns; i++)
		if (r->conns[i]->kind != CONN_NEW)
			conn_send(r, r->conns[i], line);
	free(line);
	/* The nodes close first; those that do not, in time, are reset. */
	while (r->n_conns > 0 && ll_now_s() < until) {
		struct epoll_event evs[64];
		int n = epoll_wait(r->epfd, evs, 64, ll_poll_ms_until(until));
		for (int k = 0; k < n; k++)
			if (evs[k].data.ptr != &r->listen_marker)
				server_event(r, evs[k].data.ptr, evs[k].events);
	}
	while (r->n_conns > 0) {
		struct conn *c = r->conns[r->n_conns - 1];
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close_reset(c->fd);
		c->fd = -1;
		conn_free(c);
		r->n_conns--;
	}
}

/* ---- the other nodes' check-in ---- */

static void client_fail_attempt(struct ll_rdzv *r, int error)
{
	const struct addrinfo *a = r->addrs ? &r->addrs[r->addr_i] : NULL;
	char host[INET6_ADDRSTRLEN] = "?";

	if (r->fd >= 0) {
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->fd, NULL);
		close(r->fd);
		r->fd = -1;
	}
	if (a)
		getnameinfo(a->ai_addr, a->ai_addrlen, host, sizeof(host), NULL, 0, NI_NUMERICHOST);
	if (r->n_addrs == 0) {
		/* The proof's one connection: it is not tried again. */
		r->state = CLIENT_DONE;
		r->lost = true;
		return;
	}
	if (error) {
		free(r->last_error);
		r->last_error = ll_asprintf("%s:%d: %s", host, r->ports[r->port_i], strerror(error));
	}
	/* Next port, then next address; after a full round, pause. */
	if (++r->port_i >= r->n_ports) {
		r->port_i = 0;
		if (++r->addr_i >= r->n_addrs) {
			r->addr_i = 0;
			r->next_try = ll_now_s() + RETRY_PAUSE_S;
		}
	}
	r->state = CLIENT_IDLE;
}

static void client_try(struct ll_rdzv *r)
{
	struct addrinfo *a = &r->addrs[r->addr_i];
	struct sockaddr_storage ss;
	struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = &r->fd };

	memcpy(&ss, a->ai_addr, a->ai_addrlen);
	if (ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)r->ports[r->port_i]);
	else
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)r->ports[r->port_i]);
	r->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (r->fd < 0) {
		client_fail_attempt(r, errno);
		return;
	}
	if (connect(r->fd, (struct sockaddr *)&ss, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
		client_fail_attempt(r, errno);
		return;
	}
	epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->fd, &ev);
	r->state = CLIENT_CONNECTING;
	r->try_until = ll_now_s() + CONNECT_TRY_S;
}

/* A summary is a few kilobytes: the socket takes it at once, or soon. */
static int send_all(int fd, const char *text, double until)
{
	size_t len = strlen(text), off = 0;

	while (off < len) {
		ssize_t n = send(fd, text + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			if (ll_now_s() >= until)
				return errno = ETIMEDOUT, -1;
			poll(&pfd, 1, ll_poll_ms_until(until));
			continue;
		}
		if (n < 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

static void client_line(struct ll_rdzv *r, char *line)
{
	if (r->state == CLIENT_HELLO) {
		if (strcmp(line, "HELLO") == 0) {
			r->state = CLIENT_UP;
			free(LL_TAKE(r->last_error));
		} else {
			client_fail_attempt(r, 0); /* another job's rank 0: the next port */
			free(r->last_error);
			r->last_error = ll_strdup("another job answers on its ports");
		}
		return;
	}
	if (ll_startswith(line, "WAIT ")) {
		char *end;
		unsigned long n = strtoul(line + 5, &end, 10);
		char *names = strchr(end + 1, ' ');
		r->have_status = true;
		r->status_n = n;
		free(r->status_names);
		r->status_names = ll_strdup(names ? names + 1 : "");
		report(r, r->phase, n, r->status_names, false, false);
	} else if (ll_startswith(line, "FAIL ")) {
		free(r->verdict);
		r->verdict = ll_strdup(line + 5);
		r->state = CLIENT_DONE;
	} else if (ll_startswith(line, "HINT ")) {
		free(r->verdict_hint);
		r->verdict_hint = ll_strdup(line + 5);
	} else if (strcmp(line, "SEND") == 0 && r->summary) {
		_cleanup_free_ char *text = ll_asprintf("SUMMARY %s\n", r->summary);
		if (send_all(r->fd, text, ll_now_s() + CONNECT_TRY_S) < 0)
			client_fail_attempt(r, errno);
	} else if (r->record && ll_rdzv_decision_line(&r->decision, line) == 1) {
		r->decided = true;
		r->state = CLIENT_DONE;
	} else if (strcmp(line, "OK") == 0) {
		r->ok = true;
		r->state = CLIENT_DONE;
	}
}

static void client_read(struct ll_rdzv *r)
{
	char buf[4096];

	for (;;) {
		ssize_t n = recv(r->fd, buf, sizeof(buf), 0);
		char *nl;

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			bool was_up = r->state == CLIENT_UP;
			client_fail_attempt(r, n < 0 ? errno : ECONNRESET);
			if (was_up) {
				free(r->last_error);
				r->last_error = ll_asprintf("%s closed the connection", name_of(r, 0));
			}
			return;
		}
		ll_buf_addn(&r->in, buf, (size_t)n);
		while ((nl = memchr(r->in.s, '\n', r->in.len))) {
			size_t used = (size_t)(nl - r->in.s) + 1;
			*nl = '\0';
			client_line(r, r->in.s);
			memmove(r->in.s, r->in.s + used, r->in.len - used + 1);
			r->in.len -= used;
			if (r->fd < 0 || r->state == CLIENT_DONE)
				return;
		}
		if (r->in.len > LINE_MAX_BYTES) {
			client_fail_attempt(r, EPROTO);
			return;
		}
	}
}

static void client_event(struct ll_rdzv *r)
{
	if (r->state == CLIENT_CONNECTING) {
		int e = 0;
		socklen_t len = sizeof(e);
		char *hello;

		getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &e, &len);
		if (e) {
			client_fail_attempt(r, e);
			return;
		}
		hello = hello_line(r->token, r->rank, r->nnodes, "CHECKIN", r->record, NULL);
		if (send(r->fd, hello, strlen(hello), MSG_NOSIGNAL) < 0) {
			free(hello);
			client_fail_attempt(r, errno);
			return;
		}
		free(hello);
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &r->fd };
		epoll_ctl(r->epfd, EPOLL_CTL_MOD, r->fd, &ev);
		r->state = CLIENT_HELLO;
		r->try_until = ll_now_s() + CONNECT_TRY_S;
		ll_buf_reset(&r->in);
		return;
	}
	client_read(r);
}

int ll_rdzv_checkin(const struct ll_rdzv_job *job, const char *host, const int *ports, size_t n_ports,
		    struct ll_rdzv **ret, struct ll_error *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	struct ll_rdzv *r;
	size_t n = 0;
	int rc;

	if ((rc = getaddrinfo(host, NULL, &hints, &ai)) != 0)
		return ll_error_set(err, -ENOENT, "'%s' does not resolve: %s", host, gai_strerror(rc));
	r = rdzv_new(job, false);
	for (struct addrinfo *a = ai; a; a = a->ai_next)
		n++;
	/* One array, so an index walks it (getaddrinfo's list is not indexable). */
	r->addrs = ll_calloc(n, sizeof(struct addrinfo));
	r->n_addrs = 0;
	for (struct addrinfo *a = ai; a; a = a->ai_next) {
		struct addrinfo *c = &r->addrs[r->n_addrs++];
		*c = *a;
		c->ai_addr = ll_malloc(a->ai_addrlen);
		memcpy(c->ai_addr, a->ai_addr, a->ai_addrlen);
		c->ai_canonname = NULL;
		c->ai_next = NULL;
	}
	freeaddrinfo(ai);
	r->n_ports = n_ports < LL_RDZV_PORTS ? n_ports : LL_RDZV_PORTS;
	memcpy(r->ports, ports, r->n_ports * sizeof(int));
	if (r->n_ports == 0) {
		ll_rdzv_close(r);
		return ll_error_set(err, -EINVAL, "no port to check in at");
	}
	*ret = r;
	return 0;
}

/* ---- both ---- */

void ll_rdzv_run(struct ll_rdzv *r, int wake_fd, double until)
{
	struct epoll_event ev = { .events = EPOLLIN };

	if (wake_fd >= 0) {
		ev.data.ptr = &r->wake_marker;
		epoll_ctl(r->epfd, EPOLL_CTL_ADD, wake_fd, &ev);
	}
	for (;;) {
		struct epoll_event evs[512];
		double now = ll_now_s(), wake = until;
		bool woken = false;
		int n;

		if (r->server) {
			server_status(r);
			if (r->phase == LL_AGREE_WAIT_REACH && r->n_reach + 1 >= r->nnodes)
				break; /* everyone is here: the verdict can go */
			if (r->gathering && r->n_records >= r->nnodes && r->n_sum_pending == 0)
				break; /* every record and summary: the decision can be made */
		} else if (r->state == CLIENT_DONE) {
			break;
		} else if (r->state == CLIENT_IDLE && now >= r->next_try) {
			client_try(r);
			continue;
		} else if ((r->state == CLIENT_CONNECTING || r->state == CLIENT_HELLO) && now >= r->try_until) {
			client_fail_attempt(r, ETIMEDOUT);
			continue;
		}
		if (now >= until)
			break;
		if (!r->server) {
			double t = r->state == CLIENT_IDLE ? r->next_try : r->state == CLIENT_UP ? until : r->try_until;
			if (t < wake)
				wake = t;
		} else if (wake > now + 0.5) {
			wake = now + 0.5; /* status lines keep time */
		}
		n = epoll_wait(r->epfd, evs, (int)LL_ARRAY_SIZE(evs), ll_poll_ms_until(wake));
		for (int k = 0; k < n; k++) {
			if (evs[k].data.ptr == &r->wake_marker)
				woken = true;
			else if (r->server)
				server_event(r, evs[k].data.ptr, evs[k].events);
			else if (r->fd >= 0)
				client_event(r);
		}
		if (woken)
			break;
	}
	if (wake_fd >= 0)
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, wake_fd, NULL);
}

bool ll_rdzv_missing(struct ll_rdzv *r, size_t *ret_n, char **ret_names, char **ret_why)
{
	if (r->server) {
		struct ll_buf names;
		ll_buf_init(&names);
		*ret_n = server_missing(r, &names);
		if (ret_names)
			*ret_names = ll_buf_detach(&names);
		ll_buf_release(&names);
		return true;
	}
	if (r->have_status) {
		*ret_n = r->status_n;
		if (ret_names)
			*ret_names = ll_strdup(r->status_names);
		return true;
	}
	if (ret_why)
		*ret_why = r->state == CLIENT_UP ? ll_asprintf("%s (node 0) sent no status", name_of(r, 0))
						 : ll_asprintf("%s (node 0) did not answer the check-in: %s", name_of(r, 0),
							       r->last_error ? r->last_error : "no answer");
	return false;
}

char *ll_rdzv_missing_hostlist(const struct ll_rdzv *r)
{
	_cleanup_free_ char **names = NULL;
	size_t n = 0;

	if (!r || !r->server)
		return NULL;
	names = ll_calloc(r->nnodes + 1, sizeof(char *));
	for (size_t i = 0; i < r->nnodes; i++)
		if (!server_done_with(r, i) && r->names[i])
			names[n++] = r->names[i];
	return n ? ll_hostlist_compress(names, n) : NULL;
}

const char *ll_rdzv_verdict(const struct ll_rdzv *r)
{
	return r ? r->verdict : NULL;
}

bool ll_rdzv_checked_in(const struct ll_rdzv *r)
{
	return r && (r->state == CLIENT_UP || r->have_status || r->verdict || r->decided);
}

const char *ll_rdzv_verdict_hint(const struct ll_rdzv *r)
{
	return r ? r->verdict_hint : NULL;
}

const struct ll_rdzv_decision *ll_rdzv_decision(const struct ll_rdzv *r)
{
	return r && r->decided ? &r->decision : NULL;
}

/* ---- the agreement without PMIx ---- */

int ll_rdzv_gather(struct ll_rdzv *r, const struct ll_agree_node *self, const struct ll_summary *self_summary,
		   double until, struct ll_error *err)
{
	struct ll_buf names;
	size_t missing;
	int rc;

	r->nodes = ll_calloc(r->nnodes, sizeof(*r->nodes));
	r->sums = ll_calloc(r->nnodes, sizeof(*r->sums));
	r->sum_state = ll_calloc(r->nnodes, 1);
	r->digests = ll_agree_digests_new();
	r->self_summary = self_summary;
	/* Rank 0's own: its summary is always read (node 0's addresses are the master's). */
	r->nodes[r->rank] = *self;
	r->nodes[r->rank].name = ll_strdup(r->names[r->rank]);
	r->nodes[r->rank].topology_addr = ll_strdup(self->topology_addr);
	r->nodes[r->rank].clique.key = ll_strdup(self->clique.key);
	r->sums[r->rank] = (struct ll_summary *)self_summary;
	r->sum_state[r->rank] = SUM_HAVE;
	ll_agree_digests_add(r->digests, &r->nodes[r->rank], r->rank);
	r->n_records = 1;
	r->gathering = true;
	r->phase = LL_AGREE_WAIT_ARRIVE;
	while ((r->n_records < r->nnodes || r->n_sum_pending > 0) && ll_now_s() < until)
		ll_rdzv_run(r, -1, until);
	r->gathering = false;
	ll_rdzv_progress_done(r, r->n_records >= r->nnodes && r->n_sum_pending == 0);
	if (r->n_records >= r->nnodes && r->n_sum_pending == 0)
		return 0;
	ll_buf_init(&names);
	missing = server_missing(r, &names);
	if (missing > 0)
		rc = ll_error_set(err, -ETIMEDOUT, "%zu of %zu nodes did not check in within %.0f s: %s", missing, r->nnodes,
				  until - r->wait_start, names.s);
	else
		rc = ll_error_set(err, -ETIMEDOUT, "%zu node%s did not send the summary the agreement reads within %.0f s",
				  r->n_sum_pending, r->n_sum_pending == 1 ? "" : "s", until - r->wait_start);
	ll_buf_release(&names);
	return rc;
}

const struct ll_agree_node *ll_rdzv_nodes(const struct ll_rdzv *r)
{
	return r->nodes;
}

const struct ll_summary *ll_rdzv_summary(const struct ll_rdzv *r, size_t i)
{
	return r->sums && i < r->nnodes ? r->sums[i] : NULL;
}

/* One line of text: a newline inside would end it early. */
static void add_line(struct ll_buf *b, const char *kind, const char *text)
{
	size_t start = b->len;

	ll_buf_addf(b, "%s %s", kind, text ? text : "");
	for (size_t i = start; i < b->len; i++)
		if (b->s[i] == '\n')
			b->s[i] = ' ';
	ll_buf_addc(b, '\n');
}

char *ll_rdzv_decision_lines(const struct ll_agree_result *res, int node_rank, const char *order_text)
{
	struct ll_buf b;

	ll_buf_init(&b);
	for (size_t i = 0; i < res->n_warnings; i++)
		add_line(&b, "NOTE", res->warnings[i]);
	if (res->nvlink_domain > 0) {
		char *text = ll_asprintf("%d %s", res->nvlink_domain, res->nvlink_domain_reason ? res->nvlink_domain_reason : "");
		add_line(&b, "DOMAIN", text);
		free(text);
	}
	if (order_text)
		add_line(&b, "ORDER", order_text);
	ll_buf_addf(&b, "DECIDED %d %d %s%s%s %s %s\n", node_rank, res->master_port, res->routed ? "r" : "",
		    res->loopback_only ? "l" : "", res->routed || res->loopback_only ? "" : "-", res->master_addr,
		    res->subnet ? res->subnet : "-");
	return ll_buf_detach(&b);
}

int ll_rdzv_decision_line(struct ll_rdzv_decision *d, const char *line)
{
	if (ll_startswith(line, "NOTE ")) {
		*(char **)ll_array_push(&d->notes, &d->n_notes, sizeof(char *)) = ll_strdup(line + 5);
		return 0;
	}
	if (ll_startswith(line, "DOMAIN ")) {
		char *end;
		long n = strtol(line + 7, &end, 10);
		if (end == line + 7 || n <= 0 || n > 1 << 20)
			return -EPROTO;
		d->nvlink_domain = (int)n;
		free(d->nvlink_domain_reason);
		d->nvlink_domain_reason = ll_strdup(*end == ' ' ? end + 1 : end);
		return 0;
	}
	if (ll_startswith(line, "ORDER ")) {
		free(d->node_order);
		d->node_order = ll_strdup(line + 6);
		return 0;
	}
	if (ll_startswith(line, "DECIDED ")) {
		char flags[4], master[INET6_ADDRSTRLEN], subnet[INET6_ADDRSTRLEN + 8];
		int rank, port;
		if (sscanf(line + 8, "%d %d %3s %45s %53s", &rank, &port, flags, master, subnet) != 5 || rank < 0 ||
		    port <= 0 || port > 65535)
			return -EPROTO;
		d->node_rank = rank;
		d->master_port = port;
		d->routed = strchr(flags, 'r') != NULL;
		d->loopback_only = strchr(flags, 'l') != NULL;
		free(d->master_addr);
		d->master_addr = ll_strdup(master);
		free(d->subnet);
		d->subnet = strcmp(subnet, "-") == 0 ? NULL : ll_strdup(subnet);
		return 1;
	}
	return -EPROTO;
}

void ll_rdzv_decision_release(struct ll_rdzv_decision *d)
{
	free(d->master_addr);
	free(d->subnet);
	ll_strv_free(d->notes, d->n_notes);
	free(d->nvlink_domain_reason);
	free(d->node_order);
	memset(d, 0, sizeof(*d));
}

void ll_rdzv_send_decision(struct ll_rdzv *r, const struct ll_agree_result *res, const char *fail_message,
			   const char *fail_hint)
{
	_cleanup_free_ int *rank_of = NULL;
	_cleanup_free_ char *order_text = NULL;

	if (!res) {
		if (fail_hint) {
			struct ll_buf b;
			ll_buf_init(&b);
			add_line(&b, "HINT", fail_hint);
			b.s[b.len - 1] = '\0'; /* conn_send ends the line */
			for (size_t i = 0; i < r->n_conns; i++)
				if (r->conns[i]->kind == CONN_CHECKIN)
					conn_send(r, r->conns[i], b.s);
			ll_buf_release(&b);
		}
		ll_rdzv_send_verdict(r, fail_message);
		return;
	}
	if (res->clique_order)
		order_text = ll_agree_order_text(r->nodes, res->order, res->n_nodes);
	rank_of = ll_calloc(r->nnodes, sizeof(int));
	for (size_t k = 0; k < res->n_nodes && k < r->nnodes; k++)
		rank_of[res->order[k]] = (int)k;
	for (size_t i = 0; i < r->n_conns; i++) {
		struct conn *c = r->conns[i];
		char *lines;

		if (c->kind != CONN_CHECKIN)
			continue;
		lines = ll_rdzv_decision_lines(res, rank_of[c->rank], order_text);
		ll_buf_add(&c->out, lines);
		conn_flush(r, c);
		free(lines);
	}
}

/* ---- routes and interfaces ---- */

static void set_port(struct sockaddr_storage *ss, int port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
}

/* The interface holding `addr` (numeric), malloc'ed, or NULL. */
static char *ifname_of_addr(const struct sockaddr_storage *ss)
{
	struct ifaddrs *ifa = NULL;
	char *found = NULL;

	if (getifaddrs(&ifa) < 0)
		return NULL;
	for (struct ifaddrs *i = ifa; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != ss->ss_family)
			continue;
		if (ss->ss_family == AF_INET
			    ? memcmp(&((struct sockaddr_in *)i->ifa_addr)->sin_addr, &((const struct sockaddr_in *)ss)->sin_addr,
				     4) == 0
			    : memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
				     &((const struct sockaddr_in6 *)ss)->sin6_addr, 16) == 0)
			found = ll_strdup(i->ifa_name);
	}
	freeifaddrs(ifa);
	return found;
}

int ll_route_to(const char *addr, char **ret_ifname, char **ret_source, struct ll_error *err)
{
	struct sockaddr_storage ss, src;
	socklen_t len, slen = sizeof(src);
	char text[INET6_ADDRSTRLEN];
	int fd, r;

	if (ll_sockaddr_numeric(addr, 9, &ss, &len) < 0)
		return ll_error_set(err, -EINVAL, "'%s' is not a numeric address", addr);
	/* A UDP "connection" sends nothing: it only asks the kernel for the route. */
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return ll_error_set(err, -errno, "cannot find the route to %s: %s", addr, strerror(errno));
	if (connect(fd, (struct sockaddr *)&ss, len) < 0 || getsockname(fd, (struct sockaddr *)&src, &slen) < 0) {
		r = -errno;
		close(fd);
		return ll_error_set(err, r == -EINVAL ? -ENETUNREACH : r, "no route to %s: %s", addr, strerror(-r));
	}
	close(fd);
	if (!ll_addr_text((struct sockaddr *)&src, text))
		return ll_error_set(err, -EINVAL, "cannot print the route's source address");
	*ret_ifname = ifname_of_addr(&src);
	if (!*ret_ifname)
		return ll_error_set(err, -ENETUNREACH, "no interface holds %s, the source of the route to %s", text, addr);
	*ret_source = ll_strdup(text);
	return 0;
}

/* This node's address of `family` on `ifname`: 0, -ENODEV (no such interface),
 * -EADDRNOTAVAIL (none of that family). */
static int if_source(const char *ifname, int family, struct sockaddr_storage *ret, char text[INET6_ADDRSTRLEN])
{
	struct ifaddrs *ifa = NULL;
	bool exists = false, found = false;

	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (struct ifaddrs *i = ifa; i && !found; i = i->ifa_next) {
		if (strcmp(i->ifa_name, ifname) != 0)
			continue;
		exists = true;
		if (!i->ifa_addr || i->ifa_addr->sa_family != family)
			continue;
		if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr))
			continue;
		memset(ret, 0, sizeof(*ret));
		memcpy(ret, i->ifa_addr, family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
		ll_addr_text((struct sockaddr *)ret, text);
		found = true;
	}
	freeifaddrs(ifa);
	if (!exists)
		return if_nametoindex(ifname) ? -EADDRNOTAVAIL : -ENODEV;
	return found ? 0 : -EADDRNOTAVAIL;
}

/* ---- the proof ---- */

char *ll_rdzv_failure_text(const char *node, const char *master_addr, int master_port, const char *ifname,
			   const char *source, const char *why)
{
	struct ll_buf b;
	bool v6 = master_addr && strchr(master_addr, ':');

	ll_buf_init(&b);
	ll_buf_addf(&b, "%s cannot reach the master %s%s%s:%d", node, v6 ? "[" : "", master_addr, v6 ? "]" : "",
		    master_port);
	if (ifname)
		ll_buf_addf(&b, " through %s", ifname);
	if (source)
		ll_buf_addf(&b, " (%s)", source);
	ll_buf_addf(&b, ": %s", why);
	return ll_buf_detach(&b);
}

void ll_rdzv_outcome_release(struct ll_rdzv_outcome *o)
{
	free(o->detail);
	free(o->verdict);
	free(o->arrival_ifname);
	free(o->arrival_addr);
	memset(o, 0, sizeof(*o));
}

static bool retry_error(int e)
{
	/* Nothing listens yet, or a transient loss; a missing route or interface is final. */
	return e == ECONNREFUSED || e == ETIMEDOUT || e == EHOSTUNREACH || e == ECONNRESET || e == EAGAIN;
}

/* Connect to the master from `ifname` (NULL: as routed). 0 with *ret_fd, or the errno
 * of the last attempt; *ret_source gets the address it tried from. */
static int reach_connect(const struct ll_rdzv_proof *p, char source[INET6_ADDRSTRLEN], int *ret_fd)
{
	struct sockaddr_storage dst, src;
	socklen_t len;
	int e = ETIMEDOUT;

	if (ll_sockaddr_numeric(p->master_addr, p->master_port, &dst, &len) < 0)
		return EINVAL;
	if (p->ifname) {
		int r = if_source(p->ifname, dst.ss_family, &src, source);
		if (r < 0)
			return -r;
	}
	/* At least one attempt, even past the deadline: its error is what this node says. */
	for (bool tried = false;; tried = true) {
		double now = ll_now_s(), stop = e == ECONNREFUSED ? p->arrive_deadline : p->deadline;
		int fd;
		struct pollfd pfd;
		socklen_t elen = sizeof(e);

		if (now >= stop && tried)
			return e;
		fd = socket(dst.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return errno;
		if (p->ifname) {
			/* As NCCL and gloo do: the interface's address is the source. Binding the
			 * device too keeps the kernel from routing around a dead link; an
			 * unprivileged process on an old kernel may not, and does without. */
			setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, p->ifname, (socklen_t)strlen(p->ifname));
			set_port(&src, 0);
			if (bind(fd, (struct sockaddr *)&src, len) < 0) {
				e = errno;
				close(fd);
				return e;
			}
		}
		if (connect(fd, (struct sockaddr *)&dst, len) == 0) {
			e = 0;
		} else if (errno != EINPROGRESS) {
			e = errno;
		} else {
			pfd.fd = fd;
			pfd.events = POLLOUT;
			if (poll(&pfd, 1, ll_poll_ms_until(e == ECONNREFUSED ? p->arrive_deadline : p->deadline)) <= 0)
				e = ETIMEDOUT;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) < 0)
				e = errno;
		}
		if (e == 0) {
			if (!p->ifname) {
				struct sockaddr_storage me;
				socklen_t mlen = sizeof(me);
				if (getsockname(fd, (struct sockaddr *)&me, &mlen) == 0)
					inet_ntop(me.ss_family,
						  me.ss_family == AF_INET6
							  ? (const void *)&((struct sockaddr_in6 *)&me)->sin6_addr
							  : (const void *)&((struct sockaddr_in *)&me)->sin_addr,
						  source, INET6_ADDRSTRLEN);
			}
			*ret_fd = fd;
			return 0;
		}
		close(fd);
		if (!retry_error(e))
			return e;
		usleep((useconds_t)(RETRY_PAUSE_S * 1e6));
	}
}

/* Rank 0's half: everyone reached it, or the deadline. */
static int prove_server(struct ll_rdzv *r, const struct ll_rdzv_proof *p, struct ll_rdzv_outcome *out,
			struct ll_error *err)
{
	struct ll_buf names;
	size_t missing;
	char *msg;

	r->phase = LL_AGREE_WAIT_REACH;
	r->phase_start = r->wait_start = ll_now_s();
	r->status_missing = (size_t)-1;
	r->status_check = 0;
	r->progress_shown = false;
	while (r->n_reach + 1 < r->nnodes && ll_now_s() < p->arrive_deadline)
		ll_rdzv_run(r, -1, p->arrive_deadline);
	ll_rdzv_progress_done(r, r->n_reach + 1 >= r->nnodes);
	out->arrival_addr = ll_strdup(r->arrival_addr);
	out->arrival_ifname = ll_strdup(r->arrival_ifname);
	ll_buf_init(&names);
	missing = server_missing(r, &names);
	if (missing == 0) {
		ll_buf_release(&names);
		ll_rdzv_send_verdict(r, NULL);
		return 0;
	}
	msg = ll_asprintf("%zu of %zu nodes did not reach the master %s:%d within %.0f s: %s", missing, r->nnodes,
			  p->master_addr, p->master_port, p->arrive_deadline - r->phase_start, names.s);
	ll_buf_release(&names);
	ll_rdzv_send_verdict(r, msg);
	out->verdict = msg;
	return ll_error_set(err, -EHOSTUNREACH, "%s", msg);
}

static const char *self_name(const struct ll_rdzv_job *job)
{
	return job->names && job->rank < job->nnodes && job->names[job->rank] ? job->names[job->rank] : "this node";
}

int ll_rdzv_prove(const struct ll_rdzv_job *job, struct ll_rdzv *server, const struct ll_rdzv_proof *p,
		  struct ll_rdzv_outcome *out, struct ll_error *err)
{
	char source[INET6_ADDRSTRLEN] = "", *hello;
	struct ll_rdzv *r;
	int fd = -1, e;
	double until;

	memset(out, 0, sizeof(*out));
	if (server)
		return prove_server(server, p, out, err);

	e = reach_connect(p, source, &fd);
	if (e) {
		const char *why = e == ENODEV		? "no such interface on this node"
				  : e == EADDRNOTAVAIL ? (strchr(p->master_addr, ':') ? "it has no IPv6 address"
									    : "it has no IPv4 address")
						       : strerror(e);
		out->self_failed = true;
		out->detail = ll_rdzv_failure_text(self_name(job), p->master_addr, p->master_port, p->ifname,
						   *source ? source : NULL, why);
		return ll_error_set(err, -EHOSTUNREACH, "%s", out->detail);
	}
	/* Connected: say who we are, then wait for rank 0's verdict. */
	r = rdzv_new(job, false);
	r->phase = LL_AGREE_WAIT_REACH;
	r->fd = fd;
	r->state = CLIENT_HELLO;
	r->try_until = p->arrive_deadline + VERDICT_GRACE_S;
	hello = hello_line(r->token, r->rank, r->nnodes, "REACH", p->ifname, source);
	if (send(fd, hello, strlen(hello), MSG_NOSIGNAL) < 0) {
		e = errno;
		free(hello);
		ll_rdzv_close(r);
		out->self_failed = true;
		out->detail = ll_rdzv_failure_text(self_name(job), p->master_addr, p->master_port, p->ifname,
						   *source ? source : NULL, strerror(e));
		return ll_error_set(err, -EHOSTUNREACH, "%s", out->detail);
	}
	free(hello);
	{
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &r->fd };
		epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev);
	}
	until = p->arrive_deadline + VERDICT_GRACE_S;
	while (r->state != CLIENT_DONE && ll_now_s() < until)
		ll_rdzv_run(r, -1, until);
	ll_rdzv_progress_done(r, r->ok);
	if (r->ok) {
		ll_rdzv_close(r);
		return 0;
	}
	if (r->verdict) {
		out->verdict = LL_TAKE(r->verdict);
		ll_rdzv_close(r);
		return ll_error_set(err, -EHOSTUNREACH, "%s", out->verdict);
	}
	e = r->lost ? -EIO : -ETIMEDOUT;
	ll_error_set(err, e, "%s (node 0) gave no verdict on the rendezvous check %s", name_of(r, 0),
		     r->lost ? "before the connection closed" : "in time");
	ll_rdzv_close(r);
	return e;
}
