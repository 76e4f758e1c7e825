/* PLACEHOLDER: replaced by the real command. */
#include "llmlaunch/cli.h"

int cmd_run(int argc, char **argv, struct ll_ctx *ctx)
{
	(void)argc;
	(void)argv;
	(void)ctx;
	ll_errorf("'run' is not built yet");
	return LL_EXIT_FAILURE;
}
