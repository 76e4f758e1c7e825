/* `llmlaunch [OPTIONS] SCRIPT [ARGS...]` and `llmlaunch run ...`: a drop-in for
 * torchrun. Parse, check what can be checked before anything runs (script,
 * interpreter, torch), plan, agree, build the command, then print it (--dry-run),
 * become it (--exec) or supervise it (default). */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "llmlaunch/cli.h"
#include "llmlaunch/launch.h"
#include "llmlaunch/ncclwatch.h"
#include "llmlaunch/output.h"
#include "llmlaunch/plan.h"
#include "llmlaunch/plancmd.h"
#include "llmlaunch/profile.h"

extern char **environ;

#define DEFAULT_PYTHON "python3"
#define DEFAULT_GRACE_S 15.0
#define TORCH_CHECK_TIMEOUT_S 60.0

enum {
	OPT_PYTHON = 0x100,
	OPT_DRY_RUN,
	OPT_EXEC,
	OPT_JSON,
	OPT_GRACE,
	OPT_MODULE,
	OPT_ON_FALLBACK,
	OPT_TORCHRUN = 0x2000, /* + index into ll_torchrun_options */
};

struct run_options {
	const char *python;
	const char *module;
	bool dry_run, exec, json;
	double grace_s;
	enum ll_fallback_policy on_fallback;
	struct ll_plan_cmd_options plan; /* --set, --bind, and --nproc-per-node when a number */
	struct ll_torchrun_arg *user;
	size_t n_user;
	const char *script;
	char **script_args;
	size_t n_script_args;
	struct ll_agree_options agree;  /* --agree-timeout, --strict */
};

static void run_options_release(struct run_options *o)
{
	ll_plan_cmd_options_release(&o->plan);
	free(o->user);
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
		LL_COMMON_HELP
		LL_AGREE_HELP
		"  -h, --help        show this help\n"
		"\n"
		"torchrun's own options pass through, spelled with dashes or underscores, and win\n"
		"over the plan: --nnodes --node-rank --master-addr --master-port --rdzv-backend\n"
		"--rdzv-endpoint --rdzv-id --rdzv-conf --standalone --max-restarts --monitor-interval\n"
		"--start-method --role --no-python --run-path --log-dir -r/--redirects -t/--tee\n"
		"\n"
		"Each worker sees every planned GPU in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID)\n"
		"and uses the one at index LOCAL_RANK. SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and\n"
		"SIGUSR2 are forwarded to torchrun and its workers. Unless NCCL_DEBUG or\n"
		"NCCL_DEBUG_FILE is set, NCCL logs at INFO into the job's directory and llmlaunch\n"
		"reports the transport each node really uses. Exit status: the job's (128+N\n"
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

		*u = (struct option){ t->name, t->has_arg ? required_argument : no_argument, NULL,
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

static void add_user(struct run_options *o, const struct ll_torchrun_option *t, const char *value)
{
	struct ll_torchrun_arg *a = ll_array_push(&o->user, &o->n_user, sizeof(*a));

	a->name = t->name;
	a->value = t->has_arg ? value : NULL;
}

/* Returns 1 to continue, 0 to exit successfully (--help), -EINVAL for usage errors
 * (already reported). */
static int parse_argv(int argc, char **argv, struct ll_ctx *ctx, struct run_options *o)
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

		*u = (struct option){ *d, t->has_arg ? required_argument : no_argument, NULL,
				      OPT_TORCHRUN + (int)(t - ll_torchrun_options) };
	}
	ll_array_push(&longopts, &n_long, sizeof(*longopts));

	opterr = 0;
	optind = 0;
	/* '+': options end at SCRIPT; ':': report a missing argument ourselves. */
	while (r > 0 && (c = getopt_long(argc, argv, "+:hm:r:t:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			r = 0;
			break;
		case OPT_PYTHON:
			o->python = optarg;
			break;
		case 'm':
		case OPT_MODULE:
			o->module = optarg;
			break;
		case OPT_DRY_RUN:
			o->dry_run = true;
			break;
		case OPT_EXEC:
			o->exec = true;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_GRACE: {
			char *end;
			double v = strtod(optarg, &end);

			if (*end || !(v > 0 && v <= 86400)) {
				ll_errorf("--grace '%s': expected seconds, more than 0", optarg);
				r = -EINVAL;
			}
			o->grace_s = v;
			break;
		}
		case OPT_ON_FALLBACK:
			if (ll_fallback_policy_parse(optarg, &o->on_fallback) < 0) {
				ll_errorf("--on-fallback '%s': expected warn or stop", optarg);
				r = -EINVAL;
			}
			break;
		case 'r':
			add_user(o, ll_torchrun_option_find("redirects"), optarg);
			break;
		case 't':
			add_user(o, ll_torchrun_option_find("tee"), optarg);
			break;
		case ':':
			ll_errorf("option '%s' needs a value", argv[optind - 1]);
			r = -EINVAL;
			break;
		case '?':
			if (optopt)
				ll_errorf("unknown option '-%c'", optopt);
			else
				ll_errorf("unknown option '%s'", argv[optind - 1]);
			r = -EINVAL;
			break;
		case LL_OPT_SET:
		case LL_OPT_BIND: {
			struct ll_error err = { 0 };

			if (ll_plan_cmd_option(&o->plan, c, optarg, &err) < 0) {
				ll_report(&err);
				ll_error_clear(&err);
				r = -EINVAL;
			}
			break;
		}
		case LL_OPT_AGREE_TIMEOUT:
		case LL_OPT_STRICT: {
			struct ll_error err = { 0 };

			if (ll_agree_cmd_option(&o->agree, c, optarg, &err) < 0) {
				ll_report(&err);
				ll_error_clear(&err);
				r = -EINVAL;
			}
			break;
		}
		default:
			if (ll_ctx_common_option(ctx, c, optarg))
				break;
			if (c >= OPT_TORCHRUN) {
				const struct ll_torchrun_option *t = &ll_torchrun_options[c - OPT_TORCHRUN];

				add_user(o, t, optarg);
				if (strcmp(t->name, "nproc_per_node") == 0) {
					char *end;
					long v = strtol(optarg, &end, 10);
					/* "auto", "gpu", "cpu": torchrun counts, the plan decides placement */
					o->plan.nproc_per_node = (*end == 0 && v > 0 && v <= 4096) ? (int)v : 0;
				}
				break;
			}
			r = -EINVAL;
			break;
		}
	}
	if (r > 0) {
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
			r = -EINVAL;
		}
	}
	if (r > 0 && o->json && !o->dry_run) {
		ll_errorf("--json goes with --dry-run");
		r = -EINVAL;
	}
	if (r > 0 && o->exec && o->dry_run) {
		ll_errorf("--exec and --dry-run exclude each other");
		r = -EINVAL;
	}
	ll_strv_free_null(dashed);
	free(longopts);
	return r;
}

/* ---- pre-flight checks ---- */

static int check_script(const struct run_options *o, struct ll_error *err)
{
	const struct ll_torchrun_arg *no_python = NULL;
	struct stat st;

	for (size_t i = 0; i < o->n_user; i++)
		if (strcmp(o->user[i].name, "no_python") == 0)
			no_python = &o->user[i];
	if (o->module || (no_python && !strchr(o->script, '/')))
		return 0; /* a module, or a program found on PATH by the worker */
	if (stat(o->script, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return ll_error_set(err, -EISDIR, "cannot run script '%s': is a directory", o->script);
		return 0;
	}
	ll_error_set(err, -errno, "cannot find script '%s': %s", o->script, strerror(errno));
	if (!strchr(o->script, '/') && !strchr(o->script, '.')) {
		const char *best = NULL;
		size_t best_d = 3;

		for (size_t i = 0; i < ll_n_commands; i++) {
			size_t d;

			if (!ll_commands[i].summary)
				continue;
			d = ll_edit_distance(o->script, ll_commands[i].name);
			if (d < best_d)
				best = ll_commands[i].name, best_d = d;
		}
		if (best)
			ll_error_hint(err, "did you mean 'llmlaunch %s'?", best);
	}
	return -ENOENT;
}

/* Find an interpreter as execvp would; *ret malloc'ed. */
static int find_program(const char *name, char **ret, struct ll_error *err)
{
	const char *path;

	if (strchr(name, '/')) {
		if (access(name, X_OK) < 0)
			return ll_error_set(err, -errno, "cannot run interpreter '%s': %s", name, strerror(errno));
		*ret = ll_strdup(name);
		return 0;
	}
	path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path;;) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		char *cand = ll_asprintf("%.*s%s%s", (int)n, p, n ? "/" : "", name);
		struct stat st;

		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0) {
			*ret = cand;
			return 0;
		}
		free(cand);
		if (!colon)
			break;
		p = colon + 1;
	}
	return ll_error_set(err, -ENOENT, "cannot find interpreter '%s' in PATH", name);
}

#define TORCH_CHECK_CODE "import importlib.util,sys; sys.exit(importlib.util.find_spec('torch') is None)"

/* Start checking that `python` can import torch; the interpreter's start-up (~20 ms)
 * then overlaps the probe. *ret_pid is 0 when the check could not start (the
 * synchronous check reports why). */
static void torch_check_start(const char *python, pid_t *ret_pid)
{
	char *argv[] = { (char *)python, "-c", TORCH_CHECK_CODE, NULL };

	*ret_pid = 0;
	if (ll_run_quiet_start(argv, ret_pid, NULL) < 0)
		*ret_pid = 0;
}

static void torch_check_cancel(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	*pid = 0;
}

static int torch_importable(const char *python, int *ret_status, struct ll_error *err)
{
	char *argv[] = { (char *)python, "-c", TORCH_CHECK_CODE, NULL };

	return ll_run_quiet(argv, TORCH_CHECK_TIMEOUT_S, ret_status, err);
}

/* `started` is the pid of a check of this same interpreter started earlier, or 0. */
static int check_torch(const char *python, pid_t started, struct ll_error *err)
{
	int st = 0, r;

	if (started > 0)
		r = ll_run_quiet_wait(started, python, TORCH_CHECK_TIMEOUT_S, &st, err);
	else
		r = torch_importable(python, &st, err);
	if (r < 0)
		return r;
	if (st == 0)
		return 0;
	if (st != 1)
		return ll_error_set(err, -ENOEXEC, "interpreter '%s' failed to start (exit status %d)", python, st);
	ll_error_set(err, -ENOENT, "torch is not importable by '%s'", python);
	/* Debian's python3-torch lives under /usr/bin/python3 while PATH may lead to a
	 * pyenv or venv interpreter without it. */
	if (strcmp(python, "/usr/bin/python3") != 0 && access("/usr/bin/python3", X_OK) == 0 &&
	    torch_importable("/usr/bin/python3", &st, NULL) == 0 && st == 0)
		ll_error_hint(err, "/usr/bin/python3 has torch: use --python /usr/bin/python3 or LLMLAUNCH_PYTHON");
	else
		ll_error_hint(err, "install PyTorch for that interpreter, or choose another with --python");
	return -ENOENT;
}

/* ---- plan and agreement ---- */

static const struct ll_torchrun_arg *user_arg(const struct run_options *o, const char *name)
{
	const struct ll_torchrun_arg *found = NULL;

	for (size_t i = 0; i < o->n_user; i++)
		if (strcmp(o->user[i].name, name) == 0)
			found = &o->user[i];
	return found;
}

/* Stage 3 seam: this is where the node plan becomes a cluster plan. Single node
 * here: one node, rank 0, rendezvous on 127.0.0.1 at a port free right now, so two
 * jobs on one machine never share it. When the user runs several nodes by hand
 * (--nnodes N), their flags and torchrun's defaults apply as with torchrun.
 * ll_agree() (llmlaunch/agree.h) takes this place for PMIx and Slurm jobs. */
static int agree(struct ll_plan *plan, const struct ll_facts *facts, const struct run_options *o,
		 struct ll_cluster *ret, struct ll_error *err)
{
	const struct ll_torchrun_arg *nn = user_arg(o, "nnodes");
	int r;

	/* Under a launcher (srun --mpi=pmix, mpirun, a Slurm job) the nodes agree, unless
	 * the user runs the rendezvous by hand with torchrun's own flags. */
	if (!nn && !user_arg(o, "master_addr") && !user_arg(o, "rdzv_endpoint") && !user_arg(o, "standalone") &&
	    ll_agree_detect(environ) != LL_AGREE_SINGLE)
		return ll_agree(plan, facts, &o->agree, ret, err);
	ret->backend = LL_AGREE_SINGLE;
	ret->nnodes = 1;
	ret->node_rank = 0;
	if (nn && strcmp(nn->value, "1") != 0 && strcmp(nn->value, "1:1") != 0)
		return 0;
	ret->master_addr = ll_strdup("127.0.0.1");
	if (!user_arg(o, "master_port") && !user_arg(o, "rdzv_endpoint") && !user_arg(o, "standalone")) {
		r = ll_free_port(ret->master_addr, &ret->master_port, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- output ---- */

static bool sh_safe(const char *s)
{
	if (!*s)
		return false;
	for (const char *c = s; *c; c++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-", *c))
			return false;
	return true;
}

static void sh_quote(FILE *f, const char *s)
{
	if (sh_safe(s)) {
		fputs(s, f);
		return;
	}
	fputc('\'', f);
	for (const char *c = s; *c; c++) {
		if (*c == '\'')
			fputs("'\\''", f);
		else
			fputc(*c, f);
	}
	fputc('\'', f);
}

/* The dry run prints a sh script that does what the launch would do. */
static int print_dry_run(const struct ll_launch *l, bool json)
{
	struct ll_out *out = ll_out_new(stdout, json);

	if (json) {
		ll_out_open_object(out, NULL);
		ll_out_open_array(out, "argv");
		for (size_t i = 0; i < l->argc; i++)
			ll_out_string(out, NULL, NULL, l->argv[i]);
		ll_out_close_array(out);
		ll_out_open_object(out, "env");
		for (size_t i = 0; i < l->n_env_added; i++) {
			char *name = ll_strndup(l->env_added[i], strcspn(l->env_added[i], "="));
			ll_out_string(out, name, NULL, strchr(l->env_added[i], '=') + 1);
			free(name);
		}
		ll_out_close_object(out);
		ll_out_int(out, "nproc_per_node", NULL, l->nproc_per_node, l->nproc_per_node > 0);
		ll_out_string(out, "placement", NULL, l->placement);
		ll_out_close_object(out);
	} else {
		for (size_t i = 0; i < l->n_env_added; i++) {
			const char *eq = strchr(l->env_added[i], '=');
			printf("export %.*s=", (int)(eq - l->env_added[i]), l->env_added[i]);
			sh_quote(stdout, eq + 1);
			putchar('\n');
		}
		for (size_t i = 0; i < l->argc; i++) {
			if (i)
				putchar(' ');
			sh_quote(stdout, l->argv[i]);
		}
		putchar('\n');
	}
	return ll_out_finish(out);
}

static void print_warnings(const struct ll_plan *plan, const struct ll_launch *l)
{
	for (size_t i = 0; i < plan->n_lints; i++) {
		const struct ll_lint *lt = &plan->lints[i];

		if (lt->level == LL_LINT_INFO)
			continue;
		if (lt->variable)
			ll_warnf("%s: %s", lt->variable, lt->message);
		else
			ll_warnf("%s", lt->message);
	}
	for (size_t i = 0; i < l->n_notes; i++)
		ll_warnf("%s", l->notes[i]);
}

static void notify_stderr(void *data, const char *message)
{
	(void)data;
	ll_errorf("%s", message);
}

/* torchrun writes below --log_dir; a per-job directory keeps two jobs apart and
 * leaves no /tmp/torchelastic_* behind. The dry run names it without creating it. */
static char *job_dir(bool create, struct ll_error *err)
{
	const char *tmp = getenv("TMPDIR");
	char *d;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	d = ll_asprintf("%s/llmlaunch-%d", tmp, (int)getpid());
	if (!create)
		return d;
	if (mkdir(d, 0700) == 0)
		return d;
	free(d);
	d = ll_asprintf("%s/llmlaunch-%d-XXXXXX", tmp, (int)getpid());
	if (mkdtemp(d))
		return d;
	ll_error_set(err, -errno, "cannot create the job directory '%s': %s", d, strerror(errno));
	free(d);
	return NULL;
}

/* Remove the job directory when torchrun left only empty directories in it (it
 * makes one per attempt and rank even when nothing is redirected). Anything else,
 * a log file above all, keeps the directory. */
static bool rmdir_empty_tree(const char *path, int depth)
{
	DIR *d;
	struct dirent *e;
	bool empty = true;

	if (depth > 8 || !(d = opendir(path)))
		return false;
	while ((e = readdir(d))) {
		char *sub;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (e->d_type != DT_DIR) {
			empty = false;
			continue;
		}
		sub = ll_asprintf("%s/%s", path, e->d_name);
		if (!rmdir_empty_tree(sub, depth + 1))
			empty = false;
		free(sub);
	}
	closedir(d);
	return empty && rmdir(path) == 0;
}

static char *self_exe(struct ll_error *err)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	if (n < 0) {
		ll_error_set(err, -errno, "cannot find llmlaunch's own path in '/proc/self/exe': %s", strerror(errno));
		return NULL;
	}
	buf[n] = 0;
	return ll_strdup(buf);
}

/* ---- the NCCL log watcher ---- */

static int watch_nccl(void *data)
{
	struct ll_ncclwatch *w = data;

	if (ll_ncclwatch_poll(w, stderr) != 1)
		return 0;
	ll_errorf("%s", ll_ncclwatch_stop_reason(w));
	return 1;
}

/* Keep NCCL's logs only when the job failed: that is when someone reads them. */
static void nccl_logs_done(const char *dir, bool keep)
{
	DIR *d;
	struct dirent *e;

	if (keep) {
		ll_errorf("NCCL logs kept in '%s' (read them with 'llmlaunch logs %s')", dir, dir);
		return;
	}
	if (!(d = opendir(dir)))
		return;
	while ((e = readdir(d))) {
		if (ll_startswith(e->d_name, LL_NCCLWATCH_FILE_PREFIX)) {
			char *p = ll_asprintf("%s/%s", dir, e->d_name);
			unlink(p);
			free(p);
		}
	}
	closedir(d);
}

/* --python, else $LLMLAUNCH_PYTHON, else a profile's "python", else python3. */
static const char *choose_python(const struct run_options *o, const struct ll_plan *plan)
{
	const char *env = getenv("LLMLAUNCH_PYTHON");
	const char *planned = ll_plan_value(plan, "python");

	if (o->python)
		return o->python;
	if (env && *env)
		return env;
	if (planned && *planned)
		return planned;
	return DEFAULT_PYTHON;
}

int cmd_run(int argc, char **argv, struct ll_ctx *ctx)
{
	struct run_options o = { .grace_s = DEFAULT_GRACE_S };
	_cleanup_(ll_plan_freep) struct ll_plan *plan = NULL;
	_cleanup_(ll_launch_freep) struct ll_launch *launch = NULL;
	_cleanup_free_ char *early_python = NULL;
	pid_t early_check = 0;
	_cleanup_free_ char *python = NULL, *self = NULL, *logdir = NULL, *statusdir = NULL, *nccldir = NULL;
	_cleanup_(ll_ncclwatch_freep) struct ll_ncclwatch *watch = NULL;
	struct ll_cluster cluster = { 0 };
	struct ll_error err = { 0 };
	struct ll_launch_request req;
	int r, status = LL_EXIT_FAILURE;

	r = parse_argv(argc, argv, ctx, &o);
	if (r <= 0) {
		run_options_release(&o);
		if (r == 0)
			return fflush(stdout) == 0 ? LL_EXIT_OK : LL_EXIT_FAILURE;
		return LL_EXIT_USAGE;
	}

	/* Cheap checks first: a typo should not cost a probe. */
	r = check_script(&o, &err);
	if (r < 0) {
		status = LL_EXIT_USAGE;
		goto fail;
	}
	/* Only a real launch pays for starting the interpreter (~20 ms), and it starts
	 * now so that it overlaps the probe; a profile's choice of interpreter (known
	 * after planning) makes it start again. */
	if (!o.dry_run && find_program(choose_python(&o, NULL), &early_python, NULL) == 0)
		torch_check_start(early_python, &early_check);
	r = ll_ctx_plan(ctx, &o.plan, environ, &plan, NULL, &err);
	if (r < 0)
		goto fail;
	r = find_program(choose_python(&o, plan), &python, &err);
	if (r < 0) {
		ll_error_hint(&err, "choose the interpreter with --python PATH or LLMLAUNCH_PYTHON");
		goto fail;
	}
	r = agree(plan, ctx->facts, &o, &cluster, &err);
	if (r >= 0)
		for (size_t i = 0; i < cluster.n_notes; i++)
			ll_warnf("%s", cluster.notes[i]);
	if (r < 0)
		goto fail;

	self = self_exe(&err);
	if (!self)
		goto fail;
	logdir = job_dir(!o.dry_run, &err);
	if (!logdir)
		goto fail;
	/* With --exec nobody is left to read the workers' exit records. */
	if (!o.exec) {
		statusdir = ll_asprintf("%s/status", logdir);
		if (!o.dry_run && mkdir(statusdir, 0700) < 0) {
			ll_error_set(&err, -errno, "cannot create '%s': %s", statusdir, strerror(errno));
			goto fail_dir;
		}
	}
	req = (struct ll_launch_request){
		.self_exe = self,
		.python = python,
		.module = o.module,
		.script = o.script,
		.script_args = o.script_args,
		.n_script_args = o.n_script_args,
		.user = o.user,
		.n_user = o.n_user,
		.log_dir = logdir,
		.status_dir = statusdir,
		.environ = environ,
	};
	r = ll_launch_build(plan, &cluster, &req, &launch, &err);
	if (r < 0)
		goto fail_dir;
	if (!o.exec) {
		char *add[2];

		/* The user's own NCCL_DEBUG/NCCL_DEBUG_FILE (inherited or --set) win;
		 * then there is nothing of ours to watch. */
		nccldir = ll_asprintf("%s/nccl", logdir);
		if (ll_ncclwatch_env(nccldir, launch->envp, add)) {
			for (int i = 0; i < 2; i++) {
				char *eq = strchr(add[i], '=');
				*eq = 0;
				ll_launch_setenv(launch, add[i], eq + 1);
				free(add[i]);
			}
		} else {
			free(LL_TAKE(nccldir));
		}
	}
	print_warnings(plan, launch);

	if (o.dry_run) {
		status = print_dry_run(launch, o.json) < 0 ? LL_EXIT_FAILURE : LL_EXIT_OK;
		goto out;
	}

	if (early_check > 0 && strcmp(early_python, python) != 0)
		torch_check_cancel(&early_check);
	r = check_torch(python, early_check, &err);
	early_check = 0; /* reaped */
	if (r < 0)
		goto fail_dir;

	fflush(stdout);
	fflush(stderr);
	if (o.exec) {
		execve(launch->argv[0], launch->argv, launch->envp);
		ll_error_set(&err, -errno, "cannot run '%s': %s", launch->argv[0], strerror(errno));
		goto fail_dir;
	}
	if (nccldir) {
		enum ll_net_expect expect = ll_ncclwatch_expect_from_plan(ll_plan_value(plan, "LLMLAUNCH_NET"),
									  ll_plan_value(plan, "NCCL_NET"),
									  ll_plan_value(plan, "NCCL_IB_DISABLE"));

		r = ll_ncclwatch_new(nccldir, expect, o.on_fallback, &watch, &err);
		if (r < 0)
			goto fail_dir;
	}
	{
		struct ll_supervise_options so = {
			.grace_s = o.grace_s,
			.notify = notify_stderr,
			.watch = watch ? watch_nccl : NULL,
			.watch_data = watch,
			.watch_fd = watch ? ll_ncclwatch_fd(watch) : -1,
			.watch_interval_ms = LL_NCCLWATCH_INTERVAL_MS,
		};
		int worker_status, rank;

		r = ll_supervise(launch->argv, launch->envp, &so, &status, &err);
		if (r < 0)
			goto fail_dir;
		/* torchrun exits 1 whatever a worker's status was: report the first
		 * failing worker's own. Statuses above 128 are signals and stay. */
		if (ll_worker_status_collect(statusdir, &worker_status, &rank) == 1 && status == 1)
			status = worker_status;
	}
	if (watch) {
		ll_ncclwatch_finish(watch, stderr);
		nccl_logs_done(nccldir, status != 0 && ll_ncclwatch_verdict(watch)->files > 0);
	}
	rmdir_empty_tree(logdir, 0);
	goto out;

fail_dir:
	if (logdir && !o.dry_run) {
		if (statusdir)
			ll_worker_status_collect(statusdir, &(int){ 0 }, &(int){ 0 });
		rmdir_empty_tree(logdir, 0);
	}
fail:
	ll_report(&err);
	ll_error_clear(&err);
out:
	torch_check_cancel(&early_check);
	ll_cluster_release(&cluster);
	run_options_release(&o);
	return status;
}
