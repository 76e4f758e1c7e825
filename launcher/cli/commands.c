/* The command table: the whole CLI surface. In the library rather than in main.c so
 * that `run` can say "did you mean 'llmlaunch probe'?" for a SCRIPT that is a typo. */
#include <string.h>

#include "llmlaunch/cli.h"

/* Alphabetical. A first argument that is no command name is a SCRIPT for `run`. */
const struct ll_command ll_commands[] = {
	{ "__worker", cmd_worker, NULL },
	{ "check", cmd_check, "preflight: a short collective job that names slow or broken nodes" },
	{ "env", cmd_env, "print this node's NCCL/torchrun environment (sh, fish, dotenv, json, slurm)" },
	{ "explain", cmd_explain, "show every planned value with its source and reason, then lint" },
	{ "logs", cmd_logs, "read NCCL logs and say which transport really ran" },
	{ "probe", cmd_probe, "detect GPUs, NVLink, RDMA ports, interfaces and PCIe distances" },
	{ "profiles", cmd_profiles, "list, show and validate profiles" },
	{ "run", cmd_run, "launch SCRIPT through torch.distributed.run (the default command)" },
	{ "slurm", cmd_slurm, "Slurm integration: prolog and task-prolog" },
};
const size_t ll_n_commands = LL_ARRAY_SIZE(ll_commands);

const struct ll_command *ll_command_find(const struct ll_command *table, size_t n, const char *name)
{
	for (size_t i = 0; name && i < n; i++)
		if (strcmp(table[i].name, name) == 0)
			return &table[i];
	return NULL;
}

int ll_command_dispatch(const char *parent, const struct ll_command *table, size_t n, const char *usage,
			int argc, char **argv, struct ll_ctx *ctx)
{
	const struct ll_command *cmd;

	if (argc < 2) {
		fputs(usage, stderr);
		return LL_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		fputs(usage, stdout);
		return LL_EXIT_OK;
	}
	cmd = ll_command_find(table, n, argv[1]);
	if (cmd)
		return cmd->fn(argc - 1, argv + 1, ctx);
	ll_errorf("%s: unknown subcommand '%s'", parent, argv[1]);
	fputs("hint: one of", stderr);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%s '%s'", i ? "," : "", table[i].name);
	fprintf(stderr, "; see 'llmlaunch %s --help'\n", parent);
	return LL_EXIT_USAGE;
}
