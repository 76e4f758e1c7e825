/* llmlaunch: probe a GPU node, plan NCCL and torchrun settings, agree across nodes,
 * launch. The command table below is the whole CLI surface; each command lives in
 * launcher/cmd-NAME.c. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "llmlaunch/cli.h"
#include "llmlaunch/version.h"

struct command {
	const char *name;
	ll_cmd_fn fn;
	const char *summary; /* NULL: internal, not listed */
};

/* Alphabetical. A first argument that is no command name is a SCRIPT for `run`. */
static const struct command commands[] = {
	{ "__worker", cmd_worker, NULL },
	{ "env", cmd_env, "print this node's NCCL/torchrun environment (sh, fish, dotenv, json, slurm)" },
	{ "explain", cmd_explain, "show every planned value with its source and reason, then lint" },
	{ "logs", cmd_logs, "read NCCL logs and say which transport really ran" },
	{ "probe", cmd_probe, "detect GPUs, NVLink, RDMA ports, interfaces and PCIe distances" },
	{ "profiles", cmd_profiles, "list, show and validate profiles" },
	{ "run", cmd_run, "launch SCRIPT through torch.distributed.run (the default command)" },
	{ "slurm", cmd_slurm, "Slurm integration: prolog and task-prolog" },
};

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
	for (size_t i = 0; i < LL_ARRAY_SIZE(commands); i++)
		if (commands[i].summary)
			fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f,
		"\n"
		"Run 'llmlaunch COMMAND --help' for a command's options. Exit status: 0 success,\n"
		"1 failure, 2 usage error; when launching, the job's own status.\n");
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < LL_ARRAY_SIZE(commands); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static void ctx_release(struct ll_ctx *ctx)
{
	if (ctx->facts)
		ll_facts_free(ctx->facts);
	if (ctx->topo)
		hwloc_topology_destroy(ctx->topo);
	free(ctx->profiles);
}

int main(int argc, char **argv)
{
	struct ll_ctx ctx = { .argv0 = argv[0] };
	const struct command *cmd;
	int r;

	if (argc < 2) {
		usage(stderr);
		return LL_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return fflush(stdout) == 0 ? LL_EXIT_OK : LL_EXIT_FAILURE;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("llmlaunch %s\n", LLMLAUNCH_VERSION);
		return fflush(stdout) == 0 ? LL_EXIT_OK : LL_EXIT_FAILURE;
	}

	cmd = find_command(argv[1]);
	if (cmd)
		r = cmd->fn(argc - 1, argv + 1, &ctx);
	else
		r = cmd_run(argc, argv, &ctx); /* argv[0] stands in for "run" */
	ctx_release(&ctx);
	return r;
}
