/* `llmlaunch run`'s command line: its own options, the common ones, and every torchrun
 * option in both spellings, into struct run_options (cmd-run-internal.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd-run-internal.h"
#include "llmlaunch/agree.h"
#include "llmlaunch/profile.h"

enum {
	OPT_PYTHON = 0x100,
	OPT_DRY_RUN,
	OPT_EXEC,
	OPT_JSON,
	OPT_GRACE,
	OPT_MODULE,
	OPT_ON_FALLBACK,
	OPT_PREFLIGHT,
	OPT_HANG_TIMEOUT,
	OPT_ON_HANG,
	OPT_TORCHRUN = 0x2000, /* + index into ll_torchrun_options */
};

void run_options_release(struct run_options *o)
{
	ll_plan_cmd_options_release(&o->plan);
	ll_strv_free(o->owned, o->n_owned);
	o->owned = NULL;
	o->n_owned = 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: llmlaunch [OPTIONS] SCRIPT [ARGS...]\n"
		"       llmlaunch run [OPTIONS] SCRIPT [ARGS...]\n"
		"       llmlaunch [OPTIONS] -m MODULE [ARGS...]\n"
		"\n"
		"Run SCRIPT on this node's GPUs through torch.distributed.run (torchrun) with the\n"
		"NCCL variables, rank placement and torchrun arguments that 'llmlaunch explain'\n"
		"shows. Options end at SCRIPT: everything after it goes to the script.\n"
		"\n"
		"  --python PATH          interpreter for torchrun and the workers\n"
		"                         (default: $LLMLAUNCH_PYTHON, else a profile's, else python3)\n"
		"  -m, --module MODULE    run a module as 'python -m MODULE' does\n"
		"  --nproc-per-node N     workers on this node (default: one per planned GPU, else 1)\n"
		"  --bind numa|core|none  bind each worker to its GPU's NUMA node (default), to its\n"
		"                         own cores, or not at all\n"
		"  --set NAME=VALUE       set a variable or setting, over everything else; repeatable\n"
		"  --dry-run              print the environment added and the exact command; run nothing\n"
		"  --json                 with --dry-run: print them as one JSON object\n"
		"  --exec                 replace llmlaunch with torchrun instead of supervising it\n"
		"  --grace SECONDS        after forwarding a stop signal, SIGKILL the job this much\n"
		"                         later (default 15)\n"
		"  --on-fallback warn|stop  when NCCL's logs show it fell back to sockets where the\n"
		"                         plan expected InfiniBand or RoCE: warn (default) or stop\n"
		"  --hang-timeout SECONDS no rank printed for this long: name where each waits, stop\n"
		"  --on-hang stop|dump    after a hang's stacks: stop the job (default) or let it run\n"
		"  --preflight            first run 'llmlaunch check' over the same world; its\n"
		"                         --on-slow, --exclude-file, --drain, --check-timeout apply\n"
		LL_COMMON_HELP
		LL_AGREE_HELP
		"  -h, --help        show this help\n"
		"\n"
		"torchrun's own options, spelled with dashes or underscores, are plan inputs like\n"
		"--set torchrun.NAME=VALUE: each reaches torchrun once, and 'explain' and --dry-run\n"
		"say where it came from. --nnodes, --master-addr, --rdzv-endpoint, --rdzv-backend or\n"
		"--standalone run the rendezvous by hand (no agreement); under srun or mpirun the\n"
		"rest of the world (--node-rank, --rdzv-id, --rdzv-conf, --local-addr) is the\n"
		"agreement's, and --master-port is the port every node must ask for.\n"
		"Also: --max-restarts --monitor-interval --start-method --role --no-python\n"
		"--run-path --log-dir -r/--redirects -t/--tee --local-ranks-filter\n"
		"\n"
		"Each worker sees every planned GPU in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID)\n"
		"and uses the one at index LOCAL_RANK. SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and\n"
		"SIGUSR2 are forwarded to torchrun and its workers. NCCL logs at INFO into the job's\n"
		"directory (or your NCCL_DEBUG_FILE) and llmlaunch reports the transport each node\n"
		"really uses; your own NCCL_DEBUG without a file leaves nothing to read. Durations\n"
		"take 30, 30s, 5m or 1h. Exit status: the job's (128+N\n"
		"when it ended by signal N), 1 when llmlaunch could not start it, 2 for usage errors.\n"
		"\n"
		"Examples:\n"
		"  llmlaunch examples/train.py --steps 5\n"
		"  llmlaunch --python /usr/bin/python3 --nproc-per-node 2 --dry-run examples/train.py\n"
		"  llmlaunch --set NCCL_DEBUG=INFO -m mypkg.train --lr 3e-4\n");
}

/* getopt_long's table: our options, the common ones, and every torchrun option in
 * both spellings (so an abbreviation of either still maps to one option). */
static struct option *build_longopts(void)
{
	static const struct option own[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "python", required_argument, NULL, OPT_PYTHON },
		{ "module", required_argument, NULL, OPT_MODULE },
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "dry_run", no_argument, NULL, OPT_DRY_RUN },
		{ "exec", no_argument, NULL, OPT_EXEC },
		{ "bind", required_argument, NULL, LL_OPT_BIND },
		{ "set", required_argument, NULL, LL_OPT_SET },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "grace", required_argument, NULL, OPT_GRACE },
		{ "on-fallback", required_argument, NULL, OPT_ON_FALLBACK },
		{ "preflight", no_argument, NULL, OPT_PREFLIGHT },
		{ "hang-timeout", required_argument, NULL, OPT_HANG_TIMEOUT },
		{ "on-hang", required_argument, NULL, OPT_ON_HANG },
		LL_CHECK_LONG_OPTIONS,
		LL_COMMON_LONG_OPTIONS,
		LL_AGREE_LONG_OPTIONS,
	};
	struct option *v = NULL;
	size_t n = 0;

	for (size_t i = 0; i < LL_ARRAY_SIZE(own); i++)
		*(struct option *)ll_array_push(&v, &n, sizeof(*v)) = own[i];
	for (size_t i = 0; ll_torchrun_options[i].name; i++) {
		const struct ll_torchrun_option *t = &ll_torchrun_options[i];
		struct option *u = ll_array_push(&v, &n, sizeof(*v));

		*u = (struct option){ t->name, ll_torchrun_has_arg(t) ? required_argument : no_argument, NULL,
				      OPT_TORCHRUN + (int)i };
		/* The dashed twin points at a static string table below. */
	}
	ll_array_push(&v, &n, sizeof(*v)); /* terminator */
	return v;
}

/* Dashed spellings, built once per parse and freed with the table. */
static char **dashed_names(struct option *v)
{
	char **names = NULL;
	size_t n = 0;

	for (struct option *o = v; o->name; o++) {
		char *d;

		if (o->val < OPT_TORCHRUN || !strchr(o->name, '_'))
			continue;
		d = ll_strdup(o->name);
		for (char *c = d; *c; c++)
			if (*c == '_')
				*c = '-';
		*(char **)ll_array_push(&names, &n, sizeof(char *)) = d;
	}
	ll_array_push(&names, &n, sizeof(char *));
	return names;
}

/* A torchrun flag becomes the plan's "torchrun.NAME" from the command line, with the
 * flag as it was spelled for its origin ("--master-port"), exactly as --set
 * torchrun.NAME=VALUE would: the plan checks who may set it and writes it once. */
static void add_torchrun(struct run_options *o, const struct ll_torchrun_option *t, const char *spelled,
			 const char *value)
{
	char *name = ll_asprintf("torchrun.%s", t->name), *origin = ll_strdup(spelled);

	*(char **)ll_array_push(&o->owned, &o->n_owned, sizeof(char *)) = name;
	*(char **)ll_array_push(&o->owned, &o->n_owned, sizeof(char *)) = origin;
	*(struct ll_assignment *)ll_array_push(&o->plan.sets, &o->plan.n_sets, sizeof(*o->plan.sets)) =
		(struct ll_assignment){ .name = name, .value = ll_torchrun_has_arg(t) ? value : "1", .origin = origin };
	if (strcmp(t->name, "no_python") == 0)
		o->no_python = true;
}

/* An option of llmlaunch that the plan holds as a setting ("hang_timeout"), with the
 * option as its origin, as --set NAME=VALUE would give it. */
static int add_setting(struct run_options *o, const char *name, const char *spelled, const char *value)
{
	char *expected = NULL;

	if (ll_plan_setting_check(name, value, &expected) < 0) {
		ll_errorf("%s '%s': expected %s", spelled, value, expected ? expected : "another value");
		free(expected);
		return -EINVAL;
	}
	*(struct ll_assignment *)ll_array_push(&o->plan.sets, &o->plan.n_sets, sizeof(*o->plan.sets)) =
		(struct ll_assignment){ .name = name, .value = value, .origin = spelled };
	return 1;
}

/* An error record of a parser below (plan, agreement), reported: a usage error. */
static int reported(struct ll_error *err)
{
	ll_report(err);
	ll_error_clear(err);
	return -EINVAL;
}

/* A torchrun flag: its value checked now (torchrun would fail with a traceback, after
 * the probe and the agreement), then into the plan's inputs. */
static int torchrun_flag(struct run_options *o, const struct ll_torchrun_option *t, const char *spelled,
			 const char *value)
{
	_cleanup_free_ char *expected = ll_torchrun_has_arg(t) ? ll_torchrun_value_check(t, value) : NULL;

	if (expected) {
		ll_errorf("%s '%s': expected %s", spelled, value, expected);
		return -EINVAL;
	}
	add_torchrun(o, t, spelled, value);
	return 1;
}

/* One option getopt_long returned: 1 go on, 0 done (--help), <0 usage error (reported). */
static int run_option(struct run_options *o, struct ll_ctx *ctx, int c, char **argv, const struct option *longopts)
{
	struct ll_error err = { 0 };

	switch (c) {
	case 'h':
		usage(stdout);
		return 0;
	case OPT_PYTHON:
		o->python = optarg;
		return 1;
	case 'm':
	case OPT_MODULE:
		o->module = optarg;
		return 1;
	case OPT_DRY_RUN:
		o->dry_run = true;
		return 1;
	case OPT_EXEC:
		o->exec = true;
		return 1;
	case OPT_JSON:
		o->json = true;
		return 1;
	case OPT_GRACE:
		return ll_parse_seconds("--grace", optarg, 0.001, 86400, &o->grace_s, &err) < 0 ? reported(&err) : 1;
	case OPT_ON_FALLBACK:
		if (ll_fallback_policy_parse(optarg, &o->on_fallback) == 0)
			return 1;
		ll_errorf("--on-fallback '%s': expected warn or stop", optarg);
		return -EINVAL;
	case OPT_PREFLIGHT:
		o->preflight = true;
		return 1;
	case OPT_HANG_TIMEOUT:
		return add_setting(o, "hang_timeout", "--hang-timeout", optarg);
	case OPT_ON_HANG:
		return add_setting(o, "on_hang", "--on-hang", optarg);
	case LL_OPT_ON_SLOW:
	case LL_OPT_EXCLUDE_FILE:
	case LL_OPT_DRAIN:
	case LL_OPT_CHECK_TIMEOUT:
		return ll_check_cli_option(&o->check, c, optarg) < 0 ? -EINVAL : 1;
	case 'r':
	case 't':
		return torchrun_flag(o, ll_torchrun_option_find(c == 'r' ? "redirects" : "tee"), c == 'r' ? "-r" : "-t",
				     optarg);
	case ':':
	case '?':
		return ll_cmd_option_fallback("run", c, optarg, argv, NULL, longopts);
	case LL_OPT_SET:
	case LL_OPT_BIND:
		return ll_plan_cmd_option(&o->plan, c, optarg, &err) < 0 ? reported(&err) : 1;
	case LL_OPT_AGREE_TIMEOUT:
	case LL_OPT_STRICT:
		return ll_agree_cmd_option(&o->agree, c, optarg, &err) < 0 ? reported(&err) : 1;
	}
	if (ll_ctx_common_option(ctx, c, optarg))
		return 1;
	if (c >= OPT_TORCHRUN) {
		const struct ll_torchrun_option *t = &ll_torchrun_options[c - OPT_TORCHRUN];
		_cleanup_free_ char *spelled = ll_asprintf("--%s", t->name);

		for (char *d = spelled + 2; *d; d++)
			if (*d == '_')
				*d = '-';
		return torchrun_flag(o, t, spelled, optarg);
	}
	return -EINVAL;
}

/* After the options: SCRIPT (or -m MODULE) and its arguments, and the options that
 * exclude each other. 1, or -EINVAL after reporting. */
static int run_options_done(int argc, char **argv, struct run_options *o)
{
	if (o->module) {
		o->script_args = argv + optind;
		o->n_script_args = argc - optind;
	} else if (optind < argc) {
		o->script = argv[optind];
		o->script_args = argv + optind + 1;
		o->n_script_args = argc - optind - 1;
	} else {
		ll_errorf("no script to run");
		fprintf(stderr, "hint: llmlaunch [OPTIONS] SCRIPT [ARGS...]; see 'llmlaunch run --help'\n");
		return -EINVAL;
	}
	if (o->json && !o->dry_run) {
		ll_errorf("--json goes with --dry-run");
		return -EINVAL;
	}
	if (o->preflight && o->dry_run) {
		ll_errorf("--preflight and --dry-run exclude each other: the check runs a job");
		return -EINVAL;
	}
	if (o->exec && o->dry_run) {
		ll_errorf("--exec and --dry-run exclude each other");
		return -EINVAL;
	}
	if (!o->preflight && (o->check.on_slow || o->check.exclude_file || o->check.drain || o->check.timeout_s > 0)) {
		ll_errorf("--on-slow, --exclude-file, --drain and --check-timeout go with --preflight");
		return -EINVAL;
	}
	if (o->check.drain && o->check.on_slow != LL_ON_SLOW_EXCLUDE) {
		ll_errorf("--drain goes with --on-slow exclude");
		return -EINVAL;
	}
	return 1;
}

int run_parse_argv(int argc, char **argv, struct ll_ctx *ctx, struct run_options *o)
{
	_cleanup_free_ struct option *base = build_longopts();
	struct option *longopts = NULL;
	size_t n_long = 0;
	char **dashed;
	int c, r = 1;

	/* Merge the dashed twins into one table. */
	for (struct option *p = base; p->name; p++)
		*(struct option *)ll_array_push(&longopts, &n_long, sizeof(*p)) = *p;
	dashed = dashed_names(base);
	for (char **d = dashed; *d; d++) {
		const struct ll_torchrun_option *t = ll_torchrun_option_find(*d);
		struct option *u = ll_array_push(&longopts, &n_long, sizeof(*u));

		*u = (struct option){ *d, ll_torchrun_has_arg(t) ? required_argument : no_argument, NULL,
				      OPT_TORCHRUN + (int)(t - ll_torchrun_options) };
	}
	ll_array_push(&longopts, &n_long, sizeof(*longopts));

	opterr = 0;
	optind = 0;
	/* '+': options end at SCRIPT; ':': report a missing argument ourselves. */
	while (r > 0 && (c = getopt_long(argc, argv, "+:hm:r:t:", longopts, NULL)) != -1)
		r = run_option(o, ctx, c, argv, longopts);
	if (r > 0)
		r = run_options_done(argc, argv, o);
	ll_strv_free_null(dashed);
	free(longopts);
	return r;
}
