/* PLACEHOLDER: replaced by the real command. */
#include "llmlaunch/cli.h"

int cmd_explain(int argc, char **argv, struct ll_ctx *ctx)
{
	(void)argc;
	(void)argv;
	(void)ctx;
	ll_errorf("'explain' is not built yet");
	return LL_EXIT_FAILURE;
}
