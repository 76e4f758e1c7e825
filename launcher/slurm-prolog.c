/* What the Slurm Prolog needs besides the health check: the state directory it
 * shares with the TaskProlog, and child processes with deadlines. A Prolog that
 * hangs holds the job (and, after PrologEpilogTimeout, drains the node for a fault
 * that is ours), so every wait here is bounded and every child is killed and reaped. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "llmlaunch/probe.h"
#include "llmlaunch/slurm.h"

#define CHILD_OUTPUT_MAX (64 * 1024)

char *ll_slurm_snapshot_path(const char *state_dir)
{
	return ll_asprintf("%s/%s", state_dir, LL_SLURM_SNAPSHOT_NAME);
}

int ll_slurm_save_snapshot(hwloc_topology_t topo, const char *state_dir, char **ret_path, struct ll_error *err)
{
	_cleanup_free_ char *path = ll_slurm_snapshot_path(state_dir);
	int r;

	/* Users read the snapshot from their TaskProlog: the directory must be searchable,
	 * whatever umask slurmd gave its Prolog (an existing directory is the admin's). */
	if (mkdir(state_dir, 0755) == 0) {
		if (chmod(state_dir, 0755) < 0) {
			r = -errno;
			return ll_error_set(err, r, "cannot make state directory '%s' readable: %s", state_dir,
					    strerror(-r));
		}
	} else if (errno != EEXIST) {
		r = -errno;
		ll_error_set(err, r, "cannot create state directory '%s': %s", state_dir, strerror(-r));
		ll_error_hint(err, "create its parent or pass --state-dir DIR");
		return r;
	}
	/* ll_probe_save writes a temporary file next to the target, 0644, then renames it. */
	r = ll_probe_save(topo, path, err);
	if (r < 0)
		return r;
	if (ret_path)
		*ret_path = LL_TAKE(path);
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int exit_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 255;
}

/* Reap `pid`, waiting at most until `deadline`; then SIGKILL and reap for sure.
 * Returns the exit status, or -ETIMEDOUT when it had to be killed. */
static int reap_until(pid_t pid, double deadline)
{
	int wstatus;
	pid_t w;

	for (;;) {
		w = waitpid(pid, &wstatus, WNOHANG);
		if (w == pid)
			return exit_status(wstatus);
		if (w < 0 && errno != EINTR)
			return -errno;
		if (now_s() >= deadline)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 2 * 1000 * 1000 }, NULL);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
		;
	return -ETIMEDOUT;
}

int ll_run_bounded(ll_child_fn fn, void *data, double timeout_s, char **ret_output, int *ret_status,
		   struct ll_error *err)
{
	double deadline = now_s() + timeout_s;
	struct ll_buf out;
	int fds[2], r = 0, status;
	bool eof = false;
	pid_t pid, parent = getpid();

	if (pipe2(fds, O_CLOEXEC) < 0)
		return ll_error_set(err, -errno, "cannot create a pipe: %s", strerror(errno));
	fflush(NULL); /* buffered output must not be written twice */
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
	while (!eof) {
		double left = deadline - now_s();
		struct pollfd p = { .fd = fds[0], .events = POLLIN };
		char buf[4096];
		ssize_t n;
		int k;

		if (left <= 0) {
			r = -ETIMEDOUT;
			break;
		}
		k = poll(&p, 1, (int)(left * 1000) + 1);
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
		if (n <= 0) {
			eof = true;
			break;
		}
		/* Keep reading past the cap so the child never blocks on a full pipe. */
		if (out.len < CHILD_OUTPUT_MAX)
			ll_buf_addn(&out, buf, (size_t)n < CHILD_OUTPUT_MAX - out.len ? (size_t)n : CHILD_OUTPUT_MAX - out.len);
	}
	close(fds[0]);
	/* EOF comes as the child exits; give it a moment to be reaped, no more. */
	status = reap_until(pid, r == 0 ? deadline + 1.0 : 0);
	if (r == 0 && status < 0)
		r = status;
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
	pid_t pid;
	int r, devnull;

	if (!argv[0] || argv[0][0] != '/')
		return ll_error_set(err, -EINVAL, "'%s' is not an absolute path", argv[0] ? argv[0] : "");
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return ll_error_set(err, -errno, "cannot fork: %s", strerror(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0) {
			dup2(devnull, STDIN_FILENO);
			dup2(devnull, STDOUT_FILENO);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	r = reap_until(pid, now_s() + timeout_s);
	if (r == -ETIMEDOUT)
		return ll_error_set(err, r, "'%s' did not finish within %g s and was killed", argv[0], timeout_s);
	if (r < 0)
		return ll_error_set(err, r, "waiting for '%s' failed: %s", argv[0], strerror(-r));
	if (r == 127)
		return ll_error_set(err, -ENOEXEC, "cannot run '%s'", argv[0]);
	return r;
}

static bool executable(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

char *ll_slurm_find_scontrol(const char *hint)
{
	static const char *const fallback[] = { "/usr/bin/scontrol", "/usr/local/bin/scontrol", "/opt/slurm/bin/scontrol" };
	const char *path = getenv("PATH");

	if (hint)
		return executable(hint) ? ll_strdup(hint) : NULL;
	if (path && *path) {
		_cleanup_free_ char *copy = ll_strdup(path);
		char *save = NULL;

		for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
			_cleanup_free_ char *p = NULL;

			if (*d != '/')
				continue; /* a relative PATH entry means the Prolog's cwd: never trusted as root */
			p = ll_asprintf("%s/scontrol", d);
			if (executable(p))
				return LL_TAKE(p);
		}
	}
	for (size_t i = 0; i < LL_ARRAY_SIZE(fallback); i++)
		if (executable(fallback[i]))
			return ll_strdup(fallback[i]);
	return NULL;
}

int ll_slurm_drain(const char *scontrol, const char *node, const char *reason, double timeout_s,
		   struct ll_error *err)
{
	_cleanup_free_ char *nodearg = ll_asprintf("NodeName=%s", node);
	_cleanup_free_ char *reasonarg = ll_asprintf("Reason=%.200s", reason);
	char *argv[] = { (char *)scontrol, "update", nodearg, "State=DRAIN", reasonarg, NULL };
	int r;

	for (char *c = reasonarg; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	r = ll_spawn_bounded(argv, timeout_s, err);
	if (r > 0)
		return ll_error_set(err, -EIO, "'%s update NodeName=%s State=DRAIN' exited with status %d", scontrol,
				    node, r);
	return r;
}
