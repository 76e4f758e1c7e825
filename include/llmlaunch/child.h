/* Child processes with deadlines. Every wait on a child is bounded: a child that
 * outlives its deadline is killed (SIGKILL) and reaped, never left behind, so a
 * Prolog, a torch check or an scontrol call cannot hang llmlaunch. No shell is
 * involved anywhere: argv arrays and execve. */
#ifndef LLMLAUNCH_CHILD_H
#define LLMLAUNCH_CHILD_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>
#include "llmlaunch/util.h"

/* A wait status as a shell reports it: the exit code, 128+N for signal N, and 1
 * (failure) for anything else (a stopped child is not an ended one). */
int ll_exit_status(int wstatus);

enum ll_spawn_stdio {
	LL_STDIO_INHERIT = 0,
	LL_STDIO_QUIET,             /* stdout and stderr on /dev/null */
	LL_STDIO_NO_STDOUT,         /* stdin and stdout on /dev/null, stderr inherited */
};

struct ll_spawn_options {
	char *const *envp;          /* NULL: the caller's environment */
	enum ll_spawn_stdio stdio;
	bool new_group;             /* the child leads a process group of its own */
	bool die_with_parent;       /* PR_SET_PDEATHSIG: killed when llmlaunch dies */
	const sigset_t *mask;       /* signal mask for the child; NULL: the caller's */
	int output_fd;              /* > 2: stdout and stderr on it, stdin on /dev/null (stdio ignored) */
};

/* fork + exec argv[0] (a path: no PATH search). An exec failure is reported
 * through a close-on-exec pipe as "cannot run 'X': why" with its errno, instead of
 * a mysterious status 127. Returns the pid, or -errno (err set). */
pid_t ll_spawn(char *const argv[], const struct ll_spawn_options *o, struct ll_error *err);

/* Reap `pid`, waiting at most timeout_s; then SIGKILL and reap. `what` names the
 * child in messages. 0 with *ret_status (ll_exit_status), -ETIMEDOUT after the
 * kill, or another -errno. */
int ll_child_wait(pid_t pid, const char *what, double timeout_s, int *ret_status, struct ll_error *err);

/* Kill (SIGKILL) and reap a child that is no longer wanted. */
void ll_child_kill(pid_t pid);

/* Work done in a child process; writes its result on `fd` and returns the child's
 * exit status. */
typedef int (*ll_child_fn)(void *data, int fd);

/* Run fn in a forked child that dies with its parent. Everything it writes on its
 * fd (at most 64 KiB) is returned in *ret_output (malloc'ed) with its exit status
 * in *ret_status (ll_exit_status). -ETIMEDOUT when it did not finish within
 * timeout_s: it is then killed and reaped, and *ret_output holds what it wrote so
 * far. Other -errno when it could not be started. */
int ll_run_bounded(ll_child_fn fn, void *data, double timeout_s, char **ret_output, int *ret_status,
		   struct ll_error *err);

/* Run argv[0] (an absolute path) with stdin and stdout on /dev/null and stderr
 * inherited, dying with its parent, waiting at most timeout_s. Returns its exit
 * status (>= 0), -ETIMEDOUT, or -errno when it could not run (err set). */
int ll_spawn_bounded(char *const argv[], double timeout_s, struct ll_error *err);

/* Run argv[0] with stdout and stderr on /dev/null, waiting at most timeout_s. */
int ll_run_quiet(char *const argv[], double timeout_s, int *ret_status, struct ll_error *err);

#endif
