#include "llmlaunch/child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "llmlaunch/clock.h"

#define CHILD_OUTPUT_MAX (64 * 1024)

int ll_exit_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 1;
}

static void child_stdio(enum ll_spawn_stdio stdio)
{
	int fd;

	if (stdio == LL_STDIO_INHERIT)
		return;
	fd = open("/dev/null", O_RDWR);
	if (fd < 0)
		return;
	if (stdio == LL_STDIO_QUIET) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
	} else {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
	}
	if (fd > STDERR_FILENO)
		close(fd);
}

pid_t ll_spawn(char *const argv[], const struct ll_spawn_options *o, struct ll_error *err)
{
	static const struct ll_spawn_options defaults = { 0 };
	pid_t pid, parent = getpid();
	int pfd[2], e = 0;
	ssize_t n;

	if (!o)
		o = &defaults;
	if (!argv[0] || !*argv[0])
		return ll_error_set(err, -EINVAL, "cannot run an empty command");
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return ll_error_set(err, -errno, "cannot run '%s': pipe: %s", argv[0], strerror(errno));
	fflush(NULL); /* buffered output must not be written twice */
	pid = fork();
	if (pid < 0) {
		e = errno;
		close(pfd[0]);
		close(pfd[1]);
		return ll_error_set(err, -e, "cannot run '%s': fork: %s", argv[0], strerror(e));
	}
	if (pid == 0) {
		if (o->die_with_parent) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(127);
		}
		if (o->new_group)
			setpgid(0, 0);
		if (o->output_fd > STDERR_FILENO) {
			child_stdio(LL_STDIO_NO_STDOUT);
			dup2(o->output_fd, STDOUT_FILENO);
			dup2(o->output_fd, STDERR_FILENO);
		} else {
			child_stdio(o->stdio);
		}
		if (o->mask)
			sigprocmask(SIG_SETMASK, o->mask, NULL);
		if (o->envp)
			execve(argv[0], argv, o->envp);
		else
			execv(argv[0], argv);
		e = errno;
		if (write(pfd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	/* Both sides set the group, so signals sent right after fork reach it. */
	if (o->new_group)
		setpgid(pid, pid);
	close(pfd[1]);
	do
		n = read(pfd[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(pfd[0]);
	if (n == (ssize_t)sizeof(e)) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return ll_error_set(err, -e, "cannot run '%s': %s", argv[0], strerror(e));
	}
	return pid;
}

void ll_child_kill(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

int ll_child_wait(pid_t pid, const char *what, double timeout_s, int *ret_status, struct ll_error *err)
{
	double deadline = ll_now_s() + timeout_s;
	int st, pidfd;
	pid_t p;

	/* A pidfd lets poll() wait with a timeout and no signal handling; without one
	 * (old kernels), a short sleep between checks. */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	for (;;) {
		p = waitpid(pid, &st, WNOHANG);
		if (p == pid)
			break;
		if (p < 0 && errno != EINTR) {
			int e = errno;
			if (pidfd >= 0)
				close(pidfd);
			return ll_error_set(err, -e, "cannot wait for '%s': %s", what, strerror(e));
		}
		if (ll_now_s() >= deadline) {
			if (pidfd >= 0)
				close(pidfd);
			ll_child_kill(pid);
			return ll_error_set(err, -ETIMEDOUT, "'%s' did not finish within %g s and was killed", what,
					    timeout_s);
		}
		if (pidfd >= 0) {
			struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
			poll(&pfd, 1, ll_poll_ms_until(deadline));
		} else {
			nanosleep(&(struct timespec){ .tv_nsec = 2 * 1000 * 1000 }, NULL);
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	*ret_status = ll_exit_status(st);
	return 0;
}

int ll_run_bounded(ll_child_fn fn, void *data, double timeout_s, char **ret_output, int *ret_status,
		   struct ll_error *err)
{
	double deadline = ll_now_s() + timeout_s;
	struct ll_buf out;
	int fds[2], r = 0, status = 0;
	pid_t pid, parent = getpid();

	if (pipe2(fds, O_CLOEXEC) < 0)
		return ll_error_set(err, -errno, "cannot create a pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(fds[0]);
		close(fds[1]);
		return ll_error_set(err, r, "cannot fork: %s", strerror(-r));
	}
	if (pid == 0) {
		/* If the parent is killed (Slurm's own timeout), do not live on. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		close(fds[0]);
		status = fn(data, fds[1]);
		/* _exit: the parent's atexit handlers and stdio buffers are not ours to run. */
		_exit(status & 0xff);
	}
	close(fds[1]);
	ll_buf_init(&out);
	for (;;) {
		struct pollfd p = { .fd = fds[0], .events = POLLIN };
		char buf[4096];
		ssize_t n;
		int k;

		if (ll_now_s() >= deadline) {
			r = -ETIMEDOUT;
			break;
		}
		k = poll(&p, 1, ll_poll_ms_until(deadline));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r = -errno;
			break;
		}
		if (k == 0)
			continue;
		n = read(fds[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		/* Keep reading past the cap so the child never blocks on a full pipe. */
		if (out.len < CHILD_OUTPUT_MAX)
			ll_buf_addn(&out, buf, (size_t)n < CHILD_OUTPUT_MAX - out.len ? (size_t)n : CHILD_OUTPUT_MAX - out.len);
	}
	close(fds[0]);
	if (r == 0) {
		/* EOF comes as the child exits; give it a moment to be reaped, no more. */
		r = ll_child_wait(pid, "the child", deadline + 1.0 - ll_now_s(), &status, NULL);
	} else {
		ll_child_kill(pid);
	}
	*ret_output = ll_buf_detach(&out);
	ll_buf_release(&out);
	if (r == -ETIMEDOUT)
		return ll_error_set(err, r, "did not finish within %g s and was killed", timeout_s);
	if (r < 0)
		return ll_error_set(err, r, "waiting for the child failed: %s", strerror(-r));
	*ret_status = status;
	return 0;
}

int ll_spawn_bounded(char *const argv[], double timeout_s, struct ll_error *err)
{
	const struct ll_spawn_options o = { .stdio = LL_STDIO_NO_STDOUT, .die_with_parent = true };
	int status, r;
	pid_t pid;

	if (!argv[0] || argv[0][0] != '/')
		return ll_error_set(err, -EINVAL, "'%s' is not an absolute path", argv[0] ? argv[0] : "");
	pid = ll_spawn(argv, &o, err);
	if (pid < 0)
		return pid;
	r = ll_child_wait(pid, argv[0], timeout_s, &status, err);
	return r < 0 ? r : status;
}

int ll_run_quiet(char *const argv[], double timeout_s, int *ret_status, struct ll_error *err)
{
	const struct ll_spawn_options o = { .stdio = LL_STDIO_QUIET };
	pid_t pid = ll_spawn(argv, &o, err);

	if (pid < 0)
		return pid;
	return ll_child_wait(pid, argv[0], timeout_s, ret_status, err);
}
