/* `llmlaunch __worker`: the entry torchrun runs (with --no_python) for every local
 * rank. It looks the rank's placement up by LOCAL_RANK, binds CPUs and memory, and
 * starts the interpreter, so the binding is in place before Python allocates anything.
 *
 * Under a supervising llmlaunch (LLMLAUNCH_STATUS_DIR set) the worker stays as the
 * interpreter's parent: torchrun turns any worker failure into its own exit status 1,
 * so the worker records the real status for llmlaunch, forwards signals, and ends
 * the same way the interpreter did. Without it (--exec) the worker simply execs. */

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "llmlaunch/cli.h"
#include "llmlaunch/launch.h"

/* Run argv as a child, forward signals to it, record how it ended, and end the same
 * way. Never returns. */
static void __attribute__((noreturn)) run_and_record(char **argv, const char *status_dir, int local_rank)
{
	static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	const char *rc = getenv("TORCHELASTIC_RESTART_COUNT");
	sigset_t mask, old;
	struct ll_error err = { 0 };
	int st = 0, attempt = rc ? atoi(rc) : 0;
	pid_t pid, parent = getpid();

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	for (size_t i = 0; i < LL_ARRAY_SIZE(forwarded); i++)
		sigaddset(&mask, forwarded[i]);
	sigprocmask(SIG_BLOCK, &mask, &old);
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
		sigprocmask(SIG_SETMASK, &old, NULL);
		execvp(argv[0], argv);
		ll_errorf("cannot run '%s': %s", argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	for (;;) {
		siginfo_t info;
		int sig = sigwaitinfo(&mask, &info);

		if (sig == SIGCHLD) {
			if (waitpid(pid, &st, WNOHANG) == pid)
				break;
		} else if (sig > 0) {
			kill(pid, sig);
		}
	}
	if (ll_worker_status_write(status_dir, local_rank, attempt, st, &err) < 0) {
		ll_report(&err);
		ll_error_clear(&err);
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
