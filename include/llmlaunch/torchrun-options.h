/* torch.distributed.run's options, listed once: `run` parses the user's torchrun
 * flags with it, the planner checks who may set each one and its value with it, the
 * launch writes torchrun's command line in its order, and profiles validate their
 * `torchrun:` section with it (docs/profiles.md, docs/security.md). */
#ifndef LLMLAUNCH_TORCHRUN_OPTIONS_H
#define LLMLAUNCH_TORCHRUN_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

/* The value an option takes, as torch/distributed/run.py parses and then uses it: a
 * value of the wrong kind is our usage error, never torchrun's traceback. */
enum ll_torchrun_kind {
	LL_TORCHRUN_FLAG = 0,       /* no value (store_true) */
	LL_TORCHRUN_STRING,         /* one line of text, not empty */
	LL_TORCHRUN_UINT,           /* 0 .. INT_MAX */
	LL_TORCHRUN_NUMBER,         /* a positive number */
	LL_TORCHRUN_ENUM,           /* one of `choices` */
	LL_TORCHRUN_PORT,           /* 1-65535 */
	LL_TORCHRUN_NPROC,          /* a count, or auto|gpu|cpu */
	LL_TORCHRUN_NNODES,         /* N or MIN:MAX (parse_min_max_nnodes) */
	LL_TORCHRUN_STD,            /* 0-3, or LOCAL_RANK:0-3,... (Std.from_str) */
	LL_TORCHRUN_RANKS,          /* local ranks, comma-separated (--local-ranks-filter) */
	LL_TORCHRUN_KEYVALUES,      /* key=value,... (--rdzv-conf) */
	LL_TORCHRUN_ENDPOINT,       /* host or host:port (--rdzv-endpoint) */
};

/* Who may set an option (docs/security.md, "torchrun options"). A launcher's
 * agreement (PMIx, Slurm) owns the world; a profile fetched over the network may tune
 * how torchrun runs the workers, never who they talk to or what runs. */
enum ll_torchrun_owner {
	/* Any profile, --set, the command line. */
	LL_TORCHRUN_TUNING = 0,
	/* A local profile, --set, the command line: it names a path torchrun writes
	 * (--log-dir) or code it loads (--logs-specs). */
	LL_TORCHRUN_LOCAL,
	/* As LOCAL, and under a launcher an input the agreement proves on every node
	 * (the master port every node uses; the workers per node every node has). */
	LL_TORCHRUN_PROVED,
	/* The rendezvous and the node's place in it: the agreement's under a launcher;
	 * the user's (command line, local profile) only where no agreement runs. */
	LL_TORCHRUN_WORLD,
	/* How the script runs (--no-python, --run-path): the command line only. */
	LL_TORCHRUN_COMMAND,
};
const char *ll_torchrun_owner_text(enum ll_torchrun_owner w); /* "the agreement's world", ... */

/* One option of torch.distributed.run, spelled with underscores as torch 1.13's
 * argparse requires (newer torch accepts both). */
struct ll_torchrun_option {
	const char *name;           /* "nproc_per_node" */
	char short_name;            /* 'r' for --redirects, 0 if none */
	enum ll_torchrun_kind kind;
	enum ll_torchrun_owner owner;
	const char *choices;        /* LL_TORCHRUN_ENUM: '|'-separated */
	/* A command-line flag that says the user runs the rendezvous by hand (torchrun's
	 * own static or c10d rendezvous, no launcher asked): --nnodes, --master-addr,
	 * --rdzv-endpoint, --rdzv-backend, --standalone. */
	bool by_hand;
	const char *what;           /* "the master port": what a value of it decides */
	/* The first torch whose torch/distributed/run.py has it, as MAJOR * 100 + MINOR
	 * (203: 2.3); 0: every torch llmlaunch runs (1.13 has it). */
	int since;
};

/* The known options (torch 1.13, and a few from newer torch so that they pass
 * through rather than being refused), ending with a { NULL } entry. The launch
 * writes torchrun's options in this order. */
extern const struct ll_torchrun_option ll_torchrun_options[];
/* How many, the { NULL } end not counted. */
size_t ll_torchrun_n_options(void);

static inline bool ll_torchrun_has_arg(const struct ll_torchrun_option *o) { return o->kind != LL_TORCHRUN_FLAG; }

/* Look an option up by its long name without the leading dashes, with dashes or
 * underscores ("nproc-per-node" and "nproc_per_node" both match). NULL if unknown. */
const struct ll_torchrun_option *ll_torchrun_option_find(const char *name);
/* The option of a plan setting "torchrun.NAME", NULL for any other name. */
const struct ll_torchrun_option *ll_torchrun_setting_option(const char *setting);

/* The names a profile fetched over the network may hold in its `torchrun:` section
 * (TUNING), and those a local profile may hold (every owner but COMMAND), in table
 * order (static). */
const char *const *ll_torchrun_profile_keys(bool remote, size_t *ret_n);

/* Workers per node: far more than any node has GPUs or cores to give them. */
#define LL_TORCHRUN_MAX_NPROC 4096

/* Is `value` one option `o` takes, by its kind? NULL when it is, else what it takes,
 * malloc'ed: "a port number (1-65535)", "auto, gpu, cpu or a positive integer up to
 * 4096", "one of spawn|fork|forkserver". Profiles, `run`'s own torchrun flags and
 * --set torchrun.NAME all check this. A flag takes "1"/"true"/"yes"/"on" or
 * "0"/"false"/"no"/"off". */
char *ll_torchrun_value_check(const struct ll_torchrun_option *o, const char *value);
/* A flag's value: true for "1", "true", "yes", "on" (any case). */
bool ll_torchrun_flag_on(const char *value);

#endif
