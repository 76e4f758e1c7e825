/* Native stacks of the ranks of a hung job. faulthandler shows where the Python code
 * waits; a rank blocked inside a C++ call (an NCCL kernel that never completes, a
 * store read, a CUDA synchronise) shows the same Python frame on every rank, and only
 * the native frames below it tell them apart. Neither tool ships with llmlaunch: it
 * uses py-spy (Python and native frames in one dump) or gdb where one is installed,
 * on every rank at once, each with a deadline, and says which it used. */
#include "llmlaunch/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llmlaunch/child.h"
#include "llmlaunch/clock.h"
#include "llmlaunch/paths.h"

/* argv for one rank's dump; tool[0] is replaced by the program's path. */
static char **native_argv(const char *tool, const char *path, const char *pid)
{
	if (strcmp(tool, "py-spy") == 0) {
		const char *v[] = { path, "dump", "--native", "--pid", pid, NULL };
		char **argv = ll_calloc(LL_ARRAY_SIZE(v), sizeof(char *));
		for (size_t i = 0; v[i]; i++)
			argv[i] = ll_strdup(v[i]);
		return argv;
	} else {
		/* Batch mode with no init files, auto-loaded scripts or debuginfod downloads:
		 * a hung job is no time to fetch symbols from the network. Symbols only of
		 * the libraries a rank waits in (the C library, Python, NCCL, CUDA, gloo):
		 * reading libtorch's took 8 s of a loaded 2-core machine against 2 s
		 * without; its frames still name the library. */
		const char *v[] = { path,
				    "--batch",
				    "-nx",
				    "-iex",
				    "set auto-load off",
				    "-iex",
				    "set debuginfod enabled off",
				    "-iex",
				    "set auto-solib-add off",
				    "-p",
				    pid,
				    "-ex",
				    "sharedlibrary libc\\.so|libpthread|libpython|libstdc|libnccl|libcuda|libgloo",
				    "-ex",
				    "thread apply all bt",
				    NULL };
		char **argv = ll_calloc(LL_ARRAY_SIZE(v), sizeof(char *));
		for (size_t i = 0; v[i]; i++)
			argv[i] = ll_strdup(v[i]);
		return argv;
	}
}

static void argv_free(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

const char *ll_native_stack_tool(char **ret_path)
{
	static const char *const tools[] = { "py-spy", "gdb" };

	for (size_t i = 0; i < LL_ARRAY_SIZE(tools); i++) {
		*ret_path = ll_find_program(tools[i]);
		if (*ret_path)
			return tools[i];
	}
	return NULL;
}

size_t ll_native_stacks(const struct ll_native_target *t, size_t n, const char *dir, double timeout_s,
			const char **ret_tool)
{
	_cleanup_free_ char *path = NULL;
	const char *tool = ll_native_stack_tool(&path);
	pid_t *pids;
	int *fds;
	sigset_t none;
	size_t written = 0;
	double deadline = ll_now_s() + timeout_s;

	*ret_tool = tool;
	if (!tool || n == 0)
		return 0;
	sigemptyset(&none);
	pids = ll_calloc(n, sizeof(pid_t));
	fds = ll_calloc(n, sizeof(int));
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *file = ll_asprintf("%s/rank-%d.native.txt", dir, t[i].rank);
		_cleanup_free_ char *pid = ll_asprintf("%d", (int)t[i].pid);
		char **argv = native_argv(tool, path, pid);
		/* The supervisor blocks SIGCHLD (it reads it from a signalfd): gdb waits for
		 * its tracee's stops with that signal and would wait forever. */
		struct ll_spawn_options o = { .die_with_parent = true, .mask = &none };

		fds[i] = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
		if (fds[i] > STDERR_FILENO) {
			o.output_fd = fds[i];
			pids[i] = ll_spawn(argv, &o, NULL);
		}
		argv_free(argv);
	}
	/* All at once: gdb takes seconds per process where torch's libraries are loaded.
	 * A dump that did not end well says why at its end. */
	for (size_t i = 0; i < n; i++) {
		struct ll_error err = { 0 };
		int status = 0, r;
		double left = deadline - ll_now_s();

		if (pids[i] <= 0)
			continue;
		r = ll_child_wait(pids[i], tool, left > 0 ? left : 0, &status, &err);
		if (r == 0 && status == 0)
			written++;
		else if (r == 0)
			dprintf(fds[i], "\nllmlaunch: %s ended with status %d\n", tool, status);
		else
			dprintf(fds[i], "\nllmlaunch: %s\n", err.message ? err.message : "no dump");
		ll_error_clear(&err);
	}
	/* A debugger killed at its deadline can leave the rank in the stop its attach
	 * sent (SIGSTOP): under --on-hang dump the job must go on as it was. */
	for (size_t i = 0; i < n; i++) {
		if (pids[i] > 0)
			kill(t[i].pid, SIGCONT);
		if (fds[i] >= 0)
			close(fds[i]);
	}
	free(fds);
	free(pids);
	return written;
}
