/* The preflight check as `llmlaunch check` and `llmlaunch run --preflight` run it
 * (check-run.c): launch python/llmlaunch_check.py through torchrun over the agreed
 * world, read what it measured, decide (launcher/check/), report, act. Internal to
 * launcher/cli/. */
#ifndef LLMLAUNCH_CHECK_CMD_H
#define LLMLAUNCH_CHECK_CMD_H

#include <stdbool.h>
#include "llmlaunch/agree.h"
#include "llmlaunch/check.h"
#include "llmlaunch/launch.h"
#include "llmlaunch/plan.h"
#include "llmlaunch/profile.h"

#define LL_CHECK_EXCLUDE_DEFAULT "llmlaunch-exclude.txt"

/* --on-slow, --exclude-file, --drain, --check-timeout: what `check` and `run
 * --preflight` share. */
struct ll_check_cli {
	enum ll_check_on_slow on_slow;
	const char *exclude_file;   /* NULL: LL_CHECK_EXCLUDE_DEFAULT */
	bool drain;                 /* also drain the named nodes (scontrol; the site's choice) */
	double timeout_s;           /* <= 0: from the job's size (ll_cli_check_deadline) */
};

enum {
	LL_OPT_ON_SLOW = 0x300, /* below LL_OPT_TOPOLOGY: a command's own options */
	LL_OPT_EXCLUDE_FILE,
	LL_OPT_DRAIN,
	LL_OPT_CHECK_TIMEOUT,
};
#define LL_CHECK_LONG_OPTIONS                                                     \
	{ "on-slow", required_argument, NULL, LL_OPT_ON_SLOW },                   \
	{ "exclude-file", required_argument, NULL, LL_OPT_EXCLUDE_FILE },         \
	{ "drain", no_argument, NULL, LL_OPT_DRAIN },                             \
	{ "check-timeout", required_argument, NULL, LL_OPT_CHECK_TIMEOUT }
#define LL_CHECK_HELP                                                                          \
	"  --on-slow warn|stop|exclude  when the check names a slow or broken node: warn\n"     \
	"                    (default), stop (the job does not start), or exclude: also write\n"  \
	"                    the nodes in Slurm hostlist syntax to --exclude-file, for\n"         \
	"                    'sbatch --exclude=$(cat FILE)' and a requeue\n"                     \
	"  --exclude-file F  where exclude writes (default ./" LL_CHECK_EXCLUDE_DEFAULT ", by node 0)\n" \
	"  --drain           with exclude: also drain the nodes (scontrol; needs a user Slurm\n"  \
	"                    lets drain nodes: the site's choice)\n"                              \
	"  --check-timeout S stop the check after S seconds (default: torchrun's rendezvous\n"   \
	"                    deadline + 60 s + 10 times the simulated measurement, >= 60 s)\n"

/* Handle one of the options above: 1 handled, 0 not one of them, -EINVAL (reported). */
int ll_check_cli_option(struct ll_check_cli *o, int opt, const char *arg);

struct ll_check_request {
	const struct ll_plan *plan; /* agreed: the check runs over the job's world */
	const struct ll_facts *facts;
	const struct ll_profile_expect *expect; /* NULL: no profile's figures */
	const char *self_exe, *python;
	int port_offset;            /* added to the master port: run --preflight's check must
				       not share the job's rendezvous store */
	bool json;                  /* the report as JSON */
	FILE *report;               /* where the report goes (stdout for check, stderr for run) */
	const struct ll_check_cli *cli;
};

/* Run the check and act on it. Returns 0 when the check found nothing, 1 when it
 * named nodes (or the job is slow, or NCCL fell back) and the policy lets the job go
 * on (warn), -EHOSTDOWN when the policy stops it (message says why and what was
 * written), other -errno when the check could not run or did not finish. */
int ll_cli_check(const struct ll_check_request *req, struct ll_error *err);

/* The agreement before the check timed out and node 0 knows who did not arrive
 * (`missing`, a hostlist; NULL: nothing to do): under --on-slow exclude, write them
 * to the exclude file as the check writes the nodes it names, and say so in `err`'s
 * message. A node that never joins is as much in the way as a slow one. */
void ll_cli_check_exclude_missing(const struct ll_check_cli *cli, const char *missing, struct ll_error *err);

#endif
