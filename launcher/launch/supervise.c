/* Run torchrun as a supervised child: its own process group, signals forwarded to the
 * whole group, a bounded wait after a stop request, and no worker left behind.
 *
 * Signals are blocked and read from a signalfd rather than caught by handlers: one
 * poll() loop sees forwarded signals, child exits, the NCCL log watcher and the
 * escalation deadline in order, with nothing async-signal-unsafe to get wrong. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "llmlaunch/child.h"
#include "llmlaunch/clock.h"
#include "llmlaunch/launch.h"

static const int forwarded_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

static const char *signal_name(int sig)
{
	switch (sig) {
	case SIGINT: return "SIGINT";
	case SIGTERM: return "SIGTERM";
	case SIGHUP: return "SIGHUP";
	case SIGQUIT: return "SIGQUIT";
	case SIGUSR1: return "SIGUSR1";
	case SIGUSR2: return "SIGUSR2";
	default: return "a signal";
	}
}

static bool is_stop_signal(int sig)
{
	return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT;
}

static void notify(const struct ll_supervise_options *o, const char *fmt, ...) LL_PRINTF(2, 3);
static void notify(const struct ll_supervise_options *o, const char *fmt, ...)
{
	struct ll_buf b;
	va_list ap;

	if (!o || !o->notify)
		return;
	ll_buf_init(&b);
	va_start(ap, fmt);
	ll_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	o->notify(o->notify_data, b.s);
	ll_buf_release(&b);
}

/* When the job was first asked to stop (a forwarded signal, a watcher): what ended
 * after it was stopped, not failed. */
static void note_stop(const struct ll_supervise_options *o)
{
	struct timespec ts;

	if (!o || !o->ret_stop_time_ns || *o->ret_stop_time_ns)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	*o->ret_stop_time_ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Reap whatever has ended; returns the number reaped, sets *child_status when `child` was. */
static int reap(pid_t child, int *child_status, bool *child_done)
{
	int st, count = 0;
	pid_t p;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		if (p == child) {
			*child_status = st;
			*child_done = true;
		} else {
			count++;
		}
	}
	return count;
}

/* Workers that outlived torchrun (it died hard) were re-parented to us as the
 * subreaper: ask them to stop, then kill, each with a bound. */
static void sweep_group(pid_t pgid, const struct ll_supervise_options *o)
{
	double deadline;
	bool dummy = false;
	int st = 0;

	/* Workers that died with torchrun are zombies of ours until reaped: not alive. */
	reap(-1, &st, &dummy);
	if (killpg(pgid, 0) < 0)
		return;
	notify(o, "worker processes outlived torchrun: sending SIGTERM to process group %d", (int)pgid);
	killpg(pgid, SIGTERM);
	deadline = ll_now_s() + 5.0;
	while (ll_now_s() < deadline) {
		reap(-1, &st, &dummy);
		if (killpg(pgid, 0) < 0)
			return;
		usleep(10000);
	}
	notify(o, "process group %d still alive 5 s after SIGTERM: sending SIGKILL", (int)pgid);
	killpg(pgid, SIGKILL);
	deadline = ll_now_s() + 5.0;
	while (ll_now_s() < deadline && killpg(pgid, 0) == 0) {
		reap(-1, &st, &dummy);
		usleep(10000);
	}
}

/* Milliseconds until `deadline` (0 when past), or -1 for no deadline. */
static int ms_until(double deadline)
{
	double left;

	if (deadline <= 0)
		return -1;
	left = deadline - ll_now_s();
	return left <= 0 ? 0 : (int)(left * 1000) + 1;
}

static int min_timeout(int a, int b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

int ll_supervise(char *const argv[], char *const envp[], const struct ll_supervise_options *o,
		 int *ret_status, struct ll_error *err)
{
	sigset_t wait_mask, old_mask;
	struct sigaction dfl = { .sa_handler = SIG_DFL }, old_chld;
	double grace = o && o->grace_s > 0 ? o->grace_s : 15.0, deadline = 0, next_watch = 0, watch_grace = 0;
	int stop_signal = 0, child_status = 0, sfd = -1, r;
	bool child_done = false, killed = false, watch_stopped = false;
	bool watching = o && o->watch;
	int interval = watching && o->watch_interval_ms > 0 ? o->watch_interval_ms : 1000;
	pid_t pid;

	sigemptyset(&wait_mask);
	sigaddset(&wait_mask, SIGCHLD);
	for (size_t i = 0; i < LL_ARRAY_SIZE(forwarded_signals); i++) {
		struct sigaction sa;

		/* A signal the caller ignores (nohup's SIGHUP) stays ignored: the job
		 * inherits that and we do not forward it. */
		if (sigaction(forwarded_signals[i], NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			continue;
		sigaddset(&wait_mask, forwarded_signals[i]);
	}
	/* An inherited SIG_IGN for SIGCHLD would make the kernel reap the child for us. */
	sigaction(SIGCHLD, &dfl, &old_chld);
	sigprocmask(SIG_BLOCK, &wait_mask, &old_mask);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* A signalfd lets one poll() wait for signals, the watcher's descriptor and the
	 * escalation deadline together. */
	sfd = signalfd(-1, &wait_mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		r = ll_error_set(err, -errno, "cannot supervise '%s': signalfd: %s", argv[0], strerror(errno));
		goto out;
	}

	/* die_with_parent: if llmlaunch itself is killed (SIGKILL, the OOM killer),
	 * nothing here runs to stop the job, so the kernel does: torchrun gets SIGKILL
	 * (PR_SET_PDEATHSIG, checked against a parent that died before it was set), and
	 * each `llmlaunch __worker` dies with torchrun the same way, its interpreter with
	 * it. The job never outlives its launcher; its directory goes at the next start. */
	pid = ll_spawn(argv,
		       &(struct ll_spawn_options){
			       .envp = envp, .mask = &old_mask, .new_group = true, .die_with_parent = true },
		       err);
	if (pid < 0) {
		r = pid;
		goto out;
	}
	next_watch = ll_now_s() + interval / 1000.0;

	while (!child_done) {
		struct pollfd pfd[2] = { { .fd = sfd, .events = POLLIN }, { .fd = -1, .events = POLLIN } };
		int timeout = ms_until(deadline), n;

		if (watching) {
			pfd[1].fd = o->watch_fd;
			timeout = min_timeout(timeout, ms_until(next_watch));
		}
		n = poll(pfd, watching && o->watch_fd >= 0 ? 2 : 1, timeout);
		if (n < 0 && errno != EINTR) {
			r = ll_error_set(err, -errno, "cannot supervise '%s': poll: %s", argv[0], strerror(errno));
			killpg(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			goto out;
		}

		if (n > 0 && (pfd[0].revents & POLLIN)) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				int sig = (int)si.ssi_signo;

				if (sig == SIGCHLD) {
					reap(pid, &child_status, &child_done);
					continue;
				}
				killpg(pid, sig);
				if (!is_stop_signal(sig))
					continue;
				if (stop_signal && !killed) {
					notify(o, "second stop request (%s): sending SIGKILL", signal_name(sig));
					killpg(pid, SIGKILL);
					killed = true;
					deadline = 0;
				} else if (!stop_signal) {
					stop_signal = sig;
					note_stop(o);
					if (!deadline && !killed)
						deadline = ll_now_s() + grace;
					notify(o, "%s: forwarded to the job; SIGKILL in %g s if it has not ended",
					       signal_name(sig), grace);
				}
			}
		}
		if (child_done)
			break;

		if (watching && (ll_now_s() >= next_watch || (n > 0 && (pfd[1].revents & POLLIN)))) {
			next_watch = ll_now_s() + interval / 1000.0;
			int w = !watch_stopped && !stop_signal ? o->watch(o->watch_data) : 0;

			if (w >= LL_WATCH_STOP) {
				double g = w == LL_WATCH_STOP_NOW ? LL_SUPERVISE_STOP_GRACE_S : grace;

				watch_stopped = true;
				watch_grace = g;
				note_stop(o);
				killpg(pid, SIGTERM);
				deadline = ll_now_s() + g;
				notify(o, "stopping the job: SIGTERM sent, SIGKILL in %g s if it has not ended", g);
			}
		}

		if (deadline > 0 && ll_now_s() >= deadline && !killed) {
			notify(o, "the job did not end %g s after %s: sending SIGKILL",
			       watch_stopped && watch_grace > 0 ? watch_grace : grace,
			       watch_stopped ? "SIGTERM" : signal_name(stop_signal));
			killpg(pid, SIGKILL);
			killed = true;
			deadline = 0;
		}
	}

	sweep_group(pid, o);
	if (watch_stopped)
		*ret_status = 1;
	else if (WIFEXITED(child_status) && WEXITSTATUS(child_status) != 0 && stop_signal)
		*ret_status = 128 + stop_signal; /* torchrun turns a signal into a traceback and exit 1 */
	else
		*ret_status = ll_exit_status(child_status);
	r = 0;

out:
	if (sfd >= 0)
		close(sfd);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	{
		/* Drop signals that arrived after the child ended, so unblocking does not
		 * deliver a late SIGUSR1 (default action: terminate) to us. */
		struct timespec zero = { 0 };
		while (sigtimedwait(&wait_mask, NULL, &zero) > 0)
			;
	}
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	sigaction(SIGCHLD, &old_chld, NULL);
	return r;
}
