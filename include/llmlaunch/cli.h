/* The command layer: one context shared by the subcommands, and each subcommand's
 * entry point (launcher/cli/cmd-*.c, one file per command, as git's builtins). */
#ifndef LLMLAUNCH_CLI_H
#define LLMLAUNCH_CLI_H

#include <getopt.h>
#include "llmlaunch/facts.h"
#include "llmlaunch/probe.h"
#include "llmlaunch/util.h"

#define LL_EXIT_OK 0
#define LL_EXIT_FAILURE 1
#define LL_EXIT_USAGE 2

struct ll_ctx {
	const char *argv0;
	struct ll_probe_options probe;
	/* Loaded on demand by ll_ctx_facts(); owned by the context. */
	hwloc_topology_t topo;
	struct ll_facts *facts;
	char **profiles;            /* --profile values in order */
	size_t n_profiles;
	const char *cacert;         /* --cacert: extra CA for https:// profiles */
	bool allow_http;            /* --allow-http: plain http profiles beyond loopback */
	bool allow_loader_vars;     /* --allow-loader-vars: profiles may set LD_PRELOAD & co, and
				     * fetched ones more than their allow-list */
};

/* Options every fact-reading command accepts. Their `val`s are above 0x1000 so they
 * cannot collide with a command's own short options. */
enum {
	LL_OPT_TOPOLOGY = 0x1000,
	LL_OPT_FSROOT,
	LL_OPT_PROFILE,
	LL_OPT_CACERT,
	LL_OPT_ALLOW_HTTP,
	LL_OPT_ALLOW_LOADER_VARS,
	LL_OPT_NO_CACHE,
	LL_OPT_COMMON_LAST,
};
#define LL_COMMON_LONG_OPTIONS                                            \
	{ "topology", required_argument, NULL, LL_OPT_TOPOLOGY },         \
	{ "fsroot", required_argument, NULL, LL_OPT_FSROOT },             \
	{ "profile", required_argument, NULL, LL_OPT_PROFILE },           \
	{ "cacert", required_argument, NULL, LL_OPT_CACERT },             \
	{ "allow-http", no_argument, NULL, LL_OPT_ALLOW_HTTP },           \
	{ "allow-loader-vars", no_argument, NULL, LL_OPT_ALLOW_LOADER_VARS }, \
	{ "no-cache", no_argument, NULL, LL_OPT_NO_CACHE }
#define LL_COMMON_HELP                                                                  \
	"  --topology FILE   replay a snapshot (hwloc XML from 'probe --save' or lstopo)\n" \
	"  --fsroot DIR      read /sys and /proc under DIR instead of this machine's\n"     \
	"  --profile P       apply a profile (name, file or https:// URL); repeatable\n"     \
	"  --cacert FILE     trust this CA too when fetching https:// profiles\n"           \
	"  --allow-http      allow plain http:// profiles from hosts other than loopback\n" \
	"  --allow-loader-vars  let profiles set LD_PRELOAD, PYTHONPATH, plugin paths ...,\n" \
	"                    and fetched ones more than NCCL/FI/UCX tuning (docs/security.md)\n" \
	"  --no-cache        probe this machine in full, without the per-boot topology cache\n"

/* Handle one of the common options; returns true when `opt` was one. */
bool ll_ctx_common_option(struct ll_ctx *ctx, int opt, const char *arg);

/* The getopt_long() results every command treats alike, for use in the `default:` case
 * (opterr = 0, an optstring starting with ':'): a common option (handled: returns 1;
 * `ctx` NULL: the command takes none), '?' (unknown option: a "did you mean" from
 * `longopts`) and ':' (missing value), and anything else the command did not expect.
 * Usage errors are reported as "llmlaunch: CMD: unknown option '--x'" and return
 * -EINVAL; the command exits 2. */
int ll_cmd_option_fallback(const char *cmd, int c, const char *arg, char **argv, struct ll_ctx *ctx,
			   const struct option *longopts);
/* After the option loop: no operands left, and --topology and --fsroot not both given.
 * Returns 1, or -EINVAL after reporting. */
int ll_cmd_options_done(const char *cmd, int argc, char **argv, struct ll_ctx *ctx);

/* Probe (or replay) once per process; later calls return the same facts. */
int ll_ctx_facts(struct ll_ctx *ctx, const struct ll_facts **ret, struct ll_error *err);

/* Report an error record on stderr as "llmlaunch: MESSAGE" (+ "hint: ..."). */
void ll_report(const struct ll_error *err);
void ll_errorf(const char *fmt, ...) LL_PRINTF(1, 2);
void ll_warnf(const char *fmt, ...) LL_PRINTF(1, 2);

/* The agreement's status line while a node waits for the others, on stderr: updated
 * in place on a terminal ("waiting for 3 of 64 nodes: n17, n42, n63 (12 s)"), a line
 * now and then in a log (the first, then on a change at most every 10 s, else every
 * 60 s). For ll_agree_options.progress (data unused). */
struct ll_agree_progress;
void ll_cli_agree_progress(void *data, const struct ll_agree_progress *p);

/* A command returns the exit status (LL_EXIT_*, or a job's own status when it ran
 * one) or a negative errno for a failure it has already reported; main() maps that
 * to the process's exit status and checks standard output once for every command,
 * so no command checks or reports a failed write to it itself. */
typedef int (*ll_cmd_fn)(int argc, char **argv, struct ll_ctx *ctx);

struct ll_command {
	const char *name;
	ll_cmd_fn fn;
	const char *summary; /* NULL: internal, not listed */
};
extern const struct ll_command ll_commands[];
extern const size_t ll_n_commands;
const struct ll_command *ll_command_find(const struct ll_command *table, size_t n, const char *name);

/* Nested commands (`slurm prolog`, `profiles list`): argv[1] names one of `table`;
 * --help prints `usage`; an unknown name is a usage error naming the choices. */
int ll_command_dispatch(const char *parent, const struct ll_command *table, size_t n, const char *usage,
			int argc, char **argv, struct ll_ctx *ctx);

/* Profiles as the commands use them: the options of ctx, and the layers that apply
 * to this node (warnings printed). launcher/cli/profile-ctx.c. */
struct ll_profile_opts;
struct ll_profile_set;
void ll_ctx_profile_opts(const struct ll_ctx *ctx, struct ll_profile_opts *ret);
int ll_ctx_profiles(struct ll_ctx *ctx, struct ll_profile_set **ret, struct ll_error *err);

int cmd_probe(int argc, char **argv, struct ll_ctx *ctx);
int cmd_check(int argc, char **argv, struct ll_ctx *ctx);
int cmd_env(int argc, char **argv, struct ll_ctx *ctx);
int cmd_explain(int argc, char **argv, struct ll_ctx *ctx);
int cmd_run(int argc, char **argv, struct ll_ctx *ctx);
int cmd_logs(int argc, char **argv, struct ll_ctx *ctx);
int cmd_profiles(int argc, char **argv, struct ll_ctx *ctx);
int cmd_slurm(int argc, char **argv, struct ll_ctx *ctx);
int cmd_worker(int argc, char **argv, struct ll_ctx *ctx);

#endif
