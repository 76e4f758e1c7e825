/* llmlaunch: probe a GPU node, plan NCCL and torchrun settings, agree across nodes,
 * launch. Global options and dispatch; the command table (launcher/cli/commands.c) is the
 * whole CLI surface, and each command lives in launcher/cli/cmd-NAME.c. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

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

/* A command's result as the process's exit status. Standard output is checked here,
 * once for every command: data that did not reach it (a full disk, a closed pipe,
 * `--help >/dev/full`) is a failure with one message, whatever the command did. */
static int exit_status(int r)
{
	int status = r < 0 ? LL_EXIT_FAILURE : r;

	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		ll_errorf("cannot write to standard output: %s", strerror(errno ? errno : EIO));
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
