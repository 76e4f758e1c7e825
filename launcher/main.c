/* llmlaunch: probe a GPU node, plan NCCL and torchrun settings, agree across nodes,
 * launch. Global options and dispatch; the command table (launcher/cli/commands.c) is the
 * whole CLI surface, and each command lives in launcher/cli/cmd-NAME.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "llmlaunch/cli.h"
#include "llmlaunch/version.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: llmlaunch [OPTIONS] SCRIPT [ARGS...]      (same as 'llmlaunch run')\n"
		"       llmlaunch COMMAND [OPTIONS] [ARGS...]\n"
		"\n"
		"Plans NCCL variables, rank placement and torchrun arguments from what this node\n"
		"(and, under srun --mpi=pmix or mpirun, every node) really has, then launches.\n"
		"\n"
		"Commands:\n");
	for (size_t i = 0; i < ll_n_commands; i++)
		if (ll_commands[i].summary)
			fprintf(f, "  %-10s %s\n", ll_commands[i].name, ll_commands[i].summary);
	fprintf(f,
		"\n"
		"Run 'llmlaunch COMMAND --help' for a command's options. Exit status: 0 success,\n"
		"1 failure, 2 usage error; when launching, the job's own status.\n");
}

static void ctx_release(struct ll_ctx *ctx)
{
	if (ctx->facts)
		ll_facts_free(ctx->facts);
	if (ctx->topo)
		hwloc_topology_destroy(ctx->topo);
	free(ctx->profiles);
}

/* The first error a write to standard output met. stdio keeps only "an error was
 * seen": when a write fails inside printf (past the stream's buffer, 4 KB on
 * /dev/full) and the final flush has nothing left to write, errno no longer says why. */
static int stdout_errno;

static ssize_t stdout_write(void *cookie, const char *buf, size_t n)
{
	size_t done = 0;

	(void)cookie;
	while (done < n) {
		ssize_t w = write(STDOUT_FILENO, buf + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (!stdout_errno)
				stdout_errno = w < 0 ? errno : EIO;
			break; /* a short count: stdio marks the stream failed */
		}
		done += (size_t)w;
	}
	return (ssize_t)done;
}

/* Standard output as a stream over fd 1 that remembers why a write failed, buffered
 * as stdio buffers it (by line on a terminal, in blocks otherwise). Without memory
 * for it stdout stays as it is (a lost cause reads as EIO). */
static void stdout_keep_errors(void)
{
	FILE *f = fopencookie(NULL, "w", (cookie_io_functions_t){ .write = stdout_write });

	if (!f)
		return;
	if (setvbuf(f, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ) != 0) {
		fclose(f);
		return;
	}
	stdout = f;
}

/* A command's result as the process's exit status. Standard output is checked here,
 * once for every command: data that did not reach it (a full disk, a closed pipe,
 * `--help >/dev/full`) is a failure with one message, whatever the command did. */
static int exit_status(int r)
{
	int status = r < 0 ? LL_EXIT_FAILURE : r;

	if (fflush(stdout) != 0 || ferror(stdout)) {
		ll_errorf("cannot write to standard output: %s", strerror(stdout_errno ? stdout_errno : EIO));
		if (status == LL_EXIT_OK)
			status = LL_EXIT_FAILURE;
	}
	return status;
}

int main(int argc, char **argv)
{
	struct ll_ctx ctx = { .argv0 = argv[0] };
	const struct ll_command *cmd;
	int r;

	stdout_keep_errors();
	if (argc < 2) {
		usage(stderr);
		return LL_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return exit_status(LL_EXIT_OK);
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("llmlaunch %s\n", LLMLAUNCH_VERSION);
		return exit_status(LL_EXIT_OK);
	}

	cmd = ll_command_find(ll_commands, ll_n_commands, argv[1]);
	if (cmd)
		r = cmd->fn(argc - 1, argv + 1, &ctx);
	else
		r = cmd_run(argc, argv, &ctx); /* argv[0] stands in for "run" */
	ctx_release(&ctx);
	return exit_status(r);
}
