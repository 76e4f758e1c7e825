/* `llmlaunch __worker`: the entry torchrun runs (with --no_python) for every local
 * rank. It looks the rank's placement up by LOCAL_RANK, binds CPUs and memory, and
 * starts the interpreter, so the binding is in place before Python allocates anything.
 *
 * Under a supervising llmlaunch (LLMLAUNCH_STATUS_DIR set) the worker stays as the
 * interpreter's parent: torchrun turns any worker failure into its own exit status 1,
 * so the worker records the real status for llmlaunch, forwards signals, and ends
 * the same way the interpreter did. Without it (--exec) the worker simply execs.
 *
 * Binding uses the two system calls directly instead of hwloc_set_cpubind and
 * hwloc_set_membind: those need a loaded topology (several ms per worker, see
 * docs/launch.md), while CPU and node numbers in the placement are already the OS
 * indexes the kernel takes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <hwloc.h>
#include <limits.h>
#include <linux/mempolicy.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "llmlaunch/cli.h"
#include "llmlaunch/launch.h"

void ll_worker_placement_release(struct ll_worker_placement *p)
{
	if (!p)
		return;
	free(p->cpus);
	p->cpus = NULL;
}

static int parse_int(const char *s, size_t n, int *ret)
{
	long v = 0;

	if (n == 0 || n > 9)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*ret = (int)v;
	return 0;
}

/* One entry "R[:cpus=LIST][:mem=N]" of length n. */
static int parse_entry(const char *s, size_t n, struct ll_worker_placement *ret)
{
	const char *end = s + n, *p = memchr(s, ':', n);
	struct ll_worker_placement pl = { .mem = -1 };

	if (parse_int(s, (p ? p : end) - s, &pl.local_rank) < 0)
		return -EINVAL;
	while (p && p < end) {
		const char *field = p + 1, *next = memchr(field, ':', end - field);
		size_t len = (next ? next : end) - field;

		if (len > 5 && strncmp(field, "cpus=", 5) == 0 && !pl.cpus) {
			pl.cpus = ll_strndup(field + 5, len - 5);
		} else if (len > 4 && strncmp(field, "mem=", 4) == 0 && pl.mem < 0) {
			if (parse_int(field + 4, len - 4, &pl.mem) < 0)
				goto bad;
		} else {
			goto bad;
		}
		p = next;
	}
	*ret = pl;
	return 0;
bad:
	free(pl.cpus);
	return -EINVAL;
}

int ll_placement_find(const char *spec, int local_rank, struct ll_worker_placement *ret, struct ll_error *err)
{
	const char *p = spec;

	while (*p) {
		const char *semi = strchr(p, ';');
		size_t n = semi ? (size_t)(semi - p) : strlen(p);
		struct ll_worker_placement pl;

		if (parse_entry(p, n, &pl) < 0)
			return ll_error_set(err, -EINVAL, "malformed %s entry '%.*s'", LL_PLACEMENT_ENV, (int)n, p);
		if (pl.local_rank == local_rank) {
			*ret = pl;
			return 0;
		}
		ll_worker_placement_release(&pl);
		p += n + (semi ? 1 : 0);
	}
	return -ENOENT;
}

int ll_placement_apply_cpus(const struct ll_worker_placement *p, struct ll_error *err)
{
	hwloc_bitmap_t set;
	cpu_set_t *mask;
	size_t size;
	int last, r = 0;

	if (!p->cpus)
		return 0;
	set = hwloc_bitmap_alloc();
	if (!set)
		return ll_error_set(err, -ENOMEM, "cannot parse CPU list '%s'", p->cpus);
	if (hwloc_bitmap_list_sscanf(set, p->cpus) < 0 || hwloc_bitmap_iszero(set) ||
	    (last = hwloc_bitmap_last(set)) < 0 || last >= 1 << 20) {
		hwloc_bitmap_free(set);
		return ll_error_set(err, -EINVAL, "cannot bind local rank %d: bad CPU list '%s'", p->local_rank,
				    p->cpus);
	}
	mask = CPU_ALLOC(last + 1);
	size = CPU_ALLOC_SIZE(last + 1);
	CPU_ZERO_S(size, mask);
	for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i))
		CPU_SET_S(i, size, mask);
	if (sched_setaffinity(0, size, mask) < 0)
		r = ll_error_set(err, -errno, "cannot bind local rank %d to CPUs '%s': %s", p->local_rank, p->cpus,
				 strerror(errno));
	CPU_FREE(mask);
	hwloc_bitmap_free(set);
	return r;
}

int ll_placement_apply_mem(const struct ll_worker_placement *p, struct ll_error *err)
{
	enum { MAX_NODES = 1024, BITS = sizeof(unsigned long) * CHAR_BIT };
	unsigned long nodes[MAX_NODES / BITS] = { 0 };

	if (p->mem < 0)
		return 0;
	if (p->mem >= MAX_NODES)
		return ll_error_set(err, -EINVAL, "cannot bind local rank %d to memory of NUMA node %d: beyond %d",
				    p->local_rank, p->mem, MAX_NODES);
	nodes[p->mem / BITS] |= 1UL << (p->mem % BITS);
	/* maxnode counts one more than the bits the kernel reads. */
	if (syscall(SYS_set_mempolicy, MPOL_BIND, nodes, (unsigned long)MAX_NODES + 1) < 0)
		return ll_error_set(err, -errno, "cannot bind local rank %d to memory of NUMA node %d: %s",
				    p->local_rank, p->mem, strerror(errno));
	return 0;
}

/* ---- exit records ---- */

int ll_worker_status_write(const char *dir, int local_rank, int attempt, int wstatus, struct ll_error *err)
{
	struct timespec ts;
	char *path, *tmp, line[96];
	int fd, n, r = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (WIFSIGNALED(wstatus))
		n = snprintf(line, sizeof(line), "signal %d %lld\n", WTERMSIG(wstatus),
			     (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	else
		n = snprintf(line, sizeof(line), "exit %d %lld\n", WEXITSTATUS(wstatus),
			     (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	path = ll_asprintf("%s/rank-%d-attempt-%d", dir, local_rank, attempt);
	tmp = ll_asprintf("%s.tmp", path);
	/* Written aside and renamed: the reader never sees half a record. */
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, line, n) != n || close(fd) < 0 || rename(tmp, path) < 0) {
		r = ll_error_set(err, -errno, "cannot write the exit record '%s': %s", path, strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	free(path);
	return r;
}

int ll_worker_status_collect(const char *dir, int *ret_status, int *ret_rank)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	long long best_time = 0;
	int best_attempt = -1, best_status = 0, best_rank = -1;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char *path, *text = NULL, kind[8];
		int rank, attempt, num;
		long long t;

		if (sscanf(e->d_name, "rank-%d-attempt-%d", &rank, &attempt) != 2 || strstr(e->d_name, ".tmp"))
			continue;
		path = ll_asprintf("%s/%s", dir, e->d_name);
		if (ll_read_file(path, 128, &text) == 0 && sscanf(text, "%7s %d %lld", kind, &num, &t) == 3) {
			bool failed = strcmp(kind, "signal") == 0 || num != 0;
			int status = strcmp(kind, "signal") == 0 ? 128 + num : num;

			/* A newer attempt replaces everything before it; within one
			 * attempt the first failure is the cause, later ones mostly
			 * torchrun stopping the others. */
			if (attempt > best_attempt) {
				best_attempt = attempt;
				best_rank = -1;
			}
			if (attempt == best_attempt && failed && (best_rank < 0 || t < best_time)) {
				best_time = t;
				best_status = status;
				best_rank = rank;
			}
		}
		free(text);
		unlink(path);
		free(path);
	}
	closedir(d);
	if (best_rank < 0)
		return 0;
	*ret_status = best_status;
	*ret_rank = best_rank;
	return 1;
}

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
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
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
			return -EINVAL;
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
		return r == 0 ? (fflush(stdout) == 0 ? LL_EXIT_OK : LL_EXIT_FAILURE) : LL_EXIT_USAGE;

	if (o.cpuset || o.membind) {
		pl.cpus = ll_strdup(o.cpuset);
		if (o.membind && parse_int(o.membind, strlen(o.membind), &pl.mem) < 0) {
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
			if (!lr || parse_int(lr, strlen(lr), &rank) < 0) {
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
			parse_int(lr, strlen(lr), &rank);
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
