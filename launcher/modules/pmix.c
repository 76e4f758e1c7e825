/* The PMIx backend (srun --mpi=pmix, mpirun), built as the module llmlaunch-pmix.so:
 * libpmix brings libevent, munge and a thread of its own, so it loads only under a
 * PMIx launcher (agree-run.c calls agree_pmix_run(), launcher/agree/agree-pmix.c).
 * The module resolves llmlaunch's own functions from the binary that loads it.
 *
 * One llmlaunch per node:
 *
 *   rank 0 listens on its candidate master port (ll_rdzv_listen)
 *   put  llmlaunch.r  the small record (digests, host key, rank 0's port, switch)
 *   put  llmlaunch.s  the full summary: rank 0 only, everyone needs it
 *   commit, fence with PMIX_COLLECT_DATA           <- tiny records + one summary
 *      (waiting longer than a second: check in with rank 0 by name, which counts who is
 *      here and tells everyone who is missing: agree-rdzv.c)
 *   decide (agree.c) on the records
 * and only when digests differ (the same test on every node, so fences stay matched):
 *   put  llmlaunch.s  the first node of each digest publishes its summary, commit
 *   fence with PMIX_COLLECT_DATA                   <- one summary per distinct digest
 *   decide, reading only what the fence delivered (never a peer on demand: Slurm's
 *   PMIx plugin can drop a direct-modex request, and a retry waits on the lost one)
 * then, for `run` (o->prove):
 *   every node connects to rank 0 on the master address and port through its
 *   interface; rank 0 answers all once every node is there (agree-rdzv.c). When a
 *   node cannot, each node publishes what it tried (llmlaunch.u) and one more fence
 *   collects it, so every node names the same nodes, interfaces and addresses.
 * A homogeneous cluster thus costs one fence, as a bare PMIx exchange does, plus one
 * connection a node to rank 0; the data each node receives grows by a few dozen
 * bytes per node (DESIGN.md, stage 3).
 *
 * Slurm's PMIx server ignores PMIX_TIMEOUT on fences, so every wait here is
 * non-blocking with our own deadline. */
#include "llmlaunch/agree-pmix.h"
#include "llmlaunch/clock.h"
#include "llmlaunch/module.h"
#include "llmlaunch/port.h"

#include <errno.h>
#include <fcntl.h>
#include <pmix.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KEY_RECORD "llmlaunch.r"
#define KEY_SUMMARY "llmlaunch.s"
#define KEY_UNREACH "llmlaunch.u"
/* A node that has waited this long for the others checks in with rank 0. */
#define CHECKIN_AFTER_S 1.0
/* Failures named one by one in the rendezvous message before "and N more". */
#define UNREACH_SHOWN 4

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
/* Written when a request finishes, so a wait that also serves the check-in wakes. */
static int wake_pipe[2] = { -1, -1 };

/* One outstanding non-blocking call. When the waiter gives up it marks the request
 * abandoned and the callback, which may still come, frees it. */
struct request {
	bool done, abandoned;
	pmix_status_t status;
};

static struct request *request_new(void)
{
	return ll_calloc(1, sizeof(struct request));
}

static void finish(struct request *q, pmix_status_t status)
{
	pthread_mutex_lock(&lock);
	if (q->abandoned) {
		pthread_mutex_unlock(&lock);
		free(q);
		return;
	}
	q->status = status;
	q->done = true;
	pthread_cond_broadcast(&cond);
	if (wake_pipe[1] >= 0 && write(wake_pipe[1], "x", 1) < 0) {
		/* full: the waiter is awake already */
	}
	pthread_mutex_unlock(&lock);
}

static void op_cb(pmix_status_t status, void *cbdata)
{
	finish(cbdata, status);
}

/* The request is done (freed, true) or, past the deadline, abandoned (false). */
static bool request_settle(struct request *q, double deadline, pmix_status_t *ret_status)
{
	bool done;

	pthread_mutex_lock(&lock);
	done = q->done;
	if (!done && ll_now_s() >= deadline)
		q->abandoned = true;
	pthread_mutex_unlock(&lock);
	if (done) {
		*ret_status = q->status;
		free(q);
	}
	return done;
}

/* Wait for `q` until the monotonic `deadline` on the condition variable alone. */
static bool request_wait(struct request *q, double deadline, pmix_status_t *ret_status)
{
	pthread_mutex_lock(&lock);
	while (!q->done) {
		double left = deadline - ll_now_s();
		struct timespec ts;
		if (left <= 0)
			break;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)left;
		ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
		if (ts.tv_nsec >= 1000000000L)
			ts.tv_sec++, ts.tv_nsec -= 1000000000L;
		pthread_cond_timedwait(&cond, &lock, &ts);
	}
	pthread_mutex_unlock(&lock);
	return request_settle(q, 0, ret_status);
}

struct pmix_state {
	pmix_proc_t me;
	uint32_t size;
	double t0, deadline;        /* for the whole agreement */
	const struct ll_summary *self;
	const struct ll_agree_options *o;
	bool not_slurm;             /* hints in mpirun's terms (ll_agree_pmix_args) */
	const char *self_name;      /* the launcher's name for this node, NULL (ll_agree_pmix_args) */
	struct ll_agree_node *nodes;
	char **names;               /* by rank */
	struct ll_summary **cache;  /* read summaries by rank */
	struct ll_rdzv_job job;
	int ports[LL_RDZV_PORTS];
	size_t n_ports;
	struct ll_rdzv *rdzv;       /* rank 0: its listener; others: the check-in, once started */
	char *checkin_why;          /* why this node could not check in */
	bool checkin_off;           /* everyone arrived: no more check-ins */
	bool initialized;
};

/* How long a Get of collected data may wait on this node's server. */
#define LOCAL_GET_TIMEOUT_S 10

/* A blocking Get for values the server holds already (job info, collected data);
 * `local`: data a collecting fence delivered. PMIx 4's clients see it in their own
 * store (the server's shared-memory store), so PMIX_OPTIONAL finds it without asking
 * anyone; PMIx 5's keep it in this node's server only (no shared-memory store:
 * PMIX_OPTIONAL answers PMIX_ERR_NOT_FOUND, seen with OpenPMIx 5.0.7 under Slurm
 * 24.11), so a miss asks the server, bounded: it has every peer's data since the
 * fence and answers from it. */
static int get_string(const pmix_proc_t *proc, const char *key, bool local, char **ret)
{
	pmix_value_t *v = NULL;
	pmix_info_t info;
	bool yes = true;
	int timeout = LOCAL_GET_TIMEOUT_S;
	pmix_status_t rc;

	PMIX_INFO_LOAD(&info, PMIX_OPTIONAL, &yes, PMIX_BOOL);
	rc = PMIx_Get(proc, key, local ? &info : NULL, local ? 1 : 0, &v);
	PMIX_INFO_DESTRUCT(&info);
	if (rc == PMIX_ERR_NOT_FOUND && local) {
		PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &timeout, PMIX_INT);
		rc = PMIx_Get(proc, key, &info, 1, &v);
		PMIX_INFO_DESTRUCT(&info);
	}
	if (rc != PMIX_SUCCESS)
		return rc;
	if (v->type != PMIX_STRING) {
		PMIX_VALUE_RELEASE(v);
		return PMIX_ERR_BAD_PARAM;
	}
	*ret = ll_strdup(v->data.string);
	PMIX_VALUE_RELEASE(v);
	return PMIX_SUCCESS;
}

static int get_number(const pmix_proc_t *proc, const char *key, uint32_t *ret)
{
	pmix_value_t *v = NULL;
	pmix_status_t rc = PMIx_Get(proc, key, NULL, 0, &v);

	if (rc != PMIX_SUCCESS)
		return rc;
	switch (v->type) {
	case PMIX_UINT32:
		*ret = v->data.uint32;
		break;
	case PMIX_UINT16:
		*ret = v->data.uint16;
		break;
	default:
		rc = PMIX_ERR_BAD_PARAM;
	}
	PMIX_VALUE_RELEASE(v);
	return rc;
}

static pmix_proc_t rank_proc(const struct pmix_state *st, pmix_rank_t rank)
{
	pmix_proc_t p;

	PMIX_PROC_CONSTRUCT(&p);
	PMIX_LOAD_PROCID(&p, st->me.nspace, rank);
	return p;
}

static int fetch_summary(void *data, size_t i, const struct ll_summary **ret, struct ll_error *err)
{
	struct pmix_state *st = data;
	_cleanup_free_ char *text = NULL;
	pmix_proc_t p;
	pmix_status_t rc;
	int r;

	if (i == st->me.rank) {
		*ret = st->self;
		return 0;
	}
	if (!st->cache[i]) {
		/* Delivered by a fence with the data (rank 0's by the first, the others' by
		 * the second): in this process already. */
		p = rank_proc(st, (pmix_rank_t)i);
		rc = get_string(&p, KEY_SUMMARY, true, &text);
		if (rc != PMIX_SUCCESS)
			return ll_error_set(err, -EIO, "cannot read the summary of node '%s' through PMIx: %s",
					    st->names[i], PMIx_Error_string(rc));
		r = ll_summary_parse(text, st->names[i], &st->cache[i], err);
		if (r < 0)
			return r;
	}
	*ret = st->cache[i];
	return 0;
}

static bool have_summary(void *data, size_t i)
{
	struct pmix_state *st = data;

	return i == st->me.rank || st->cache[i] || ll_agree_publishes_summary(st->nodes, st->size, i);
}

static int put_string(const char *key, char *value)
{
	pmix_value_t v;

	PMIX_VALUE_CONSTRUCT(&v);
	v.type = PMIX_STRING;
	v.data.string = value;
	return PMIx_Put(PMIX_GLOBAL, key, &v);
}

static void drain_wake(void)
{
	char buf[64];

	while (read(wake_pipe[0], buf, sizeof(buf)) > 0) {
	}
}

/* Start this node's check-in with rank 0, once. */
static void start_checkin(struct pmix_state *st)
{
	struct ll_error e = { 0 };

	if (st->rdzv || st->checkin_why || st->me.rank == 0)
		return;
	if (ll_rdzv_checkin(&st->job, st->names[0], st->ports, st->n_ports, &st->rdzv, &e) < 0) {
		st->checkin_why = ll_asprintf("cannot check in with %s (node 0): %s", st->names[0], e.message);
		ll_error_clear(&e);
	}
}

/* Wait for `q` until the deadline, serving (rank 0) or following (others, after a
 * second) the check-in meanwhile. False on timeout, or when rank 0 gave up first
 * (its verdict is then in st->rdzv). */
static bool wait_request(struct pmix_state *st, struct request *q, pmix_status_t *ret_status)
{
	double start = ll_now_s();

	for (;;) {
		double now = ll_now_s(), until = st->deadline;

		if (request_settle(q, st->deadline, ret_status))
			return true;
		if (now >= st->deadline || ll_rdzv_verdict(st->rdzv))
			return request_settle(q, 0, ret_status); /* true only if it finished just now */
		if (!st->rdzv && !st->checkin_why && !st->checkin_off && st->me.rank != 0) {
			if (now >= start + CHECKIN_AFTER_S)
				start_checkin(st);
			else if (start + CHECKIN_AFTER_S < until)
				until = start + CHECKIN_AFTER_S;
		}
		if (st->rdzv) {
			ll_rdzv_run(st->rdzv, wake_pipe[0], until);
		} else {
			struct pollfd pfd = { .fd = wake_pipe[0], .events = POLLIN };
			poll(&pfd, 1, ll_poll_ms_until(until));
		}
		drain_wake();
	}
}

/* A fence with our own deadline. */
static int fence(struct pmix_state *st, bool collect, pmix_status_t *ret_rc)
{
	struct request *q = request_new();
	pmix_info_t info;
	bool yes = true;
	pmix_status_t rc;

	PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
	rc = PMIx_Fence_nb(NULL, 0, collect ? &info : NULL, collect ? 1 : 0, op_cb, q);
	PMIX_INFO_DESTRUCT(&info);
	if (rc != PMIX_SUCCESS) {
		free(q);
		*ret_rc = rc;
		return -EIO;
	}
	if (!wait_request(st, q, &rc)) {
		*ret_rc = PMIX_ERR_TIMEOUT;
		return -ETIMEDOUT;
	}
	*ret_rc = rc;
	return rc == PMIX_SUCCESS ? 0 : -EIO;
}

/* The name of rank's node, the same on every node. Another node's rank: PMIX_HOSTNAME,
 * which the servers take from the launcher's job map (Slurm's node names, mpirun's
 * hostfile). This process: the launcher's own name for this node when it gives one
 * (`self_name`), because this node's server may answer PMIX_HOSTNAME for its local
 * ranks with its own host name instead (OpenPMIx 5 under Slurm 24.11, which does
 * not hand its node name to the server), and a node's host name need not be its
 * Slurm name (a domain, or several slurmd on one host). */
static char *rank_name(const struct pmix_state *st, pmix_rank_t rank)
{
	pmix_proc_t p;
	char *name = NULL;

	if (rank == st->me.rank && st->self_name)
		return ll_strdup(st->self_name);
	PMIX_PROC_CONSTRUCT(&p);
	PMIX_LOAD_PROCID(&p, st->me.nspace, rank);
	if (get_string(&p, PMIX_HOSTNAME, false, &name) != PMIX_SUCCESS)
		name = ll_asprintf("rank %u", rank);
	return name;
}

/* The number of nodes the job runs on: the entries of the job's node list
 * (PMIX_NODE_LIST, PMIx 4 and later), else PMIX_NUM_NODES, else `size`. The list
 * first, the job's own by the standard: PRRTE (Open MPI 5.0.7's mpirun) answered
 * PMIX_NUM_NODES with 8 for a job on 4 nodes (mpirun on a fifth host) while its node
 * list named the 4; Slurm 22.05 and 24.11 and Open MPI 4.1 give the same count both
 * ways. */
static uint32_t job_nodes(const pmix_proc_t *wild, uint32_t size)
{
	_cleanup_free_ char *list = NULL;
	uint32_t n = 0;

	if (get_string(wild, PMIX_NODE_LIST, false, &list) == PMIX_SUCCESS) {
		for (const char *s = list; *s;) {
			size_t len = strcspn(s, ",");
			if (len > 0)
				n++;
			s += len + (s[len] == ',');
		}
		if (n > 0)
			return n;
	}
	if (get_number(wild, PMIX_NUM_NODES, &n) == PMIX_SUCCESS && n > 0)
		return n;
	return size;
}

/* The agreement's deadline passed (or rank 0 gave up first): name the missing nodes,
 * as rank 0 counted them through the check-in. Rank 0 tells every node that checked
 * in, so all print the same. */
static int timeout_error(struct pmix_state *st, double timeout, struct ll_error *err)
{
	const char *verdict = ll_rdzv_verdict(st->rdzv);
	_cleanup_free_ char *names = NULL, *why = NULL;
	size_t n = 0;

	if (verdict) {
		ll_error_set(err, -ETIMEDOUT, "%s", verdict);
	} else if (st->rdzv && ll_rdzv_missing(st->rdzv, &n, &names, &why) && n > 0) {
		if (st->me.rank == 0 && n + 1 == st->size)
			/* Not one check-in: they did not come, or cannot reach this node by name. */
			ll_error_set(err, -ETIMEDOUT,
				     "agreement timed out after %.0f s: no other node checked in with %s (node 0): %s did not "
				     "arrive, or cannot reach %s by name",
				     timeout, st->names[0], names, st->names[0]);
		else
			ll_error_set(err, -ETIMEDOUT, "agreement timed out after %.0f s: %zu of %u nodes did not arrive: %s",
				     timeout, n, st->size, names);
		if (st->me.rank == 0) {
			ll_rdzv_send_verdict(st->rdzv, err->message);
			if (st->o->missing_out) {
				free(*st->o->missing_out);
				*st->o->missing_out = ll_rdzv_missing_hostlist(st->rdzv);
			}
		}
	} else {
		ll_error_set(err, -ETIMEDOUT, "agreement timed out after %.0f s waiting for the other %u nodes; %s", timeout,
			     st->size - 1,
			     why			? why
			     : st->checkin_why ? st->checkin_why
			     : st->me.rank == 0 ? "every node checked in, but PMIx's exchange did not complete"
						: "which did not arrive is not known");
	}
	ll_error_hint(err,
		      "every node must start llmlaunch within --agree-timeout (%g s) of the others: check that node's "
		      "log, or raise --agree-timeout for slow starts",
		      timeout);
	return -ETIMEDOUT;
}

/* PMIx_Commit has no non-blocking form and blocks for good when the server is stuck
 * talking to peers that gave up (a node that arrives after the others timed out).
 * Run it on a helper thread and stop waiting at the deadline; the thread is left
 * behind, blocked, until the process ends. */
static void *commit_thread(void *data)
{
	finish(data, PMIx_Commit());
	return NULL;
}

static int commit(double deadline, pmix_status_t *ret_rc)
{
	struct request *q = request_new();
	pthread_attr_t attr;
	pthread_t t;
	int r;

	sigset_t all, old;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old); /* the helper takes no signals either */
	r = pthread_create(&t, &attr, commit_thread, q);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		free(q);
		*ret_rc = PMIx_Commit();
		return *ret_rc == PMIX_SUCCESS ? 0 : -EIO;
	}
	if (!request_wait(q, deadline, ret_rc)) {
		*ret_rc = PMIX_ERR_TIMEOUT;
		return -ETIMEDOUT;
	}
	return *ret_rc == PMIX_SUCCESS ? 0 : -EIO;
}

static int pmix_fail(struct ll_error *err, pmix_status_t rc, const char *what)
{
	return ll_error_set(err, -EIO, "%s: %s", what, PMIx_Error_string(rc));
}

/* Put `value` under `key` (NULL: nothing new) and commit. */
static int publish(struct pmix_state *st, const char *key, char *value, const char *what, struct ll_error *err)
{
	pmix_status_t rc = key ? put_string(key, value) : PMIX_SUCCESS;
	int r = rc == PMIX_SUCCESS ? commit(st->deadline, &rc) : -EIO;

	if (r == -ETIMEDOUT) {
		ll_error_set(err, -ETIMEDOUT,
			     "agreement timed out after %.0f s: the PMIx server did not take this node's %s "
			     "(the other nodes may have given up waiting for it)",
			     ll_now_s() - st->t0, what);
		ll_error_hint(err, "every node must start llmlaunch within --agree-timeout of the others");
		return r;
	}
	if (r < 0) {
		char *w = ll_asprintf("cannot publish this node's %s through PMIx", what);
		pmix_fail(err, rc, w);
		free(w);
	}
	return r;
}

/* After a failed proof: one more collective exchange carries what each failing node
 * tried, so every node names the same nodes, interfaces and addresses. On any trouble
 * with it, the node keeps what it knows alone (its own failure, rank 0's verdict). */
static void share_failures(struct pmix_state *st, const struct ll_rdzv_outcome *out, double reach_s,
			   struct ll_error *err)
{
	struct ll_buf msg, who;
	size_t n = 0;
	pmix_status_t rc;

	st->deadline = ll_now_s() + reach_s + 5.0;
	st->checkin_off = true;
	/* Every node says something, "" when it reached rank 0: a key some peers never
	 * put costs PMIx 5 a wait for each of them (its Get of a missing key waits for
	 * the peer instead of answering "not found"). */
	if (put_string(KEY_UNREACH, out->self_failed ? out->detail : "") != PMIX_SUCCESS)
		return;
	if (commit(st->deadline, &rc) < 0 || fence(st, true, &rc) < 0)
		return;
	ll_buf_init(&msg);
	ll_buf_init(&who);
	for (uint32_t i = 0; i < st->size; i++) {
		_cleanup_free_ char *text = NULL;
		pmix_proc_t p = rank_proc(st, i);

		if (i == st->me.rank ? !out->self_failed
				     : get_string(&p, KEY_UNREACH, true, &text) != PMIX_SUCCESS || !*text)
			continue;
		if (n < UNREACH_SHOWN)
			ll_buf_addf(&msg, "%s%s", n ? "; " : "", i == st->me.rank ? out->detail : text);
		if (n < LL_AGREE_NAMES_SHOWN)
			ll_buf_addf(&who, "%s%s", n ? "," : "", st->names[i]);
		n++;
	}
	if (n > UNREACH_SHOWN)
		ll_buf_addf(&msg, "; and %zu more nodes cannot reach it", n - UNREACH_SHOWN);
	if (n > 0) {
		_cleanup_free_ char *how =
			ll_agree_leave_out(st->not_slurm ? LL_LEAVE_OUT_MPIRUN : LL_LEAVE_OUT_SRUN, who.s);

		ll_error_set(err, -EHOSTUNREACH, "%s", msg.s);
		ll_error_hint(err,
			      "nothing was started: give those nodes a working interface in the agreed subnet, or a "
			      "route to the master ('llmlaunch explain' shows it), or leave them out (%s)",
			      how);
	}
	ll_buf_release(&msg);
	ll_buf_release(&who);
}

static int prove(struct pmix_state *st, const struct ll_agree_pmix_args *a, const struct ll_agree_result *res,
		 const struct ll_agree_deadlines *dl, struct ll_error *err)
{
	struct ll_rdzv_outcome out = { 0 };
	struct ll_rdzv_proof p = {
		.master_addr = res->master_addr,
		.master_port = res->master_port,
		.ifname = a->proof_ifname ? a->proof_ifname : res->socket_ifname,
		.deadline = ll_now_s() + dl->reach_s,
	};
	int r;

	p.arrive_deadline = p.deadline;
	r = ll_rdzv_prove(&st->job, st->me.rank == 0 ? st->rdzv : NULL, &p, &out, err);
	/* The verdict is out: the master port is torchrun's from now on. */
	ll_rdzv_closep(&st->rdzv);
	st->checkin_off = true;
	if (r == -EHOSTUNREACH) {
		if (out.self_failed)
			ll_error_hint(err, "nothing was started: give this node a working interface in the agreed subnet "
					   "('llmlaunch explain' shows it), or leave it out");
		share_failures(st, &out, dl->reach_s, err);
	}
	ll_rdzv_outcome_release(&out);
	return r;
}

/* Connect to the launcher's PMIx server and read the job: its size, and that one
 * llmlaunch runs per node. */
static int connect_job(struct pmix_state *st, struct ll_error *err)
{
	pmix_proc_t wild;
	pmix_status_t rc;
	uint32_t n_nodes = 0, local = 0;
	sigset_t all_signals, old_mask;
	int r;

	/* Threads start with their creator's signal mask. libpmix's progress thread must
	 * never take a signal meant for this process: the supervisor later waits for
	 * SIGCHLD and forwarded signals on a signalfd, which only sees signals that every
	 * thread blocks (a SIGCHLD taken by that thread left torchrun a zombie, unseen). */
	sigfillset(&all_signals);
	pthread_sigmask(SIG_BLOCK, &all_signals, &old_mask);
	rc = PMIx_Init(&st->me, NULL, 0);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	if (rc != PMIX_SUCCESS) {
		r = pmix_fail(err, rc, "cannot connect to the launcher's PMIx server");
		ll_error_hint(err, "PMIX_* variables are set but no server answers; unset them to run without PMIx");
		return r;
	}
	st->initialized = true;
	if (wake_pipe[0] < 0 && pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return ll_error_set(err, -errno, "cannot make a pipe: %s", strerror(errno));

	PMIX_PROC_CONSTRUCT(&wild);
	PMIX_LOAD_PROCID(&wild, st->me.nspace, PMIX_RANK_WILDCARD);
	if ((rc = get_number(&wild, PMIX_JOB_SIZE, &st->size)) != PMIX_SUCCESS)
		return pmix_fail(err, rc, "cannot read the job size from PMIx");
	n_nodes = job_nodes(&wild, st->size);
	if (get_number(&wild, PMIX_LOCAL_SIZE, &local) != PMIX_SUCCESS)
		local = 1;
	/* One llmlaunch per node is the contract: it starts the node's workers itself.
	 * Every process sees the same job size and node count, so all of them stop. */
	if (st->size != n_nodes || local > 1) {
		_cleanup_free_ char *host = rank_name(st, st->me.rank);

		r = ll_error_set(err, -EINVAL,
				 "%u llmlaunch processes on %u node%s (%u on '%s'): llmlaunch runs once per node "
				 "and starts that node's workers itself",
				 st->size, n_nodes, n_nodes == 1 ? "" : "s", local, host);
		ll_error_hint(err, "srun -N %u --ntasks-per-node=1 ... (mpirun: --map-by ppr:1:node)", n_nodes);
		return r;
	}
	/* Every node's name is job information, here before any exchange. */
	st->names = ll_calloc(st->size, sizeof(char *));
	for (uint32_t i = 0; i < st->size; i++)
		st->names[i] = rank_name(st, i);
	return 0;
}

/* The master port: the asked-for one alone (the summaries prove every node asked for
 * it), else the first of the job's eight candidates free on rank 0, which listens on
 * it from now on (check-ins and the proof come to it). Rank 0 writes it in its record. */
static int master_port(struct pmix_state *st, const struct ll_agree_pmix_args *a, struct ll_agree_node *rec,
		       struct ll_error *err)
{
	int r;

	ll_rdzv_ports(a->port_base, st->ports);
	st->n_ports = LL_RDZV_PORTS;
	if (a->port_asked > 0) {
		st->ports[0] = a->port_asked;
		st->n_ports = 1;
	}
	rec->port = 0;
	if (st->me.rank != 0)
		return 0;
	if (st->size == 1) {
		rec->port = a->port_asked;
		return a->port_asked > 0 ? 0 : ll_free_port_any(&rec->port, err);
	}
	r = ll_rdzv_listen(&st->job, st->ports, st->n_ports, &st->rdzv, err);
	if (r < 0)
		return r;
	rec->port = ll_rdzv_port(st->rdzv);
	if (a->port_asked > 0 && rec->port != a->port_asked) {
		ll_error_set(err, -EADDRINUSE, "master port %d (asked for on the command line or by a profile) is in use on "
					       "node %s", a->port_asked, st->names[0]);
		ll_error_hint(err, "choose another --master-port (the same on every node), or leave it out: node 0 then "
				   "picks a free one");
		return -EADDRINUSE;
	}
	return 0;
}

/* Everyone's small record, rank 0's full summary; when some node's digests differ,
 * one more collective exchange of the summaries the decision reads. Fills st->nodes. */
static int exchange(struct pmix_state *st, const struct ll_agree_node *rec, const struct ll_agree_deadlines *dl,
		    struct ll_error *err)
{
	_cleanup_free_ char *record = ll_agree_node_format(rec), *summary = ll_summary_serialize(st->self);
	pmix_status_t rc;
	bool odd = false;
	int r;

	if (st->me.rank == 0 && put_string(KEY_SUMMARY, summary) != PMIX_SUCCESS)
		return ll_error_set(err, -EIO, "cannot publish this node's summary through PMIx");
	r = publish(st, KEY_RECORD, record, "record", err);
	if (r < 0)
		return r;
	r = fence(st, true, &rc);
	if (r == -ETIMEDOUT)
		return timeout_error(st, dl->agree_s, err);
	if (r < 0)
		return pmix_fail(err, rc, "the PMIx fence failed");
	if (st->me.rank != 0) {
		/* Everyone is here: the check-in has done its work. */
		ll_rdzv_progress_done(st->rdzv, true);
		ll_rdzv_closep(&st->rdzv);
	}

	st->nodes = ll_calloc(st->size, sizeof(*st->nodes));
	st->cache = ll_calloc(st->size, sizeof(*st->cache));
	for (uint32_t i = 0; i < st->size; i++) {
		pmix_proc_t p = rank_proc(st, i);
		_cleanup_free_ char *text = NULL;

		st->nodes[i].name = ll_strdup(st->names[i]);
		if (i == st->me.rank)
			text = ll_strdup(record);
		else if ((rc = get_string(&p, KEY_RECORD, true, &text)) != PMIX_SUCCESS)
			return ll_error_set(err, -EIO, "cannot read the record of node '%s' through PMIx: %s", st->names[i],
					    PMIx_Error_string(rc));
		r = ll_agree_node_parse(text, st->names[i], &st->nodes[i], err);
		if (r < 0)
			return r;
		odd |= st->nodes[i].hw_digest != st->nodes[0].hw_digest || st->nodes[i].net_digest != st->nodes[0].net_digest;
	}
	if (!odd)
		return 0;
	/* Some node differs: the first node of each digest publishes its summary and one
	 * more collective exchange delivers them all. */
	r = publish(st, st->me.rank != 0 && ll_agree_publishes_summary(st->nodes, st->size, st->me.rank) ? KEY_SUMMARY : NULL,
		    summary, "summary", err);
	if (r < 0)
		return r;
	r = fence(st, true, &rc);
	if (r < 0)
		return r == -ETIMEDOUT ? ll_error_set(err, r, "agreement timed out after %.0f s: a node stopped between the "
							      "two exchanges", dl->agree_s)
				       : pmix_fail(err, rc, "the second PMIx fence failed");
	if (st->me.rank != 0) {
		ll_rdzv_progress_done(st->rdzv, true);
		ll_rdzv_closep(&st->rdzv);
	}
	return 0;
}

/* The decision, the proof, and the cluster it gives. */
static int decide(struct pmix_state *st, const struct ll_agree_pmix_args *a, const struct ll_agree_deadlines *dl,
		  struct ll_cluster *ret, struct ll_error *err)
{
	struct ll_agree_result res = { 0 };
	struct ll_agree_input in = {
		.nodes = st->nodes, .n_nodes = st->size, .self = st->me.rank, .strict = st->o->strict,
		.leave_out = a->not_slurm ? LL_LEAVE_OUT_MPIRUN : LL_LEAVE_OUT_SRUN, .routed = true,
		.fetch = fetch_summary, .have = have_summary, .fetch_data = st,
	};
	int r = ll_agree_decide(&in, &res, err);

	if (r >= 0 && res.routed) {
		/* This node's interface: its kernel's route to the master. Without one the
		 * proof (run) names this node on every node; env and explain say so here. */
		_cleanup_free_ char *source = NULL;
		struct ll_error e = { 0 };

		if (ll_route_to(res.master_addr, &res.socket_ifname, &source, &e) < 0)
			ll_cluster_note(ret, "%s", e.message);
		ll_error_clear(&e);
	}

	if (r >= 0 && st->o->prove && st->size > 1) {
		double t_prove = ll_now_s();

		r = prove(st, a, &res, dl, err);
		if (r >= 0) {
			ret->proved = true;
			ret->prove_seconds = ll_now_s() - t_prove;
		}
	}
	if (r >= 0) {
		ret->backend = LL_AGREE_PMIX;
		ret->nnodes = (int)st->size;
		ret->node_rank = res.node_rank;
		ret->master_addr = LL_TAKE(res.master_addr);
		ret->master_port = res.master_port;
		ret->socket_ifname = LL_TAKE(res.socket_ifname);
		ret->subnet = LL_TAKE(res.subnet);
		ret->routed = res.routed;
		ret->checked = true;
		ret->n_fetched = res.n_fetched;
		ret->deadlines = *dl;
		ret->nvlink_domain = res.nvlink_domain;
		ret->nvlink_domain_reason = LL_TAKE(res.nvlink_domain_reason);
		if (res.clique_order)
			ret->node_order = ll_agree_order_text(st->nodes, res.order, res.n_nodes);
		for (size_t i = 0; i < res.n_warnings; i++)
			ll_cluster_note(ret, "%s", res.warnings[i]);
	}
	ll_agree_result_release(&res);
	return r;
}

LL_MODULE_EXPORT int ll_pmix_module_run(const struct ll_agree_pmix_args *a, struct ll_cluster *ret,
					 struct ll_error *err)
{
	const struct ll_agree_options *o = a->o;
	struct pmix_state st = {
		.self = a->self, .o = o, .not_slurm = a->not_slurm, .self_name = a->self_name, .t0 = ll_now_s(),
	};
	struct ll_agree_node rec = *a->rec;
	struct ll_agree_deadlines dl;
	int r;

	r = connect_job(&st, err);
	if (r >= 0) {
		ll_agree_deadlines(st.size, o->timeout_s, &dl);
		st.deadline = st.t0 + dl.agree_s;
		st.job = (struct ll_rdzv_job){
			.id = st.me.nspace, .nnodes = st.size, .rank = st.me.rank, .names = st.names,
			.progress = o->progress, .progress_data = o->progress_data,
		};
		r = master_port(&st, a, &rec, err);
	}
	if (r >= 0)
		r = exchange(&st, &rec, &dl, err);
	if (r >= 0)
		r = decide(&st, a, &dl, ret, err);
	if (r > 0)
		r = 0;
	ll_rdzv_progress_done(st.rdzv, r == 0);
	ll_rdzv_close(st.rdzv);
	if (st.nodes)
		for (uint32_t i = 0; i < st.size; i++) {
			ll_agree_node_release(&st.nodes[i]);
			ll_summary_free(st.cache[i]);
		}
	free(st.nodes);
	free(st.cache);
	free(st.checkin_why);
	if (st.names)
		ll_strv_free(st.names, st.size);
	/* After a timeout a fence may still be pending in the server; finalizing then can
	 * wait on it, so only a clean run says goodbye. The process ends soon anyway. */
	if (st.initialized && r != -ETIMEDOUT && r != -EHOSTUNREACH)
		PMIx_Finalize(NULL, 0);
	return r;
}
