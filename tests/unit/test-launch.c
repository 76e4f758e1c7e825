/* Stage 4 without torch: torchrun's argv and environment from a hand-made plan,
 * the placement string and a worker's binding, supervision of real child processes. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/mempolicy.h>
#include <cmocka.h>

#include "llmlaunch/child.h"
#include "llmlaunch/file.h"
#include "llmlaunch/launch.h"
#include "llmlaunch/port.h"

static struct ll_rank_placement ranks[] = {
	{ .local_rank = 0, .gpu = 0, .numa_node = 0, .cpuset = (char *)"0-3", .n_cores = 4 },
	{ .local_rank = 1, .gpu = 1, .numa_node = 1, .cpuset = (char *)"4-7", .n_cores = 4 },
};

/* A plan as the planner and a single-node agreement leave it: the workers'
 * variables, torchrun's options with their sources, two bound ranks. */
static struct ll_plan *test_plan(void)
{
	struct ll_plan *p = ll_calloc(1, sizeof(*p));

	p->ranks = ll_calloc(2, sizeof(*p->ranks));
	for (size_t i = 0; i < 2; i++) {
		p->ranks[i] = ranks[i];
		p->ranks[i].cpuset = ll_strdup(ranks[i].cpuset);
	}
	p->n_ranks = 2;
	p->nproc_per_node = 2;
	p->nnodes = 1;
	ll_plan_set(p, "CUDA_DEVICE_ORDER", "PCI_BUS_ID", LL_SOURCE_PROBE, NULL, "r", true);
	ll_plan_set(p, "NCCL_SOCKET_IFNAME", "=eth0", LL_SOURCE_PROBE, NULL, "r", true);
	ll_plan_set(p, "NCCL_IB_HCA", NULL, LL_SOURCE_PROBE, NULL, "deliberately unset", true);
	ll_plan_set(p, "OMP_NUM_THREADS", "4", LL_SOURCE_PROBE, NULL, "r", true);
	ll_plan_set(p, "torchrun.nproc_per_node", "2", LL_SOURCE_PROBE, NULL, "r", false);
	ll_plan_set(p, "torchrun.redirects", "2:0", LL_SOURCE_DEFAULT, NULL, "r", false);
	ll_plan_set(p, "torchrun.tee", "2:0", LL_SOURCE_DEFAULT, NULL, "r", false);
	ll_plan_set(p, "torchrun.max_restarts", "3", LL_SOURCE_PROFILE, "site.yaml:3", "r", false);
	ll_plan_set(p, "torchrun.nnodes", "1", LL_SOURCE_CLUSTER, NULL, "r", false);
	ll_plan_set(p, "torchrun.node_rank", "0", LL_SOURCE_CLUSTER, NULL, "r", false);
	ll_plan_set(p, "torchrun.master_addr", "127.0.0.1", LL_SOURCE_CLUSTER, NULL, "r", false);
	ll_plan_set(p, "torchrun.master_port", "41234", LL_SOURCE_CLUSTER, NULL, "r", false);
	return p;
}

static const struct ll_launch_job job = { .dir = "/tmp/llmlaunch-1", .records = true };

static char *inherited[] = { (char *)"PATH=/usr/bin:/bin", (char *)"OMP_NUM_THREADS=4",
			     (char *)"NCCL_SOCKET_IFNAME=eth9", (char *)"LLMLAUNCH_PLACEMENT=0:cpus=9", NULL };

static char *script_args[] = { (char *)"--steps", (char *)"3" };

static struct ll_launch_request base_request(void)
{
	return (struct ll_launch_request){
		.self_exe = "/opt/bin/llmlaunch",
		.python = "/usr/bin/python3",
		.script = "train.py",
		.script_args = script_args,
		.n_script_args = 2,
		.environ = inherited,
	};
}

static char *join(char **v)
{
	struct ll_buf b;

	ll_buf_init(&b);
	for (size_t i = 0; v[i]; i++) {
		if (i)
			ll_buf_addc(&b, ' ');
		ll_buf_add(&b, v[i]);
	}
	return ll_buf_detach(&b);
}

static const char *env_get(char **envp, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; envp[i]; i++)
		if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
			return envp[i] + n + 1;
	return NULL;
}

static void test_option_names(void **state)
{
	(void)state;
	assert_string_equal(ll_torchrun_option_find("nproc-per-node")->name, "nproc_per_node");
	assert_string_equal(ll_torchrun_option_find("nproc_per_node")->name, "nproc_per_node");
	assert_string_equal(ll_torchrun_option_find("master-port")->name, "master_port");
	assert_false(ll_torchrun_has_arg(ll_torchrun_option_find("no-python")));
	assert_int_equal(ll_torchrun_option_find("redirects")->short_name, 'r');
	assert_null(ll_torchrun_option_find("nproc"));
	assert_null(ll_torchrun_option_find("nproc_per_node_"));
	assert_null(ll_torchrun_option_find(""));
}

/* torch's and NCCL's own hang diagnostics, by the versions the plan recorded
 * (docs/failures.md, "What torch and NCCL offer"). */
static struct ll_plan *versions_plan(const char *torch, const char *nccl)
{
	struct ll_plan *p = test_plan();

	ll_plan_set(p, "torch_version", torch, LL_SOURCE_LAUNCH, NULL, "r", false);
	ll_plan_set(p, "nccl_version", nccl, LL_SOURCE_PROBE, NULL, "r", false);
	ll_launch_plan_job(p, &job);
	return p;
}

static void test_torch_nccl_versions(void **state)
{
	static char *own[] = { (char *)"TORCH_NCCL_TRACE_BUFFER_SIZE=50", (char *)"TORCH_NCCL_ASYNC_ERROR_HANDLING=1",
			       NULL };
	struct ll_launch_job theirs = job;
	struct ll_plan *p;

	(void)state;
	/* torch 1.13: no flight recorder, nothing exported; NCCL 2.21: no RAS note. */
	p = versions_plan("1.13.1+cu117", "2.21.5");
	assert_null(ll_plan_get(p, "TORCH_NCCL_TRACE_BUFFER_SIZE"));
	assert_null(ll_plan_get(p, "TORCH_NCCL_DUMP_ON_TIMEOUT"));
	assert_null(ll_plan_get(p, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"));
	assert_null(ll_plan_get(p, "TORCH_NCCL_ASYNC_ERROR_HANDLING"));
	assert_null(ll_plan_get(p, "NCCL_ASYNC_ERROR_HANDLING"));
	assert_non_null(ll_plan_get(p, "torch_flight_recorder"));
	assert_null(ll_plan_get(p, "nccl_ras"));
	ll_plan_free(p);

	/* torch 2.6 with NCCL 2.21: the flight recorder into the job directory. */
	p = versions_plan("2.6.0+cu124", "2.21.5");
	assert_string_equal(ll_plan_value(p, "TORCH_NCCL_TRACE_BUFFER_SIZE"), "2000");
	assert_string_equal(ll_plan_value(p, "TORCH_NCCL_DUMP_ON_TIMEOUT"), "1");
	assert_string_equal(ll_plan_value(p, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"), "/tmp/llmlaunch-1/flight/rank_");
	assert_true(ll_plan_get(p, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")->exported);
	/* torchrun's own 1 would abort NCCL before the dump is written: 3 with the recorder. */
	assert_string_equal(ll_plan_value(p, "TORCH_NCCL_ASYNC_ERROR_HANDLING"), "3");
	assert_true(ll_plan_get(p, "TORCH_NCCL_ASYNC_ERROR_HANDLING")->exported);
	assert_null(ll_plan_get(p, "torch_async_error_handling"));
	assert_null(ll_plan_get(p, "torch_flight_recorder"));
	assert_null(ll_plan_get(p, "nccl_ras"));
	ll_plan_free(p);

	/* torch 2.2: before the 2.3 the rule starts at. */
	p = versions_plan("2.2.2", "2.19.3");
	assert_null(ll_plan_get(p, "TORCH_NCCL_TRACE_BUFFER_SIZE"));
	assert_null(ll_plan_get(p, "TORCH_NCCL_ASYNC_ERROR_HANDLING"));
	assert_non_null(ll_plan_get(p, "torch_async_error_handling"));
	ll_plan_free(p);

	/* NCCL 2.24 and later: RAS is on by its own default; a note, nothing exported. */
	p = versions_plan("2.6.0", "2.24.3");
	assert_string_equal(ll_plan_value(p, "nccl_ras"), "on");
	assert_false(ll_plan_get(p, "nccl_ras")->exported);
	assert_null(ll_plan_get(p, "NCCL_RAS_ENABLE"));
	ll_plan_free(p);
	p = versions_plan("2.6.0", "3.0.1");
	assert_non_null(ll_plan_get(p, "nccl_ras"));
	ll_plan_free(p);

	/* The user's own value wins. */
	p = test_plan();
	ll_plan_set(p, "torch_version", "2.6.0", LL_SOURCE_LAUNCH, NULL, "r", false);
	theirs.environ = own;
	ll_launch_plan_job(p, &theirs);
	assert_string_equal(ll_plan_value(p, "TORCH_NCCL_TRACE_BUFFER_SIZE"), "50");
	assert_int_equal(ll_plan_get(p, "TORCH_NCCL_TRACE_BUFFER_SIZE")->source, LL_SOURCE_ENVIRONMENT);
	assert_string_equal(ll_plan_value(p, "TORCH_NCCL_ASYNC_ERROR_HANDLING"), "1");
	ll_plan_free(p);

	/* A CPU-only plan runs no NCCL: nothing. */
	p = test_plan();
	for (size_t i = 0; i < p->n_ranks; i++)
		p->ranks[i].gpu = -1;
	ll_plan_set(p, "torch_version", "2.6.0", LL_SOURCE_LAUNCH, NULL, "r", false);
	ll_launch_plan_job(p, &job);
	assert_null(ll_plan_get(p, "TORCH_NCCL_TRACE_BUFFER_SIZE"));
	ll_plan_free(p);
}

/* Every torchrun option once, in the table's order, from the plan alone; the
 * environment the inherited one with the plan's values, the launch's last. */
static void test_bound_launch(void **state)
{
	_cleanup_(ll_plan_freep) struct ll_plan *plan = test_plan();
	struct ll_launch_request req = base_request();
	struct ll_launch *l = NULL;
	struct ll_error err = { 0 };
	char *s;

	(void)state;
	ll_launch_plan_job(plan, &job);
	assert_int_equal(ll_launch_build(plan, &req, &l, &err), 0);
	s = join(l->argv);
	assert_string_equal(s, "/usr/bin/python3 -m torch.distributed.run --nnodes 1 --nproc_per_node 2 "
			       "--max_restarts 3 --log_dir /tmp/llmlaunch-1 --redirects 2:0 --tee 2:0 --node_rank 0 "
			       "--master_addr 127.0.0.1 --master_port 41234 "
			       "--no_python /opt/bin/llmlaunch __worker -- /usr/bin/python3 -u train.py --steps 3");
	free(s);
	assert_int_equal(l->argc, 30);
	assert_null(l->argv[l->argc]);
	/* Added: what differs from the inherited environment, in plan order. */
	s = join(l->env_added);
	assert_string_equal(s, "CUDA_DEVICE_ORDER=PCI_BUS_ID NCCL_SOCKET_IFNAME==eth0 "
			       "LLMLAUNCH_PLACEMENT=0:cpus=0-3:mem=0;1:cpus=4-7:mem=1 "
			       "LLMLAUNCH_STATUS_DIR=/tmp/llmlaunch-1/status");
	free(s);
	assert_int_equal(l->n_env_added, 4);
	assert_true(l->worker);
	assert_string_equal(l->status_dir, "/tmp/llmlaunch-1/status");
	assert_string_equal(env_get(l->envp, "PATH"), "/usr/bin:/bin");
	assert_string_equal(env_get(l->envp, "NCCL_SOCKET_IFNAME"), "=eth0");
	assert_string_equal(env_get(l->envp, "OMP_NUM_THREADS"), "4");
	assert_null(env_get(l->envp, "NCCL_IB_HCA"));
	assert_string_equal(ll_plan_get(plan, "torchrun.log_dir")->reason,
			    "the job directory: torchrun's logs stay with the job, and no /tmp/torchelastic_* is left "
			    "behind");
	assert_int_equal(ll_plan_get(plan, LL_PLACEMENT_ENV)->source, LL_SOURCE_LAUNCH);
	ll_launch_free(l);
}

/* A value set again (the command line over the agreement, a profile's log directory
 * over the job's) replaces it: torchrun gets it once, never twice. */
static void test_each_option_once(void **state)
{
	_cleanup_(ll_plan_freep) struct ll_plan *plan = test_plan();
	struct ll_launch_request req = base_request();
	const struct ll_setting *opts[32];
	struct ll_launch *l = NULL;
	struct ll_error err = { 0 };
	char *s;

	(void)state;
	ll_plan_set(plan, "torchrun.master_port", "29999", LL_SOURCE_CLI, "--master-port", "r", false);
	ll_plan_set(plan, "torchrun.log_dir", "/var/log/job", LL_SOURCE_PROFILE, "site.yaml:9", "r", false);
	ll_plan_set(plan, "torchrun.no_python", "1", LL_SOURCE_CLI, "--no-python", "r", false);
	ll_plan_set(plan, "torchrun.standalone", "0", LL_SOURCE_CLI, "--set", "r", false);
	ll_launch_plan_job(plan, &job);
	req.script = "./train.sh";
	assert_int_equal(ll_launch_build(plan, &req, &l, &err), 0);
	s = join(l->argv);
	/* --no_python shapes the entry point: the worker runs the program itself. A
	 * flag set off is not passed. */
	assert_string_equal(s, "/usr/bin/python3 -m torch.distributed.run --nnodes 1 --nproc_per_node 2 "
			       "--max_restarts 3 --log_dir /var/log/job --redirects 2:0 --tee 2:0 --node_rank 0 "
			       "--master_addr 127.0.0.1 --master_port 29999 "
			       "--no_python /opt/bin/llmlaunch __worker -- ./train.sh --steps 3");
	free(s);
	assert_int_equal(ll_launch_options(plan, opts, LL_ARRAY_SIZE(opts)), 9);
	assert_string_equal(opts[8]->origin, "--master-port");
	assert_int_equal(opts[3]->source, LL_SOURCE_PROFILE);
	ll_launch_free(l);
}

static void test_unbound_and_module(void **state)
{
	_cleanup_(ll_plan_freep) struct ll_plan *plan = test_plan();
	struct ll_launch_request req = base_request();
	struct ll_launch *l = NULL;
	struct ll_error err = { 0 };
	char *s;

	(void)state;
	for (size_t i = 0; i < plan->n_ranks; i++) {
		free(LL_TAKE(plan->ranks[i].cpuset));
		plan->ranks[i].numa_node = -1;
	}
	req.script = NULL;
	req.module = "pkg.train";
	ll_launch_plan_job(plan, &job);
	assert_int_equal(ll_launch_build(plan, &req, &l, &err), 0);
	s = join(l->argv);
	assert_string_equal(s, "/usr/bin/python3 -m torch.distributed.run --nnodes 1 --nproc_per_node 2 "
			       "--max_restarts 3 --log_dir /tmp/llmlaunch-1 --redirects 2:0 --tee 2:0 --node_rank 0 "
			       "--master_addr 127.0.0.1 --master_port 41234 "
			       "--no_python /opt/bin/llmlaunch __worker -- /usr/bin/python3 -u -m pkg.train --steps 3");
	free(s);
	/* Unbound workers still start through __worker: it records their exit status. */
	assert_true(l->worker);
	assert_null(ll_plan_value(plan, LL_PLACEMENT_ENV));
	/* A placement inherited from an outer launch must not bind these workers. */
	assert_null(env_get(l->envp, LL_PLACEMENT_ENV));
	ll_launch_free(l);
}

static void test_contradictions(void **state)
{
	_cleanup_(ll_plan_freep) struct ll_plan *plan = test_plan();
	struct ll_launch_request req = base_request();
	struct ll_launch *l = NULL;
	struct ll_error err = { 0 };
	char *s;

	(void)state;
	ll_launch_plan_job(plan, &job);
	req.module = "pkg.train";
	ll_plan_set(plan, "torchrun.no_python", "1", LL_SOURCE_CLI, "--no-python", "r", false);
	assert_int_equal(ll_launch_build(plan, &req, &l, &err), -EINVAL);
	assert_string_equal(err.message, "-m MODULE cannot be combined with --no_python");
	ll_error_clear(&err);
	ll_plan_set(plan, "torchrun.run_path", "1", LL_SOURCE_CLI, "--run-path", "r", false);
	req = base_request();
	assert_int_equal(ll_launch_build(plan, &req, &l, &err), -EINVAL);
	assert_string_equal(err.message, "--no_python and --run_path exclude each other");
	ll_error_clear(&err);

	/* --run_path: the script runs in torchrun's interpreter, unbound, unrecorded. */
	ll_plan_set(plan, "torchrun.no_python", "0", LL_SOURCE_CLI, "--set", "r", false);
	ll_launch_plan_job(plan, &job);
	assert_int_equal(ll_launch_build(plan, &req, &l, &err), 0);
	assert_null(ll_plan_value(plan, LL_PLACEMENT_ENV));
	assert_false(l->worker);
	assert_null(l->status_dir);
	assert_null(env_get(l->envp, LL_STATUS_DIR_ENV));
	assert_null(env_get(l->envp, LL_PLACEMENT_ENV));
	s = join(l->argv);
	assert_string_equal(s, "/usr/bin/python3 -m torch.distributed.run --nnodes 1 --nproc_per_node 2 "
			       "--max_restarts 3 --log_dir /tmp/llmlaunch-1 --redirects 2:0 --tee 2:0 --node_rank 0 "
			       "--master_addr 127.0.0.1 --master_port 41234 --run_path train.py --steps 3");
	free(s);
	assert_non_null(strstr(ll_plan_get(plan, LL_PLACEMENT_ENV)->reason, "no binding"));
	ll_launch_free(l);
}

/* NCCL's log for the watcher: the job's own at INFO; a profile's NCCL_DEBUG=WARN or
 * NCCL_DEBUG_SUBSYS cannot turn it off; the user's own file is read where it is; the
 * user's own level without a file leaves nothing to watch, and says so. */
static void test_nccl_log(void **state)
{
	char *const user_file[] = { (char *)"NCCL_DEBUG_FILE=/scratch/logs/n.%h.%p", NULL };
	char *const user_level[] = { (char *)"NCCL_DEBUG=WARN", NULL };
	struct ll_launch_job watched = { .dir = "/tmp/llmlaunch-1", .records = true, .watch = true };
	char *dir = NULL, *prefix = NULL;
	struct ll_plan *plan;

	(void)state;
	plan = test_plan();
	ll_plan_set(plan, "NCCL_DEBUG", "WARN", LL_SOURCE_PROFILE, "quiet.yaml:2", "r", true);
	ll_plan_set(plan, "NCCL_DEBUG_SUBSYS", "COLL", LL_SOURCE_PROFILE, "quiet.yaml:3", "r", true);
	ll_launch_plan_job(plan, &watched);
	assert_string_equal(ll_plan_value(plan, "NCCL_DEBUG"), "INFO");
	assert_non_null(strstr(ll_plan_get(plan, "NCCL_DEBUG")->reason, "quiet.yaml:2's NCCL_DEBUG=WARN would hide it"));
	assert_string_equal(ll_plan_value(plan, "NCCL_DEBUG_SUBSYS"), "INIT,NET,COLL");
	assert_string_equal(ll_plan_value(plan, "NCCL_DEBUG_FILE"), "/tmp/llmlaunch-1/nccl/nccl.%h.%p");
	assert_string_equal(ll_plan_value(plan, "nccl_log"), "/tmp/llmlaunch-1/nccl/nccl.%h.%p");
	ll_plan_free(plan);

	plan = test_plan();
	watched.environ = user_file;
	ll_launch_plan_job(plan, &watched);
	assert_string_equal(ll_plan_value(plan, "nccl_log"), "/scratch/logs/n.%h.%p");
	assert_null(ll_plan_get(plan, "NCCL_DEBUG_FILE"));
	assert_string_equal(ll_plan_value(plan, "NCCL_DEBUG"), "INFO");
	assert_int_equal(ll_launch_nccl_log_split("/scratch/logs/n.%h.%p", &dir, &prefix), 0);
	assert_string_equal(dir, "/scratch/logs");
	assert_string_equal(prefix, "n.");
	free(dir);
	free(prefix);
	assert_int_equal(ll_launch_nccl_log_split("/scratch/%h/n.%p", &dir, &prefix), -EINVAL);
	ll_plan_free(plan);

	plan = test_plan();
	watched.environ = user_level;
	ll_launch_plan_job(plan, &watched);
	assert_null(ll_plan_value(plan, "nccl_log"));
	assert_non_null(strstr(ll_plan_get(plan, "nccl_log")->reason, "NCCL_DEBUG=WARN (environment) without "
									   "NCCL_DEBUG_FILE"));
	assert_null(ll_plan_get(plan, "NCCL_DEBUG_FILE"));
	ll_plan_free(plan);
}

static void test_placement_roundtrip(void **state)
{
	struct ll_rank_placement r[] = {
		{ .local_rank = 0, .numa_node = -1, .cpuset = (char *)"0,2,4-5" },
		{ .local_rank = 1, .numa_node = 3, .cpuset = NULL },
		{ .local_rank = 2, .numa_node = -1, .cpuset = NULL },
	};
	struct ll_worker_placement w;
	struct ll_error err = { 0 };
	char *s = ll_placement_format(r, 3);

	(void)state;
	assert_string_equal(s, "0:cpus=0,2,4-5;1:mem=3");
	assert_int_equal(ll_placement_find(s, 0, &w, &err), 0);
	assert_int_equal(w.local_rank, 0);
	assert_string_equal(w.cpus, "0,2,4-5");
	assert_int_equal(w.mem, -1);
	ll_worker_placement_release(&w);
	assert_int_equal(ll_placement_find(s, 1, &w, &err), 0);
	assert_null(w.cpus);
	assert_int_equal(w.mem, 3);
	assert_int_equal(ll_placement_find(s, 2, &w, &err), -ENOENT);
	free(s);
	assert_null(ll_placement_format(r + 2, 1));

	assert_int_equal(ll_placement_find("0:cpus=1;x:mem=0", 1, &w, &err), -EINVAL);
	assert_string_equal(err.message, "malformed LLMLAUNCH_PLACEMENT entry 'x:mem=0'");
	ll_error_clear(&err);
	assert_int_equal(ll_placement_find("0:gpu=1", 0, &w, &err), -EINVAL);
	ll_error_clear(&err);
	assert_int_equal(ll_placement_find("0:mem=", 0, &w, &err), -EINVAL);
	ll_error_clear(&err);
	assert_int_equal(ll_placement_find("", 0, &w, &err), -ENOENT);
}

/* Binding changes the calling process, so it runs in a child that reports back
 * through its exit status. */
static void test_placement_apply(void **state)
{
	cpu_set_t set;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int st;
	pid_t pid;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	if (!CPU_ISSET(0, &set))
		skip();
	pid = fork();
	if (pid == 0) {
		struct ll_worker_placement w = { .local_rank = 0, .cpus = (char *)"0", .mem = 0 };
		unsigned long nodes[16] = { 0 };
		int mode = -1;

		if (ll_placement_apply_cpus(&w, NULL) < 0 || sched_getaffinity(0, sizeof(set), &set) < 0)
			_exit(10);
		if (CPU_COUNT(&set) != 1 || !CPU_ISSET(0, &set))
			_exit(11);
		if (ll_placement_apply_mem(&w, NULL) < 0)
			_exit(12);
		if (syscall(SYS_get_mempolicy, &mode, nodes, 1025UL, NULL, 0UL) < 0)
			_exit(13);
		_exit(mode == MPOL_BIND && nodes[0] == 1 ? 0 : 14);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);

	{
		struct ll_worker_placement w = { .local_rank = 1, .cpus = (char *)"0-", .mem = -1 };
		struct ll_error err = { 0 };

		assert_int_equal(ll_placement_apply_cpus(&w, &err), -EINVAL);
		assert_string_equal(err.message, "cannot bind local rank 1: bad CPU list '0-'");
		ll_error_clear(&err);
		w.cpus = ll_asprintf("%ld", cpus + 100);
		assert_int_equal(ll_placement_apply_cpus(&w, &err), -EINVAL);
		assert_non_null(strstr(err.message, "cannot bind local rank 1 to CPUs"));
		ll_error_clear(&err);
		free(w.cpus);
	}
}

static void test_worker_status(void **state)
{
	char dir[] = "/tmp/ll-test-status.XXXXXX";
	struct ll_error err = { 0 };
	int status = -1, rank = -1;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(ll_worker_status_collect(dir, &status, &rank), 0);
	/* Attempt 0: rank 1 fails first with 3, then torchrun stops rank 0 by SIGTERM. */
	assert_int_equal(ll_worker_status_write(dir, 1, 0, 3 << 8, &err), 0);
	usleep(2000);
	assert_int_equal(ll_worker_status_write(dir, 0, 0, SIGTERM, &err), 0);
	assert_int_equal(ll_worker_status_collect(dir, &status, &rank), 1);
	assert_int_equal(status, 3);
	assert_int_equal(rank, 1);
	/* The records were consumed. */
	assert_int_equal(ll_worker_status_collect(dir, &status, &rank), 0);

	/* A later attempt that succeeds wins over an earlier failure. */
	assert_int_equal(ll_worker_status_write(dir, 0, 0, 7 << 8, &err), 0);
	assert_int_equal(ll_worker_status_write(dir, 0, 1, 0, &err), 0);
	assert_int_equal(ll_worker_status_write(dir, 1, 1, 0, &err), 0);
	assert_int_equal(ll_worker_status_collect(dir, &status, &rank), 0);

	/* A worker killed by a signal reports 128+N. */
	assert_int_equal(ll_worker_status_write(dir, 0, 2, SIGKILL, &err), 0);
	assert_int_equal(ll_worker_status_collect(dir, &status, &rank), 1);
	assert_int_equal(status, 128 + SIGKILL);
	assert_int_equal(rmdir(dir), 0);

	assert_int_equal(ll_worker_status_write("/nonexistent-dir", 0, 0, 0, &err), -ENOENT);
	assert_non_null(strstr(err.message, "cannot write the exit record '/nonexistent-dir/rank-0-attempt-0'"));
	ll_error_clear(&err);
}

static void test_free_port(void **state)
{
	struct ll_error err = { 0 };
	int a = 0, b = 0;

	(void)state;
	assert_int_equal(ll_free_port("127.0.0.1", &a, &err), 0);
	assert_int_equal(ll_free_port("127.0.0.1", &b, &err), 0);
	assert_true(a > 0 && a < 65536);
	assert_true(b > 0 && b < 65536);
	assert_int_equal(ll_free_port("localhost", &a, &err), -EINVAL);
	assert_string_equal(err.message, "cannot find a free port on 'localhost': not a numeric address");
	ll_error_clear(&err);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int supervise_sh(const char *script, double grace, int *status, char **notes)
{
	char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)script, NULL };
	char *envp[] = { (char *)"PATH=/usr/bin:/bin", NULL };
	struct ll_buf *b = ll_calloc(1, sizeof(*b));
	struct ll_supervise_options o = { .grace_s = grace, .notify_data = b };
	struct ll_error err = { 0 };
	int r;

	ll_buf_init(b);
	r = ll_supervise(argv, envp, &o, status, &err);
	ll_error_clear(&err);
	*notes = ll_buf_detach(b);
	free(b);
	return r;
}

static void collect(void *data, const char *message)
{
	ll_buf_add(data, message);
	ll_buf_addc(data, '\n');
}

static void test_supervise_status(void **state)
{
	char *notes;
	int status = -1;

	(void)state;
	assert_int_equal(supervise_sh("exit 3", 5, &status, &notes), 0);
	assert_int_equal(status, 3);
	free(notes);
	assert_int_equal(supervise_sh("kill -USR1 $$", 5, &status, &notes), 0);
	assert_int_equal(status, 128 + SIGUSR1);
	free(notes);
	/* The child gets its own process group. */
	assert_int_equal(supervise_sh("test \"$(ps -o pgid= -p $$ | tr -d ' ')\" = $$", 5, &status, &notes), 0);
	assert_int_equal(status, 0);
	free(notes);
}

static void test_supervise_exec_error(void **state)
{
	char *argv[] = { (char *)"/nonexistent/torchrun", NULL };
	char *envp[] = { NULL };
	struct ll_error err = { 0 };
	int status = -1;

	(void)state;
	assert_int_equal(ll_supervise(argv, envp, NULL, &status, &err), -ENOENT);
	assert_string_equal(err.message, "cannot run '/nonexistent/torchrun': No such file or directory");
	ll_error_clear(&err);
}

static int supervise_notes(const char *script, double grace, int *status, struct ll_buf *notes)
{
	char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)script, NULL };
	char *envp[] = { (char *)"PATH=/usr/bin:/bin", NULL };
	struct ll_supervise_options o = { .grace_s = grace, .notify = collect, .notify_data = notes };
	struct ll_error err = { 0 };
	int r = ll_supervise(argv, envp, &o, status, &err);

	ll_error_clear(&err);
	return r;
}

static void test_supervise_forward(void **state)
{
	struct ll_buf notes;
	double t0;
	int status = -1;

	(void)state;
	ll_buf_init(&notes);
	/* The child asks its parent (us) to stop; we forward SIGTERM to the group and the
	 * child's trap turns it into exit 7, which we report as 128+15 like a shell. */
	assert_int_equal(supervise_notes("trap 'exit 7' TERM; kill -TERM $PPID; sleep 5 & wait", 5, &status, &notes), 0);
	assert_int_equal(status, 143);
	assert_non_null(strstr(notes.s, "forwarded to the job; SIGKILL in 5 s"));
	ll_buf_reset(&notes);

	/* A job that handles the signal and succeeds keeps its status. */
	assert_int_equal(supervise_notes("trap 'exit 0' TERM; kill -TERM $PPID; sleep 5 & wait", 5, &status, &notes), 0);
	assert_int_equal(status, 0);
	ll_buf_reset(&notes);

	/* A job that ignores SIGTERM is killed after the grace period. */
	t0 = now_s();
	assert_int_equal(supervise_notes("trap '' TERM; kill -TERM $PPID; sleep 20", 0.3, &status, &notes), 0);
	assert_true(now_s() - t0 < 5);
	assert_int_equal(status, 128 + SIGKILL);
	assert_non_null(strstr(notes.s, "sending SIGKILL"));
	ll_buf_reset(&notes);

	/* SIGUSR1 is forwarded and not a stop request. */
	assert_int_equal(supervise_notes("trap 'exit 5' USR1; kill -USR1 $PPID; sleep 5 & wait", 5, &status, &notes), 0);
	assert_int_equal(status, 5);
	ll_buf_release(&notes);
}

static void test_supervise_orphans(void **state)
{
	struct ll_buf notes;
	double t0 = now_s();
	int status = -1;

	(void)state;
	ll_buf_init(&notes);
	/* torchrun dying hard leaves workers behind: they are swept, not waited for. */
	assert_int_equal(supervise_notes("sleep 30 & sleep 30 & exit 0", 5, &status, &notes), 0);
	assert_int_equal(status, 0);
	assert_true(now_s() - t0 < 5);
	assert_non_null(strstr(notes.s, "outlived torchrun"));
	ll_buf_release(&notes);
}

struct watch_state {
	int calls, stop_at, fd;
};

static int watch_cb(void *data)
{
	struct watch_state *w = data;
	char c;

	if (w->fd >= 0)
		while (read(w->fd, &c, 1) == 1)
			;
	return ++w->calls >= w->stop_at ? 1 : 0;
}

static void test_supervise_watch(void **state)
{
	char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)"sleep 30 & wait", NULL };
	char *envp[] = { (char *)"PATH=/usr/bin:/bin", NULL };
	struct watch_state ws = { .stop_at = 3, .fd = -1 };
	struct ll_buf notes;
	struct ll_supervise_options o = { .grace_s = 5, .notify = collect, .watch = watch_cb,
					  .watch_data = &ws, .watch_fd = -1, .watch_interval_ms = 20 };
	struct ll_error err = { 0 };
	double t0 = now_s();
	int status = -1, pfd[2];

	(void)state;
	ll_buf_init(&notes);
	o.notify_data = &notes;
	/* Polled on its interval: the third call asks to stop, the job gets SIGTERM. */
	assert_int_equal(ll_supervise(argv, envp, &o, &status, &err), 0);
	assert_int_equal(status, 1);
	assert_int_equal(ws.calls, 3);
	assert_true(now_s() - t0 < 5);
	assert_non_null(strstr(notes.s, "stopping the job: SIGTERM sent"));
	ll_buf_reset(&notes);

	/* A readable descriptor wakes the watcher before its (long) interval. */
	assert_int_equal(pipe2(pfd, O_NONBLOCK | O_CLOEXEC), 0);
	assert_int_equal(write(pfd[1], "x", 1), 1);
	ws = (struct watch_state){ .stop_at = 1, .fd = pfd[0] };
	o.watch_fd = pfd[0];
	o.watch_interval_ms = 60000;
	t0 = now_s();
	assert_int_equal(ll_supervise(argv, envp, &o, &status, &err), 0);
	assert_int_equal(status, 1);
	assert_int_equal(ws.calls, 1);
	assert_true(now_s() - t0 < 5);
	close(pfd[0]);
	close(pfd[1]);
	ll_buf_release(&notes);
}

/* A dead process's pid (reaped, so kill() says ESRCH until it is reused). */
static pid_t dead_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	assert_true(pid > 0);
	waitpid(pid, NULL, 0);
	return pid;
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	close(fd);
}

/* A lock file as a launch on this host and boot (or another) signs it. */
static void sign(const char *path, const char *host, const char *boot)
{
	char self[256] = "";
	_cleanup_free_ char *id = NULL, *text = NULL;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(gethostname(self, sizeof(self) - 1), 0);
	assert_int_equal(ll_read_line("/proc/sys/kernel/random/boot_id", &id), 0);
	text = ll_asprintf("host %s\nboot %s\n", host ? host : self, boot ? boot : id);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* DIR/NAME, printf-style, in a buffer that the next call reuses. */
static const char *at(const char *dir, const char *fmt, ...) LL_PRINTF(2, 3);
static const char *at(const char *dir, const char *fmt, ...)
{
	static char buf[4096];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "%s/", dir);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	va_end(ap);
	return buf;
}

/* The job directory of a launcher killed with SIGKILL is removed at the next start;
 * nothing else is: a live launch's, one kept on purpose (no lock file), one whose PID
 * runs, a symbolic link, and never what a link inside points to. */
static void test_jobdir_stale(void **state)
{
	char tmp[] = "/tmp/ll-test-jobdir-XXXXXX";
	struct ll_jobdir live = { .lock_fd = -1 };
	struct ll_error err = { 0 };
	pid_t dead = dead_pid(), dead2 = dead_pid();
	char **removed = NULL;
	size_t n = 0;
	struct stat st;
	char *p;

	(void)state;
	assert_non_null(mkdtemp(tmp));
	/* Stale: dead PID, lock file not held, a log inside and a link out of it. */
	assert_int_equal(mkdir(at(tmp, "llmlaunch-%d", (int)dead), 0700), 0);
	sign(at(tmp, "llmlaunch-%d/" LL_JOBDIR_LOCK, (int)dead), NULL, NULL);
	assert_int_equal(mkdir(at(tmp, "llmlaunch-%d/attempt_0", (int)dead), 0700), 0);
	touch(at(tmp, "llmlaunch-%d/attempt_0/stderr.log", (int)dead));
	touch(at(tmp, "outside"));
	assert_int_equal(symlink("../../outside", at(tmp, "llmlaunch-%d/attempt_0/link", (int)dead)), 0);
	/* Kept on purpose: NCCL logs of a failed job, no lock file. */
	assert_int_equal(mkdir(at(tmp, "llmlaunch-%d-Ab12Cd", (int)dead2), 0700), 0);
	/* PID 1 runs; a symbolic link is never a job directory. */
	assert_int_equal(mkdir(at(tmp, "llmlaunch-1"), 0700), 0);
	touch(at(tmp, "llmlaunch-1/" LL_JOBDIR_LOCK));
	assert_int_equal(symlink("outside", at(tmp, "llmlaunch-%d", (int)dead2)), 0);
	/* Our own, live and locked. */
	assert_int_equal(ll_jobdir_create(tmp, &live, &err), 0);
	assert_string_equal(live.path, at(tmp, "llmlaunch-%d", (int)getpid()));

	assert_int_equal(ll_jobdir_clean_stale(tmp, &removed, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(removed[0], at(tmp, "llmlaunch-%d", (int)dead));
	assert_int_equal(lstat(removed[0], &st), -1);
	ll_strv_free(removed, n);
	assert_int_equal(stat(at(tmp, "outside"), &st), 0); /* the link was removed, not its target */
	unlink(at(tmp, "outside"));
	assert_int_equal(rmdir(at(tmp, "llmlaunch-%d-Ab12Cd", (int)dead2)), 0);
	assert_int_equal(unlink(at(tmp, "llmlaunch-1/" LL_JOBDIR_LOCK)), 0);
	assert_int_equal(rmdir(at(tmp, "llmlaunch-1")), 0);
	assert_int_equal(unlink(at(tmp, "llmlaunch-%d", (int)dead2)), 0);
	assert_int_equal(stat(live.path, &st), 0);

	/* A child holding its own job directory's lock: while it runs, not stale; once
	 * killed with SIGKILL (it cleans nothing), stale. */
	{
		int ready[2];
		char c;
		pid_t child;

		assert_int_equal(pipe(ready), 0);
		child = fork();
		if (child == 0) {
			struct ll_jobdir mine = { .lock_fd = -1 };

			if (ll_jobdir_create(tmp, &mine, NULL) < 0)
				_exit(1);
			if (write(ready[1], "x", 1) != 1)
				_exit(1);
			pause();
			_exit(0);
		}
		assert_int_equal(read(ready[0], &c, 1), 1);
		assert_int_equal(ll_jobdir_clean_stale(tmp, &removed, &n), 0);
		assert_int_equal(n, 0);
		free(removed);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		assert_int_equal(ll_jobdir_clean_stale(tmp, &removed, &n), 0);
		assert_int_equal(n, 1);
		assert_string_equal(removed[0], at(tmp, "llmlaunch-%d", (int)child));
		ll_strv_free(removed, n);
		close(ready[0]);
		close(ready[1]);
	}

	/* run --exec: the launcher becomes torchrun, and the lock goes with it. Its
	 * directory is named by a PID this process cannot see (a launcher in another
	 * PID namespace, or on another node sharing TMPDIR: kill() says ESRCH), so only
	 * the lock tells that it runs. Killed, it is stale. */
	{
		int ready[2];
		char c;
		pid_t child;

		assert_int_equal(pipe(ready), 0);
		child = fork();
		if (child == 0) {
			struct ll_jobdir mine = { .lock_fd = -1 };
			char *args[] = { "sleep", "60", NULL };

			close(ready[0]);
			if (ll_jobdir_create(tmp, &mine, NULL) < 0 || rename(mine.path, at(tmp, "llmlaunch-%d", (int)dead)) < 0 ||
			    write(ready[1], "x", 1) != 1)
				_exit(1);
			close(ready[1]);
			execvp("sleep", args);
			_exit(127);
		}
		close(ready[1]);
		assert_int_equal(read(ready[0], &c, 1), 1);
		/* judged only once the child is sleep itself */
		for (int i = 0; i < 200; i++) {
			_cleanup_free_ char *comm = NULL;

			if (ll_read_line(at("/proc", "%d/comm", (int)child), &comm) == 0 && strcmp(comm, "sleep") == 0)
				break;
			usleep(10000);
		}
		assert_int_equal(ll_jobdir_clean_stale(tmp, &removed, &n), 0);
		assert_int_equal(n, 0);
		free(removed);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		assert_int_equal(ll_jobdir_clean_stale(tmp, &removed, &n), 0);
		assert_int_equal(n, 1);
		assert_string_equal(removed[0], at(tmp, "llmlaunch-%d", (int)dead));
		ll_strv_free(removed, n);
		close(ready[0]);
	}

	/* Another host's directory (TMPDIR shared between nodes, where this host's
	 * flock() proves nothing) and an unsigned lock file are never judged; this
	 * host's directory from an earlier boot is stale whatever its lock says. */
	assert_int_equal(mkdir(at(tmp, "llmlaunch-%d", (int)dead), 0700), 0);
	sign(at(tmp, "llmlaunch-%d/" LL_JOBDIR_LOCK, (int)dead), "other-node", NULL);
	assert_int_equal(mkdir(at(tmp, "llmlaunch-%d-Zz", (int)dead), 0700), 0);
	touch(at(tmp, "llmlaunch-%d-Zz/" LL_JOBDIR_LOCK, (int)dead));
	assert_int_equal(mkdir(at(tmp, "llmlaunch-%d", (int)dead2), 0700), 0);
	sign(at(tmp, "llmlaunch-%d/" LL_JOBDIR_LOCK, (int)dead2), NULL, "00000000-0000-4000-8000-000000000000");
	assert_int_equal(ll_jobdir_clean_stale(tmp, &removed, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(removed[0], at(tmp, "llmlaunch-%d", (int)dead2));
	ll_strv_free(removed, n);
	assert_int_equal(unlink(at(tmp, "llmlaunch-%d/" LL_JOBDIR_LOCK, (int)dead)), 0);
	assert_int_equal(rmdir(at(tmp, "llmlaunch-%d", (int)dead)), 0);
	assert_int_equal(unlink(at(tmp, "llmlaunch-%d-Zz/" LL_JOBDIR_LOCK, (int)dead)), 0);
	assert_int_equal(rmdir(at(tmp, "llmlaunch-%d-Zz", (int)dead)), 0);

	/* A normal end: the lock file goes, then the directory when only empty
	 * directories are left. */
	assert_int_equal(mkdir(at(live.path, "status"), 0700), 0);
	p = ll_strdup(live.path);
	ll_jobdir_release(&live);
	assert_int_equal(stat(p, &st), -1);
	free(p);
	assert_int_equal(rmdir(tmp), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_option_names),
		cmocka_unit_test(test_bound_launch),
		cmocka_unit_test(test_torch_nccl_versions),
		cmocka_unit_test(test_each_option_once),
		cmocka_unit_test(test_nccl_log),
		cmocka_unit_test(test_unbound_and_module),
		cmocka_unit_test(test_contradictions),
		cmocka_unit_test(test_placement_roundtrip),
		cmocka_unit_test(test_placement_apply),
		cmocka_unit_test(test_worker_status),
		cmocka_unit_test(test_free_port),
		cmocka_unit_test(test_supervise_status),
		cmocka_unit_test(test_supervise_exec_error),
		cmocka_unit_test(test_supervise_forward),
		cmocka_unit_test(test_supervise_orphans),
		cmocka_unit_test(test_supervise_watch),
		cmocka_unit_test(test_jobdir_stale),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
