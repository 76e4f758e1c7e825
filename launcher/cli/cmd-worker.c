/* `llmlaunch __worker`: the entry torchrun runs (with --no_python) for every local
 * rank. It looks the rank's placement up by LOCAL_RANK, binds CPUs and memory, and
 * starts the interpreter, so the binding is in place before Python allocates anything.
 *
 * Under a supervising llmlaunch (LLMLAUNCH_STATUS_DIR set) the worker stays as the
 * interpreter's parent: torchrun turns any worker failure into its own exit status 1,
 * so the worker records the real status for llmlaunch, forwards signals, and ends
 * the same way the interpreter did. Without it (--exec) the worker simply execs.
 *
 * Where the bootstrap runs (python/llmlaunch_boot.py) it writes the script's exit
 * status into LLMLAUNCH_END_FILE just before the interpreter shuts down; an
 * interpreter that then dies of a signal finished the script (torch's threads and
 * Python's shutdown, pytorch/pytorch#38228), and the worker ends with the script's
 * status, saying so, instead of failing the job for it. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "job.h"
#include "llmlaunch/cli.h"
#include "llmlaunch/clock.h"
#include "llmlaunch/file.h"
#include "llmlaunch/launch.h"

/* What the interpreter wrote last on stderr: where the cause of a failure is. */
#define TAIL_MAX (64 * 1024)
/* The activity file's time is set at most this often (seconds): the supervisor's
 * hang watch needs seconds, not every write. */
#define TOUCH_INTERVAL_S 0.5

struct relay {
	int from, to;               /* our end of the interpreter's pipe; ours to copy to */
	bool keep_tail;
};

struct worker_run {
	struct relay relays[2];
	size_t n_relays;
	char tail[TAIL_MAX];
	size_t tail_len;
	char *activity;             /* STATUS_DIR/worker-LOCALRANK, NULL: none */
	char *activity_text;        /* what it says: which processes run the rank */
	bool printed;               /* the rank has written a first byte */
	double touched;
};

static void keep_tail(struct worker_run *w, const char *buf, size_t n)
{
	/* n is one read, smaller than the tail. */
	if (w->tail_len + n > TAIL_MAX) {
		size_t drop = w->tail_len + n - TAIL_MAX;

		memmove(w->tail, w->tail + drop, w->tail_len - drop);
		w->tail_len -= drop;
	}
	memcpy(w->tail + w->tail_len, buf, n);
	w->tail_len += n;
}

static void write_all(int fd, const char *buf, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, buf, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return; /* the terminal went away: the job goes on */
		buf += k;
		n -= (size_t)k;
	}
}

/* Copy what is there; false at the end of the stream (or an error). */
static bool relay_once(struct worker_run *w, struct relay *r)
{
	char buf[16384];
	ssize_t n = read(r->from, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	write_all(r->to, buf, (size_t)n);
	if (r->keep_tail)
		keep_tail(w, buf, (size_t)n);
	if (w->activity && !w->printed) {
		/* The watch starts at the job's first line: before it, the job is starting
		 * (imports, rendezvous), which torchrun's own timeouts bound. */
		_cleanup_free_ char *text = ll_asprintf("%sprinted\n", w->activity_text);

		ll_file_replace(w->activity, text, strlen(text), 0600);
		w->printed = true;
		w->touched = ll_now_s();
	} else if (w->activity && ll_now_s() - w->touched >= TOUCH_INTERVAL_S) {
		utimensat(AT_FDCWD, w->activity, NULL, 0);
		w->touched = ll_now_s();
	}
	return true;
}

char *run_node_name(void)
{
	const char *slurm = getenv("SLURMD_NODENAME");
	char host[256];

	if (slurm && *slurm)
		return ll_strdup(slurm);
	if (gethostname(host, sizeof(host)) < 0)
		return NULL;
	host[sizeof(host) - 1] = '\0';
	return ll_strdup(host);
}

/* Run argv as a child, forward signals to it, relay its stderr (and its stdout when
 * the hang watch asks for it) keeping the tail for the cause, record how it ended,
 * and end the same way. Never returns. */
static void __attribute__((noreturn)) run_and_record(char **argv, const char *status_dir, int local_rank)
{
	static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	static struct worker_run w;
	_cleanup_free_ char *end_file = NULL;
	int shutdown_signal = 0;
	const char *rc = getenv("TORCHELASTIC_RESTART_COUNT"), *rank_s = getenv("RANK");
	const char *watch = getenv(LL_WATCH_OUTPUT_ENV), *bootstrap = getenv(LL_BOOTSTRAP_ENV);
	sigset_t mask, old;
	struct ll_error err = { 0 };
	int st = 0, attempt = rc ? atoi(rc) : 0, rank = -1, sfd, errp[2] = { -1, -1 }, outp[2] = { -1, -1 };
	bool done = false;
	pid_t pid, parent = getpid();

	if (rank_s)
		ll_parse_digits(rank_s, strlen(rank_s), &rank);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	for (size_t i = 0; i < LL_ARRAY_SIZE(forwarded); i++)
		sigaddset(&mask, forwarded[i]);
	sigprocmask(SIG_BLOCK, &mask, &old);
	/* Without a pipe the worker still runs, unrelayed: a cause is a nicety. */
	if (pipe2(errp, O_CLOEXEC) < 0)
		errp[0] = errp[1] = -1;
	if (watch && strcmp(watch, "1") == 0 && pipe2(outp, O_CLOEXEC) < 0)
		outp[0] = outp[1] = -1;
	/* Only the bootstrap writes it: other interpreters are not told of it. */
	if (bootstrap && *bootstrap)
		end_file = ll_asprintf("%s/end-%d", status_dir, (int)parent);
	pid = fork();
	if (pid < 0) {
		ll_errorf("cannot start '%s': fork: %s", argv[0], strerror(errno));
		_exit(LL_EXIT_FAILURE);
	}
	if (pid == 0) {
		/* Die with the worker: torchrun's SIGKILL must not leave the script behind. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(128 + SIGKILL);
		if (errp[1] >= 0)
			dup2(errp[1], STDERR_FILENO);
		if (outp[1] >= 0)
			dup2(outp[1], STDOUT_FILENO);
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (end_file)
			setenv(LL_END_FILE_ENV, end_file, 1);
		execvp(argv[0], argv);
		ll_errorf("cannot run '%s': %s", argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	/* A closed terminal must not kill the worker before it records the end. */
	signal(SIGPIPE, SIG_IGN);
	if (errp[1] >= 0) {
		close(errp[1]);
		w.relays[w.n_relays++] = (struct relay){ errp[0], STDERR_FILENO, true };
	}
	if (outp[1] >= 0) {
		close(outp[1]);
		w.relays[w.n_relays++] = (struct relay){ outp[0], STDOUT_FILENO, false };
	}
	{
		/* The hang watch reads this file: its time is the last output, its text
		 * which process to ask for a stack. */
		char *text = ll_asprintf("pid %d\nworker %d\nrank %d\n", (int)pid, (int)getpid(), rank);

		w.activity_text = text;
		w.activity = ll_asprintf("%s/worker-%d", status_dir, local_rank);
		if (ll_file_replace(w.activity, text, strlen(text), 0600) < 0) {
			free(w.activity);
			w.activity = NULL;
		}
		w.touched = ll_now_s();
	}
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	while (!done) {
		struct pollfd pfd[3] = { { .fd = sfd, .events = POLLIN } };
		struct signalfd_siginfo si;

		for (size_t i = 0; i < w.n_relays; i++)
			pfd[1 + i] = (struct pollfd){ .fd = w.relays[i].from, .events = POLLIN };
		if (poll(pfd, 1 + w.n_relays, -1) < 0 && errno != EINTR)
			break;
		for (size_t i = 0; i < w.n_relays; i++)
			if (pfd[1 + i].revents && w.relays[i].from >= 0 && !relay_once(&w, &w.relays[i])) {
				close(w.relays[i].from);
				w.relays[i].from = -1;
			}
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (si.ssi_signo == SIGCHLD) {
				if (waitpid(pid, &st, WNOHANG) == pid)
					done = true;
			} else {
				kill(pid, (int)si.ssi_signo);
			}
		}
	}
	/* What the interpreter wrote before it ended; not what its own children (data
	 * loader workers holding the pipe) may write later. */
	for (size_t i = 0; i < w.n_relays; i++) {
		if (w.relays[i].from < 0)
			continue;
		fcntl(w.relays[i].from, F_SETFL, O_NONBLOCK);
		while (relay_once(&w, &w.relays[i])) {
			struct pollfd p = { .fd = w.relays[i].from, .events = POLLIN };

			if (poll(&p, 1, 0) <= 0)
				break;
		}
	}
	/* An ended rank is not hanging: the watch looks at running ranks only. */
	if (w.activity)
		unlink(w.activity);
	if (end_file) {
		_cleanup_free_ char *text = NULL;
		int script_status;

		if (ll_read_file(end_file, 64, &text) == 0 && sscanf(text, "exit %d", &script_status) == 1 &&
		    script_status >= 0 && script_status <= 255 && WIFSIGNALED(st)) {
			shutdown_signal = WTERMSIG(st);
			st = W_EXITCODE(script_status, 0);
		}
		unlink(end_file);
	}
	{
		_cleanup_free_ char *host = run_node_name(), *cause = NULL;
		/* A stop from outside (torchrun ending the other ranks after one failed,
		 * a forwarded Ctrl-C) that lands while the interpreter shuts down is not
		 * news; a signal the process raised itself is. */
		bool raised_at_shutdown = shutdown_signal && shutdown_signal != SIGTERM && shutdown_signal != SIGKILL &&
					  shutdown_signal != SIGINT && shutdown_signal != SIGHUP;

		if (WIFSIGNALED(st) || WEXITSTATUS(st) != 0 || raised_at_shutdown) {
			cause = ll_worker_cause_from_error_file(getenv("TORCHELASTIC_ERROR_FILE"));
			if (!cause && w.tail_len)
				cause = ll_worker_cause_from_output(w.tail, w.tail_len);
		}
		if (raised_at_shutdown) {
			/* The one cause known by name: libstdc++'s words when pthread_exit
			 * unwinds through a destructor. */
			bool torch_thread = cause && strstr(cause, "terminate called without an active exception");

			ll_warnf("rank %d%s%s: the script ended with status %d, then its interpreter died of SIG%s while "
				 "shutting down%s%s%s: status %d kept, the other ranks are not stopped for it",
				 rank, host ? " on " : "", host ? host : "", WEXITSTATUS(st),
				 sigabbrev_np(shutdown_signal) ? sigabbrev_np(shutdown_signal) : "?", cause ? " (" : "",
				 cause ? cause : "",
				 torch_thread ? ": a torch thread took the GIL after Python began to shut down, "
						"pytorch/pytorch#38228)"
					      : cause ? ")" : "",
				 WEXITSTATUS(st));
		}
		if (ll_worker_end_write(status_dir,
					&(struct ll_worker_end){ .local_rank = local_rank,
								 .rank = rank,
								 .attempt = attempt,
								 .wstatus = st,
								 .shutdown_signal = shutdown_signal,
								 .host = host,
								 .cause = cause },
					&err) < 0) {
			ll_report(&err);
			ll_error_clear(&err);
		}
	}
	fflush(stderr);
	if (WIFSIGNALED(st)) {
		/* End by the same signal, so torchrun reports what it would have seen. */
		int sig = WTERMSIG(st);
		struct sigaction dfl = { .sa_handler = SIG_DFL };

		sigaction(sig, &dfl, NULL);
		sigdelset(&old, sig);
		sigprocmask(SIG_SETMASK, &old, NULL);
		raise(sig);
		_exit(128 + sig);
	}
	_exit(WEXITSTATUS(st));
}

/* ---- the command ---- */

struct worker_options {
	const char *placement;
	const char *local_rank;
	const char *cpuset;
	const char *membind;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: llmlaunch __worker [OPTIONS] -- COMMAND [ARGS...]\n"
		"\n"
		"Internal: the entry torchrun runs for each local rank. Binds this process to\n"
		"the CPUs and NUMA memory that the placement gives LOCAL_RANK, then execs COMMAND.\n"
		"\n"
		"  --placement SPEC  placement of every rank (default: $" LL_PLACEMENT_ENV ")\n"
		"                    e.g. '0:cpus=0-7:mem=0;1:cpus=8-15:mem=1'\n"
		"  --local-rank N    the rank to look up (default: $LOCAL_RANK)\n"
		"  --cpuset LIST     bind to these CPUs instead (hwloc list, e.g. 0-3,8)\n"
		"  --membind N       bind memory to NUMA node N instead\n"
		"\n"
		"Example: LOCAL_RANK=1 llmlaunch __worker --placement '1:cpus=1' -- python3 -c\n"
		"         'import os; print(os.sched_getaffinity(0))'\n");
}

static int parse_argv(int argc, char **argv, struct worker_options *o)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "placement", required_argument, NULL, 'p' },
		{ "local-rank", required_argument, NULL, 'l' },
		{ "cpuset", required_argument, NULL, 'c' },
		{ "membind", required_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case 'p':
			o->placement = optarg;
			break;
		case 'l':
			o->local_rank = optarg;
			break;
		case 'c':
			o->cpuset = optarg;
			break;
		case 'M':
			o->membind = optarg;
			break;
		default:
			return ll_cmd_option_fallback("__worker", c, optarg, argv, NULL, longopts);
		}
	}
	if (optind >= argc) {
		ll_errorf("__worker: no command to run after '--'");
		return -EINVAL;
	}
	return 1;
}

int cmd_worker(int argc, char **argv, struct ll_ctx *ctx)
{
	struct worker_options o = { 0 };
	struct ll_worker_placement pl = { .mem = -1 };
	struct ll_error err = { 0 };
	bool have = false;
	const char *status_dir = getenv(LL_STATUS_DIR_ENV);
	const char *lr = getenv("LOCAL_RANK");
	int r;

	(void)ctx;
	r = parse_argv(argc, argv, &o);
	if (r <= 0)
		return r == 0 ? LL_EXIT_OK : LL_EXIT_USAGE;

	/* Die with torchrun, whatever ends it: a torchrun killed with SIGKILL (or one
	 * whose llmlaunch was, see ll_supervise) must not leave its workers running
	 * under PID 1. Kept across the exec below; the interpreter's own child in
	 * run_and_record() dies with us the same way. If torchrun is already gone,
	 * there is nobody to run for. */
	{
		pid_t parent = getppid();

		if (prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() != parent)
			return 128 + SIGKILL;
	}

	if (o.cpuset || o.membind) {
		pl.cpus = ll_strdup(o.cpuset);
		if (o.membind && ll_parse_digits(o.membind, strlen(o.membind), &pl.mem) < 0) {
			ll_errorf("__worker: --membind '%s' is not a NUMA node number", o.membind);
			free(pl.cpus);
			return LL_EXIT_USAGE;
		}
		have = true;
	} else {
		const char *spec = o.placement ? o.placement : getenv(LL_PLACEMENT_ENV);
		int rank;

		if (o.local_rank)
			lr = o.local_rank;

		if (spec && *spec) {
			if (!lr || ll_parse_digits(lr, strlen(lr), &rank) < 0) {
				ll_errorf("__worker: LOCAL_RANK is %s%s%s: this entry is meant to be run by torchrun",
					  lr ? "'" : "not set", lr ? lr : "", lr ? "'" : "");
				return LL_EXIT_FAILURE;
			}
			r = ll_placement_find(spec, rank, &pl, &err);
			if (r == -ENOENT) {
				ll_warnf("local rank %d has no placement in %s: running unbound", rank, LL_PLACEMENT_ENV);
			} else if (r < 0) {
				ll_report(&err);
				ll_error_clear(&err);
				return LL_EXIT_FAILURE;
			} else {
				have = true;
			}
		}
	}

	if (have) {
		r = ll_placement_apply_cpus(&pl, &err);
		if (r < 0) {
			ll_error_hint(&err, "run with '--bind none' to launch without binding");
			goto fail;
		}
		r = ll_placement_apply_mem(&pl, &err);
		if (r == -EPERM || r == -ENOSYS) {
			/* Containers commonly forbid set_mempolicy; CPU binding still holds and
			 * first-touch allocation keeps most memory local to those CPUs. */
			ll_warnf("%s; memory stays unbound", err.message);
			ll_error_clear(&err);
		} else if (r < 0) {
			ll_error_hint(&err, "run with '--bind none' to launch without binding");
			goto fail;
		}
		ll_worker_placement_release(&pl);
	}

	if (status_dir && *status_dir) {
		int rank = -1;

		if (lr)
			ll_parse_digits(lr, strlen(lr), &rank);
		run_and_record(argv + optind, status_dir, rank);
	}
	execvp(argv[optind], argv + optind);
	r = errno;
	ll_errorf("cannot run '%s': %s", argv[optind], strerror(r));
	return r == ENOENT ? 127 : 126;

fail:
	ll_report(&err);
	ll_error_clear(&err);
	ll_worker_placement_release(&pl);
	return LL_EXIT_FAILURE;
}
