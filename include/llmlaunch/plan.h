/* Stage 2: the planner. A pure function: facts + profile values + inherited
 * environment + command line in, plan out. No I/O, no globals, no clock.
 * Every value carries where it came from and why. */
#ifndef LLMLAUNCH_PLAN_H
#define LLMLAUNCH_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include "llmlaunch/facts.h"
#include "llmlaunch/util.h"

/* Lowest to highest precedence. */
enum ll_source {
	LL_SOURCE_DEFAULT = 0,
	LL_SOURCE_PROBE,
	LL_SOURCE_NCCL_CONF,    /* NCCL's own configuration files: NCCL reads them itself */
	LL_SOURCE_PROFILE,
	LL_SOURCE_CLUSTER,      /* decided by agreement across nodes (stage 3) */
	LL_SOURCE_LAUNCH,       /* what the launch itself needs (its job directory, NCCL's log for the
				 * watcher, the workers' placement): over profiles, under the user */
	LL_SOURCE_ENVIRONMENT,
	LL_SOURCE_CLI,
};
const char *ll_source_name(enum ll_source s); /* "default", "probe", ... */

enum ll_bind_mode { LL_BIND_NUMA = 0, LL_BIND_CORE, LL_BIND_NONE };
const char *ll_bind_mode_name(enum ll_bind_mode m);
int ll_bind_mode_parse(const char *s, enum ll_bind_mode *ret); /* 0 or -EINVAL */

/* A name=value from outside the planner (profile layer, --set, a torchrun flag), with
 * its origin ("profiles/roce.yaml:12", "--set", "--master-port"). Strings are borrowed. */
struct ll_assignment {
	const char *name;
	const char *value;      /* "auto" from a profile means: let the probe decide */
	const char *origin;
	bool remote;            /* from a profile fetched over the network */
};

/* One decided value. Environment variables for the workers have `exported`
 * set; settings of llmlaunch itself (bind, python) and torchrun's options
 * ("torchrun.master_port": what the launch passes to torchrun, each once) do not.
 * value == NULL means deliberately left unset (the reason says why). */
struct ll_setting {
	char *name;
	char *value;
	enum ll_source source;
	char *origin;           /* file:line for profiles, NULL otherwise */
	char *reason;           /* one line */
	bool exported;
};

/* Where one local rank runs. */
struct ll_rank_placement {
	int local_rank;
	int gpu;                /* index into facts->gpus, -1 for CPU-only */
	char *gpu_busid;
	int numa_node;          /* -1: no memory binding */
	char *cpuset;           /* hwloc list string of PUs; NULL: no CPU binding */
	int n_cores;            /* cores given to this rank (OMP_NUM_THREADS) */
};

enum ll_lint_level { LL_LINT_INFO = 0, LL_LINT_WARNING, LL_LINT_ERROR };
const char *ll_lint_level_name(enum ll_lint_level l); /* "info", "warning", "error" */

struct ll_lint {
	enum ll_lint_level level;
	char *variable;         /* the variable concerned, or NULL */
	char *message;
	bool blocking;          /* the job cannot work as planned: `run` stops before starting it */
};

/* What the process that starts the workers hands on to them: limits are inherited
 * through fork and exec. Zero: unknown. */
struct ll_process_limits {
	bool known;
	bool memlock_unlimited;
	unsigned long long memlock_bytes;   /* soft RLIMIT_MEMLOCK */
	enum ll_tristate ipc_lock;          /* CAP_IPC_LOCK is effective: no memlock limit applies */
};

struct ll_plan_input {
	const struct ll_facts *facts;
	/* NCCL's configuration files (llmlaunch/nccl-conf.h): every NAME=VALUE line in the
	 * order NCCL reads them, origin "FILE:LINE"; and NCCL_CONF_FILE's path when it
	 * names a file that cannot be read. */
	const struct ll_assignment *nccl_conf;
	size_t n_nccl_conf;
	const char *nccl_conf_unreadable;
	const char *nccl_conf_unreadable_why;  /* "a FIFO", "Permission denied" */
	bool nccl_conf_blocks;                  /* NCCL would block on it or read it forever */
	struct ll_process_limits limits;
	/* Inherited environment (environ-style "NAME=VALUE" strings, NULL-terminated). */
	char *const *environ;
	/* Profile values, already layered (later entries win). Names are variable names
	 * ("NCCL_IB_HCA") or settings ("bind", "python", "torchrun.max_restarts"). */
	const struct ll_assignment *profile;
	size_t n_profile;
	/* The command line, in order: --set NAME=VALUE, and torchrun's own flags as
	 * "torchrun.NAME" (origin "--master-port"; a flag's value "1"). */
	const struct ll_assignment *cli;
	size_t n_cli;
	enum ll_bind_mode bind;
	bool bind_from_cli;
	int nnodes;             /* 1 unless stage 3 says otherwise */
	/* The launcher whose agreement decides the world ("pmix", "slurm"), or NULL: none
	 * (one node, or a rendezvous the user runs by hand). Under one, torchrun's world
	 * options are the agreement's (llmlaunch/torchrun-options.h, owners). */
	const char *launcher;
	const char *launcher_why; /* what showed it: "PMIX_NAMESPACE is set" */
};

/* One line of NCCL's configuration files and what becomes of it. */
struct ll_conf_line {
	char *name, *value;
	char *origin;           /* "FILE:LINE" */
	bool used;              /* NCCL takes this value */
	char *note;             /* what NCCL does with it, one line */
};

struct ll_plan {
	struct ll_setting *settings;   /* in a stable, documented order */
	size_t n_settings;
	struct ll_rank_placement *ranks;
	size_t n_ranks;
	struct ll_lint *lints;
	size_t n_lints;
	struct ll_conf_line *conf;     /* NCCL's configuration files, line by line */
	size_t n_conf;
	enum ll_bind_mode bind;
	int nproc_per_node;
	int nnodes;
};

/* Is NAME=VALUE something a plan takes (--set checks it when parsing)? Variables
 * ([A-Z_][A-Z0-9_]*) take any value; the settings are "bind" (numa, core, none),
 * "cores-per-rank" (1-4096), "python" and "torchrun.OPTION" (a torchrun option, its
 * value by its kind; "nproc-per-node" is torchrun.nproc_per_node). 0, -ENOENT for a
 * name nothing reads (it would be ignored), -EINVAL with *ret_expected (malloc'ed)
 * saying what the value may be. */
int ll_plan_setting_check(const char *name, const char *value, char **ret_expected);
/* The settings' names, for "did you mean" (static). */
const char *const *ll_plan_setting_names(size_t *ret_n);

/* Plan. -EINVAL when an input sets what its source may not (a torchrun option of the
 * agreement's world under a launcher, one a fetched profile may not set, a value of
 * the wrong kind): a usage error, the message naming the value, its origin and what
 * it would replace. */
int ll_plan_build(const struct ll_plan_input *in, struct ll_plan **ret, struct ll_error *err);
void ll_plan_free(struct ll_plan *p);
/* A deep copy (a launch that differs from the job's in a few values: the check). */
struct ll_plan *ll_plan_dup(const struct ll_plan *p);
static inline void ll_plan_freep(struct ll_plan **p) { if (*p) { ll_plan_free(*p); *p = NULL; } }

const struct ll_setting *ll_plan_get(const struct ll_plan *p, const char *name);
/* The value of a setting, NULL when absent or deliberately unset. */
const char *ll_plan_value(const struct ll_plan *p, const char *name);
/* Set or override a value after planning (stage 3 writes cluster-wide values). */
void ll_plan_set(struct ll_plan *p, const char *name, const char *value, enum ll_source source,
		 const char *origin, const char *reason, bool exported);

/* A lint found after planning (the launch's checks against the job's torch); a
 * blocking one stops `run` before anything starts. */
void ll_plan_lint_add(struct ll_plan *p, enum ll_lint_level level, const char *variable, bool blocking,
		     const char *fmt, ...) LL_PRINTF(5, 6);

/* One paragraph for humans: GPUs per node, NVLink domain, network and bandwidth, and
 * the usual layout advice (tensor/pipeline parallel inside the NVLink domain, data
 * parallel across nodes). Appended to `out`. */
void ll_plan_summary(const struct ll_plan *p, struct ll_buf *out);
/* The plan of the facts alone: no profile, environment or command line, one node
 * (what `probe` reports). Returns 0 or -errno. */
int ll_plan_from_facts(const struct ll_facts *f, struct ll_plan **ret);
/* ll_plan_summary() of that plan. Returns 0 or -errno. */
int ll_plan_parallelism_summary(const struct ll_facts *f, struct ll_buf *out);

/* The longest "hang_timeout" (30 days): a bound, not a choice. */
#define LL_HANG_TIMEOUT_MAX_S (30.0 * 86400)

#endif
