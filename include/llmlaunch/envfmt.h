/* Environment variables written for their consumers: POSIX shells, fish, dotenv
 * files, JSON and Slurm's TaskProlog. Each format quotes so that the consumer reads
 * back exactly the bytes of the value; a value a format cannot carry (a newline in a
 * TaskProlog line) is an error, never altered. docs/planner.md describes the dialects. */
#ifndef LLMLAUNCH_ENVFMT_H
#define LLMLAUNCH_ENVFMT_H

#include <stddef.h>
#include "llmlaunch/plan.h"
#include "llmlaunch/util.h"

enum ll_env_format {
	LL_ENV_SH = 0,  /* export NAME='value'   (bash, dash, zsh, ksh) */
	LL_ENV_FISH,    /* set -gx NAME 'value' */
	LL_ENV_DOTENV,  /* NAME='value'          (python-dotenv dialect) */
	LL_ENV_JSON,    /* {"NAME": "value", ...} */
	LL_ENV_SLURM,   /* export NAME=value     (TaskProlog: literal to end of line) */
};
const char *ll_env_format_name(enum ll_env_format f);
int ll_env_format_parse(const char *s, enum ll_env_format *ret); /* 0 or -EINVAL */

struct ll_envvar {
	const char *name;
	const char *value;
};

/* Append `value` quoted for `fmt` (not JSON: use ll_env_write). -EINVAL with a message
 * naming `name` when the format cannot carry the value. */
int ll_env_quote(enum ll_env_format fmt, const char *name, const char *value, struct ll_buf *out,
		 struct ll_error *err);

/* Append the whole document: one line per variable (JSON: one object, names in the
 * given order). Names must be [A-Za-z_][A-Za-z0-9_]*. Nothing is appended on error. */
int ll_env_write(enum ll_env_format fmt, const struct ll_envvar *vars, size_t n, struct ll_buf *out,
		 struct ll_error *err);

/* The exported settings of a plan that have a value, in plan order. */
int ll_env_write_plan(enum ll_env_format fmt, const struct ll_plan *plan, struct ll_buf *out, struct ll_error *err);

#endif
