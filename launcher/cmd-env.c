/* PLACEHOLDER: replaced by the real command. */
#include "llmlaunch/cli.h"

int cmd_env(int argc, char **argv, struct ll_ctx *ctx)
{
	(void)argc;
	(void)argv;
	(void)ctx;
	ll_errorf("'env' is not built yet");
	return LL_EXIT_FAILURE;
}
