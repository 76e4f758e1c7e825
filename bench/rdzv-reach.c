/* The rendezvous proof at scale on one machine: rank 0's half (ll_rdzv_prove, the real
 * code) in this process and N-1 simulated nodes in a child process, each one TCP
 * connection to rank 0 on loopback that sends the REACH line and reads rank 0's
 * verdict, as a node's ll_rdzv_prove does. Each node's work is one connection whatever
 * N is; rank 0's grows with N. Prints one JSON line: the median and worst over R runs
 * of rank 0's time from the first node's connection to the verdict sent to all, the
 * nodes' median and worst time from connect() to the verdict, and the deadline the
 * job would have (ll_agree_deadlines). Usage: rdzv-reach [N [R]] (default 10000 3). */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "llmlaunch/agree.h"
#include "llmlaunch/clock.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void raise_fd_limit(size_t need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < need) {
		rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

struct sim {
	int fd;
	double t0, t1;
	char buf[256];
	size_t len;
	bool sent, done;
};

/* The nodes: connect all, send each hello once connected, wait for "OK". Writes the
 * per-node seconds (connect to verdict) to `out` as doubles, n of them. */
static int nodes(size_t n, int port, const char *id, int out)
{
	struct sim *s = ll_calloc(n, sizeof(*s));
	int ep = epoll_create1(0);
	size_t left = n;
	double *times = ll_calloc(n, sizeof(double));
	double deadline = ll_now_s() + 120;

	raise_fd_limit(n + 64);
	for (size_t i = 0; i < n; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		struct epoll_event ev = { .events = EPOLLOUT | EPOLLIN, .data.u64 = i };

		s[i].fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (s[i].fd < 0) {
			perror("rdzv-reach: socket");
			return 1;
		}
		s[i].t0 = ll_now_s();
		if (connect(s[i].fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS) {
			perror("rdzv-reach: connect");
			return 1;
		}
		epoll_ctl(ep, EPOLL_CTL_ADD, s[i].fd, &ev);
	}
	while (left > 0 && ll_now_s() < deadline) {
		struct epoll_event evs[256];
		int k = epoll_wait(ep, evs, 256, 1000);

		for (int e = 0; e < k; e++) {
			struct sim *x = &s[evs[e].data.u64];
			if (x->done)
				continue;
			if (!x->sent && (evs[e].events & EPOLLOUT)) {
				struct ll_rdzv_job job = { .id = id, .nnodes = n + 1, .rank = (size_t)evs[e].data.u64 + 1 };
				char *hello = ll_rdzv_hello(&job, "REACH");
				if (send(x->fd, hello, strlen(hello), MSG_NOSIGNAL) > 0) {
					struct epoll_event ev = { .events = EPOLLIN, .data.u64 = evs[e].data.u64 };
					epoll_ctl(ep, EPOLL_CTL_MOD, x->fd, &ev);
					x->sent = true;
				}
				free(hello);
			}
			if (evs[e].events & EPOLLIN) {
				ssize_t r = recv(x->fd, x->buf + x->len, sizeof(x->buf) - 1 - x->len, 0);
				if (r <= 0)
					continue;
				x->len += (size_t)r;
				x->buf[x->len] = '\0';
				if (strstr(x->buf, "\nOK\n") || strncmp(x->buf, "OK\n", 3) == 0) {
					x->t1 = ll_now_s();
					x->done = true;
					close(x->fd); /* the node closes first, as ll_rdzv_prove's does */
					left--;
				} else if (x->len > 200) {
					/* WAIT lines: keep the last bytes only */
					memmove(x->buf, x->buf + x->len - 8, 8);
					x->len = 8;
				}
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		times[i] = s[i].done ? s[i].t1 - s[i].t0 : -1;
	if (write(out, times, n * sizeof(double)) < 0)
		return 1;
	return left == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000;
	int runs = argc > 2 ? atoi(argv[2]) : 3;
	double *rank0 = ll_calloc((size_t)runs, sizeof(double)), node_median = 0, node_max = 0;
	struct ll_agree_deadlines dl;
	char **names;

	if (n < 2 || runs < 1)
		return 2;
	names = ll_calloc(n, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		names[i] = ll_asprintf("node%05zu", i);
	ll_agree_deadlines(n, 0, &dl);
	raise_fd_limit(n + 64);
	for (int run = 0; run < runs; run++) {
		struct ll_rdzv_job job = { .id = "bench", .nnodes = n, .rank = 0, .names = names };
		struct ll_rdzv *srv = NULL;
		struct ll_rdzv_proof p = { .master_addr = "127.0.0.1" };
		struct ll_rdzv_outcome out;
		struct ll_error err = { 0 };
		double *times = ll_calloc(n - 1, sizeof(double)), t0;
		int pfd[2], status;
		pid_t child;
		size_t got = 0;

		if (ll_rdzv_listen(&job, NULL, 0, &srv, &err) < 0 || pipe(pfd) < 0) {
			fprintf(stderr, "rdzv-reach: %s\n", err.message ? err.message : strerror(errno));
			return 1;
		}
		p.master_port = ll_rdzv_port(srv);
		child = fork();
		if (child == 0) {
			close(pfd[0]);
			_exit(nodes(n - 1, p.master_port, "bench", pfd[1]));
		}
		close(pfd[1]);
		t0 = ll_now_s();
		p.deadline = p.arrive_deadline = t0 + dl.reach_s;
		if (ll_rdzv_prove(&job, srv, &p, &out, &err) < 0) {
			fprintf(stderr, "rdzv-reach: %s\n", err.message);
			return 1;
		}
		rank0[run] = ll_now_s() - t0;
		ll_rdzv_outcome_release(&out);
		ll_rdzv_close(srv);
		while (got < (n - 1) * sizeof(double)) {
			ssize_t r = read(pfd[0], (char *)times + got, (n - 1) * sizeof(double) - got);
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		close(pfd[0]);
		waitpid(child, &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got < (n - 1) * sizeof(double)) {
			fprintf(stderr, "rdzv-reach: the simulated nodes did not all get the verdict\n");
			return 1;
		}
		qsort(times, n - 1, sizeof(double), cmp_double);
		/* The nodes' figures of the last run. */
		node_median = times[(n - 1) / 2];
		node_max = times[n - 2];
		free(times);
	}
	qsort(rank0, (size_t)runs, sizeof(double), cmp_double);
	printf("{\"nodes\":%zu,\"runs\":%d,\"rank0_median_ms\":%.1f,\"rank0_max_ms\":%.1f,"
	       "\"node_median_ms\":%.1f,\"node_max_ms\":%.1f,\"connections_per_node\":1,\"reach_deadline_s\":%.1f}\n",
	       n, runs, rank0[runs / 2] * 1e3, rank0[runs - 1] * 1e3, node_median * 1e3, node_max * 1e3, dl.reach_s);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(rank0);
	return 0;
}
