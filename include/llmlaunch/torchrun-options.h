/* torch.distributed.run's options, listed once: `run` parses the user's torchrun
 * flags with it, the launch builds torchrun's command line with it, and profiles
 * validate their `torchrun:` section with it (docs/profiles.md). */
#ifndef LLMLAUNCH_TORCHRUN_OPTIONS_H
#define LLMLAUNCH_TORCHRUN_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

/* What a profile may give as the option's value; NONE: not settable by a profile
 * (it decides the rendezvous or the command itself, which llmlaunch owns). */
enum ll_torchrun_value {
	LL_TORCHRUN_NONE = 0,
	LL_TORCHRUN_STRING,
	LL_TORCHRUN_UINT,
	LL_TORCHRUN_NUMBER,
	LL_TORCHRUN_ENUM,           /* one of `choices` */
	LL_TORCHRUN_PORT,           /* 1-65535 */
	LL_TORCHRUN_NPROC,          /* a count, or auto|gpu|cpu */
};

/* One option of torch.distributed.run, spelled with underscores as torch 1.13's
 * argparse requires (newer torch accepts both). */
struct ll_torchrun_option {
	const char *name;           /* "nproc_per_node" */
	char short_name;            /* 'r' for --redirects, 0 if none */
	bool has_arg;
	enum ll_torchrun_value profile; /* what a profile may set; NONE: nothing */
	const char *choices;        /* LL_TORCHRUN_ENUM: '|'-separated */
};

/* The known options (torch 1.13, and a few from newer torch so that they pass
 * through rather than being refused), ending with a { NULL } entry. */
extern const struct ll_torchrun_option ll_torchrun_options[];
/* How many, the { NULL } end not counted. */
size_t ll_torchrun_n_options(void);

/* Look an option up by its long name without the leading dashes, with dashes or
 * underscores ("nproc-per-node" and "nproc_per_node" both match). NULL if unknown. */
const struct ll_torchrun_option *ll_torchrun_option_find(const char *name);

/* The names a profile's `torchrun:` section may hold, in table order (static). */
const char *const *ll_torchrun_profile_keys(size_t *ret_n);

/* Workers per node: far more than any node has GPUs or cores to give them. */
#define LL_TORCHRUN_MAX_NPROC 4096

/* Is `value` one option `o` takes, by its value kind (`profile`)? NULL when it is
 * (always for STRING and NONE), else what it takes, malloc'ed: "a port number
 * (1-65535)", "auto, gpu, cpu or a positive integer up to 4096", "one of c10d|...".
 * Profiles, `run`'s own torchrun flags and --set torchrun.NAME all check this. */
char *ll_torchrun_value_check(const struct ll_torchrun_option *o, const char *value);

#endif
