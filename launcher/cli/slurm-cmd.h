/* Between the two files of `llmlaunch slurm` (cmd-slurm.c, cmd-slurm-task-prolog.c). */
#ifndef LLMLAUNCH_SLURM_CMD_H
#define LLMLAUNCH_SLURM_CMD_H

#include "llmlaunch/cli.h"

/* `llmlaunch slurm task-prolog ARGS`; argv[0] is "task-prolog". */
int ll_cmd_slurm_task_prolog(int argc, char **argv, struct ll_ctx *ctx);

#endif
