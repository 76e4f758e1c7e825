/* The PMIx backend (srun --mpi=pmix, mpirun), built as the module llmlaunch-pmix.so:
 * libpmix brings libevent, munge and a thread of its own, so it loads only under a
 * PMIx launcher (agree-run.c calls agree_pmix_run(), launcher/agree/agree-pmix-loader.c).
 * The module resolves llmlaunch's own functions from the binary that loads it.
 *
 * One llmlaunch per node:
 *
 *   put  llmlaunch.r  the small record (digests, host key, candidate port, switch)
 *   put  llmlaunch.s  the full summary: rank 0 only, everyone needs it
 *   commit, fence with PMIX_COLLECT_DATA           <- tiny records + one summary
 *   decide (agree.c) on the records
 * and only when digests differ (the same test on every node, so fences stay matched):
 *   put  llmlaunch.s  every node's summary, commit; fence without data
 *   get  the summary of one node per odd digest    <- direct modex, on demand
 *   fence without data                             <- nobody leaves while others read
 * A homogeneous cluster thus costs one fence, as a bare PMIx exchange does, and the
 * data each node receives grows by a few dozen bytes per node (DESIGN.md, stage 3).
 *
 * Slurm's PMIx server ignores PMIX_TIMEOUT on fences and defers a direct-modex get
 * until the peer commits, so every wait here is non-blocking with our own deadline.
 * A get is retried, each try bounded, until the deadline: an answer can be lost. */
#include "llmlaunch/agree-pmix.h"
#include "llmlaunch/clock.h"
#include "llmlaunch/module.h"

#include <errno.h>
#include <pmix.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KEY_RECORD "llmlaunch.r"
#define KEY_SUMMARY "llmlaunch.s"
/* Peers asked "did you arrive?" after a fence timeout, and how long they get. */
#define MISSING_CHECK_MAX 256
#define MISSING_CHECK_S 2.0
/* One direct-modex try before asking again. */
#define GET_TRY_S 5.0

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

/* One outstanding non-blocking call. When the waiter gives up it marks the request
 * abandoned and the callback, which may still come, frees it. */
struct request {
	bool done, abandoned;
	pmix_status_t status;
	char *string;     /* a string value, copied */
	unsigned long number;
	bool is_number;
};

static struct request *request_new(void)
{
	return ll_calloc(1, sizeof(struct request));
}

static void request_free(struct request *q)
{
	free(q->string);
	free(q);
}

static void finish(struct request *q, pmix_status_t status, const pmix_value_t *v)
{
	pthread_mutex_lock(&lock);
	if (q->abandoned) {
		pthread_mutex_unlock(&lock);
		request_free(q);
		return;
	}
	q->status = status;
	if (status == PMIX_SUCCESS && v) {
		switch (v->type) {
		case PMIX_STRING:
			q->string = ll_strdup(v->data.string);
			break;
		case PMIX_UINT32:
			q->number = v->data.uint32, q->is_number = true;
			break;
		case PMIX_UINT16:
			q->number = v->data.uint16, q->is_number = true;
			break;
		case PMIX_UINT64:
			q->number = (unsigned long)v->data.uint64, q->is_number = true;
			break;
		default:
			q->status = PMIX_ERR_BAD_PARAM;
		}
	}
	q->done = true;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

static void value_cb(pmix_status_t status, pmix_value_t *kv, void *cbdata)
{
	finish(cbdata, status, kv);
}

static void op_cb(pmix_status_t status, void *cbdata)
{
	finish(cbdata, status, NULL);
}

/* Wait for `q` until the monotonic `deadline`; false (and the request abandoned) on timeout. */
static bool request_wait(struct request *q, double deadline)
{
	bool done;

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
	done = q->done;
	if (!done)
		q->abandoned = true;
	pthread_mutex_unlock(&lock);
	return done;
}

struct pmix_state {
	pmix_proc_t me;
	uint32_t size;
	double deadline;        /* for the whole agreement */
	const struct ll_summary *self;
	struct ll_agree_node *nodes;
	struct ll_summary **cache; /* fetched summaries by rank */
	bool initialized;
};

/* A blocking Get for values the server holds already (job info, collected data). */
static int get_string(const pmix_proc_t *proc, const char *key, char **ret)
{
	pmix_value_t *v = NULL;
	pmix_status_t rc = PMIx_Get(proc, key, NULL, 0, &v);

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

/* Get a peer's key through direct modex, retrying "not found" (not committed yet)
 * until the deadline. */
static int get_remote(struct pmix_state *st, pmix_rank_t rank, const char *key, char **ret, pmix_status_t *ret_rc)
{
	pmix_proc_t p = rank_proc(st, rank);
	double pause = 0.002;

	for (;;) {
		struct request *q = request_new();
		pmix_status_t rc = PMIx_Get_nb(&p, key, NULL, 0, value_cb, q);

		if (rc != PMIX_SUCCESS) {
			request_free(q);
			*ret_rc = rc;
			return -EIO;
		}
		if (!request_wait(q, ll_now_s() + GET_TRY_S < st->deadline ? ll_now_s() + GET_TRY_S : st->deadline)) {
			if (ll_now_s() < st->deadline)
				continue; /* a lost answer: ask again */
			*ret_rc = PMIX_ERR_TIMEOUT;
			return -ETIMEDOUT;
		}
		rc = q->status;
		if (rc == PMIX_SUCCESS && q->string) {
			*ret = LL_TAKE(q->string);
			request_free(q);
			return 0;
		}
		request_free(q);
		if (rc != PMIX_ERR_NOT_FOUND || ll_now_s() + pause > st->deadline) {
			*ret_rc = rc == PMIX_SUCCESS ? PMIX_ERR_BAD_PARAM : rc;
			return rc == PMIX_ERR_NOT_FOUND ? -ETIMEDOUT : -EIO;
		}
		usleep((useconds_t)(pause * 1e6));
		if (pause < 0.1)
			pause *= 2;
	}
}

static int fetch_summary(void *data, size_t i, const struct ll_summary **ret, struct ll_error *err)
{
	struct pmix_state *st = data;
	_cleanup_free_ char *text = NULL;
	pmix_status_t rc = PMIX_SUCCESS;
	int r;

	if (i == st->me.rank) {
		*ret = st->self;
		return 0;
	}
	if (!st->cache[i]) {
		if (i == 0) {
			/* Collected by the first fence: in this process's cache already. */
			pmix_proc_t p = rank_proc(st, 0);
			rc = get_string(&p, KEY_SUMMARY, &text);
			r = rc == PMIX_SUCCESS ? 0 : -EIO;
		} else {
			r = get_remote(st, (pmix_rank_t)i, KEY_SUMMARY, &text, &rc);
		}
		if (r < 0)
			return ll_error_set(err, r, "cannot read the summary of node '%s' through PMIx: %s",
					    st->nodes[i].name, PMIx_Error_string(rc));
		r = ll_summary_parse(text, st->nodes[i].name, &st->cache[i], err);
		if (r < 0)
			return r;
	}
	*ret = st->cache[i];
	return 0;
}

static bool have_summary(void *data, size_t i)
{
	struct pmix_state *st = data;

	return i == 0 || i == st->me.rank || st->cache[i];
}

static int put_string(const char *key, char *value)
{
	pmix_value_t v;

	PMIX_VALUE_CONSTRUCT(&v);
	v.type = PMIX_STRING;
	v.data.string = value;
	return PMIx_Put(PMIX_GLOBAL, key, &v);
}

/* A fence with our own deadline. */
static int fence(bool collect, double deadline, pmix_status_t *ret_rc)
{
	struct request *q = request_new();
	pmix_info_t info;
	bool yes = true;
	pmix_status_t rc;

	PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
	rc = PMIx_Fence_nb(NULL, 0, collect ? &info : NULL, collect ? 1 : 0, op_cb, q);
	PMIX_INFO_DESTRUCT(&info);
	if (rc != PMIX_SUCCESS) {
		request_free(q);
		*ret_rc = rc;
		return -EIO;
	}
	if (!request_wait(q, deadline)) {
		*ret_rc = PMIX_ERR_TIMEOUT;
		return -ETIMEDOUT;
	}
	rc = q->status;
	request_free(q);
	*ret_rc = rc;
	return rc == PMIX_SUCCESS ? 0 : -EIO;
}

static char *rank_name(const struct pmix_state *st, pmix_rank_t rank)
{
	pmix_proc_t p = rank_proc(st, rank);
	char *name = NULL;

	if (get_string(&p, PMIX_HOSTNAME, &name) != PMIX_SUCCESS)
		name = ll_asprintf("rank %u", rank);
	return name;
}

/* After a fence timeout: ask peers for the record each put before entering the fence.
 * Who answers arrived; who does not (within a short while) is named. */
static int fence_timeout_error(struct pmix_state *st, double waited, double timeout, struct ll_error *err)
{
	size_t n_check = st->size < MISSING_CHECK_MAX ? st->size : MISSING_CHECK_MAX;
	struct request **qs = ll_calloc(n_check, sizeof(*qs));
	double deadline = ll_now_s() + (timeout < MISSING_CHECK_S ? timeout : MISSING_CHECK_S);
	struct ll_buf missing;
	size_t n_missing = 0, n_asked = 0;

	for (size_t i = 0; i < n_check; i++) {
		pmix_proc_t p = rank_proc(st, (pmix_rank_t)i);
		if (i == st->me.rank)
			continue;
		qs[i] = request_new();
		if (PMIx_Get_nb(&p, KEY_RECORD, NULL, 0, value_cb, qs[i]) != PMIX_SUCCESS) {
			request_free(qs[i]);
			qs[i] = NULL;
		} else {
			n_asked++;
		}
	}
	ll_buf_init(&missing);
	for (size_t i = 0; i < n_check; i++) {
		bool arrived;
		if (!qs[i])
			continue;
		arrived = request_wait(qs[i], deadline) && qs[i]->status == PMIX_SUCCESS;
		if (!arrived) {
			char *name = rank_name(st, (pmix_rank_t)i);
			if (n_missing < 16)
				ll_buf_addf(&missing, "%s%s", n_missing ? ", " : "", name);
			n_missing++;
			free(name);
		}
		pthread_mutex_lock(&lock);
		bool done = qs[i]->done;
		pthread_mutex_unlock(&lock);
		if (done)
			request_free(qs[i]); /* else the callback frees it */
	}
	free(qs);
	if (n_missing > 0)
		ll_error_set(err, -ETIMEDOUT,
			     "agreement timed out after %.0f s: %zu of %u nodes did not arrive%s: %s%s", waited,
			     n_missing, st->size, n_check < st->size ? " among the first checked" : "", missing.s,
			     n_missing > 16 ? ", ..." : "");
	else
		ll_error_set(err, -ETIMEDOUT,
			     "agreement timed out after %.0f s waiting for the other %u nodes; PMIx cannot tell "
			     "which did not arrive (%zu answered)",
			     waited, st->size - 1, n_asked);
	ll_error_hint(err,
		      "every node must start llmlaunch within --agree-timeout (%g s) of the others: check that node's "
		      "log, or raise --agree-timeout for slow starts",
		      timeout);
	ll_buf_release(&missing);
	return -ETIMEDOUT;
}

/* PMIx_Commit has no non-blocking form and blocks for good when the server is stuck
 * talking to peers that gave up (a node that arrives after the others timed out).
 * Run it on a helper thread and stop waiting at the deadline; the thread is left
 * behind, blocked, until the process ends. */
static void *commit_thread(void *data)
{
	struct request *q = data;

	finish(q, PMIx_Commit(), NULL);
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
		request_free(q);
		*ret_rc = PMIx_Commit();
		return *ret_rc == PMIX_SUCCESS ? 0 : -EIO;
	}
	if (!request_wait(q, deadline)) {
		*ret_rc = PMIX_ERR_TIMEOUT;
		return -ETIMEDOUT;
	}
	*ret_rc = q->status;
	request_free(q);
	return *ret_rc == PMIX_SUCCESS ? 0 : -EIO;
}

static int pmix_fail(struct ll_error *err, pmix_status_t rc, const char *what)
{
	return ll_error_set(err, -EIO, "%s: %s", what, PMIx_Error_string(rc));
}

LL_MODULE_EXPORT int ll_pmix_module_run(const struct ll_summary *self, const struct ll_agree_node *rec,
					 const struct ll_agree_options *o,
		   struct ll_cluster *ret, struct ll_error *err)
{
	struct pmix_state st = { .self = self };
	struct ll_agree_result res = { 0 };
	pmix_proc_t wild;
	pmix_status_t rc;
	uint32_t n_nodes = 0, local = 0;
	double timeout = o->timeout_s > 0 ? o->timeout_s : LL_AGREE_DEFAULT_TIMEOUT, t0 = ll_now_s(), t_fence;
	sigset_t all_signals, old_mask;
	bool odd = false;
	_cleanup_free_ char *record = NULL, *summary = NULL;
	int r;

	/* Threads start with their creator's signal mask. libpmix's progress thread must
	 * never take a signal meant for this process: the supervisor later waits for
	 * SIGCHLD and forwarded signals on a signalfd, which only sees signals that every
	 * thread blocks (a SIGCHLD taken by that thread left torchrun a zombie, unseen). */
	sigfillset(&all_signals);
	pthread_sigmask(SIG_BLOCK, &all_signals, &old_mask);
	rc = PMIx_Init(&st.me, NULL, 0);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	if (rc != PMIX_SUCCESS) {
		r = pmix_fail(err, rc, "cannot connect to the launcher's PMIx server");
		ll_error_hint(err, "PMIX_* variables are set but no server answers; unset them to run without PMIx");
		return r;
	}
	st.initialized = true;
	st.deadline = t0 + timeout;

	PMIX_PROC_CONSTRUCT(&wild);
	PMIX_LOAD_PROCID(&wild, st.me.nspace, PMIX_RANK_WILDCARD);
	if ((rc = get_number(&wild, PMIX_JOB_SIZE, &st.size)) != PMIX_SUCCESS) {
		r = pmix_fail(err, rc, "cannot read the job size from PMIx");
		goto out;
	}
	if (get_number(&wild, PMIX_NUM_NODES, &n_nodes) != PMIX_SUCCESS)
		n_nodes = st.size;
	if (get_number(&wild, PMIX_LOCAL_SIZE, &local) != PMIX_SUCCESS)
		local = 1;
	/* One llmlaunch per node is the contract: it starts the node's workers itself.
	 * Every process sees the same job size and node count, so all of them stop. */
	if (st.size != n_nodes || local > 1) {
		char *host = rank_name(&st, st.me.rank);
		r = ll_error_set(err, -EINVAL,
				 "%u llmlaunch processes on %u node%s (%u on '%s'): llmlaunch runs once per node "
				 "and starts that node's workers itself",
				 st.size, n_nodes, n_nodes == 1 ? "" : "s", local, host);
		ll_error_hint(err, "srun -N %u --ntasks-per-node=1 ... (mpirun: --map-by ppr:1:node)", n_nodes);
		free(host);
		goto out;
	}

	/* The small record from everyone, the full summary from rank 0 (everyone reads it). */
	record = ll_agree_node_format(rec);
	summary = ll_summary_serialize(self);
	rc = put_string(KEY_RECORD, record);
	if (rc == PMIX_SUCCESS && st.me.rank == 0)
		rc = put_string(KEY_SUMMARY, summary);
	r = rc == PMIX_SUCCESS ? commit(st.deadline, &rc) : -EIO;
	if (r == -ETIMEDOUT) {
		r = ll_error_set(err, -ETIMEDOUT,
				 "agreement timed out after %.0f s: the PMIx server did not take this node's record "
				 "(the other nodes may have given up waiting for it)",
				 ll_now_s() - t0);
		ll_error_hint(err, "every node must start llmlaunch within --agree-timeout (%g s) of the others",
			      timeout);
		goto out;
	}
	if (r < 0) {
		r = pmix_fail(err, rc, "cannot publish this node's record through PMIx");
		goto out;
	}
	t_fence = ll_now_s();
	r = fence(true, st.deadline, &rc);
	if (r == -ETIMEDOUT) {
		r = fence_timeout_error(&st, ll_now_s() - t_fence, timeout, err);
		goto out;
	}
	if (r < 0) {
		r = pmix_fail(err, rc, "the PMIx fence failed");
		goto out;
	}

	st.nodes = ll_calloc(st.size, sizeof(*st.nodes));
	st.cache = ll_calloc(st.size, sizeof(*st.cache));
	for (uint32_t i = 0; i < st.size; i++) {
		pmix_proc_t p = rank_proc(&st, i);
		_cleanup_free_ char *text = NULL;

		st.nodes[i].name = rank_name(&st, i);
		if (i == st.me.rank) {
			text = ll_agree_node_format(rec);
		} else if ((rc = get_string(&p, KEY_RECORD, &text)) != PMIX_SUCCESS) {
			r = ll_error_set(err, -EIO, "cannot read the record of node '%s' through PMIx: %s",
					 st.nodes[i].name, PMIx_Error_string(rc));
			goto out;
		}
		r = ll_agree_node_parse(text, st.nodes[i].name, &st.nodes[i], err);
		if (r < 0)
			goto out;
		odd |= st.nodes[i].hw_digest != st.nodes[0].hw_digest || st.nodes[i].net_digest != st.nodes[0].net_digest;
	}

	if (odd) {
		/* Some node differs: publish every summary, wait until all are committed (a get
		 * that overtakes its commit is answered "not found", or never), then read. */
		if (st.me.rank != 0) {
			rc = put_string(KEY_SUMMARY, summary);
			r = rc == PMIX_SUCCESS ? commit(st.deadline, &rc) : -EIO;
			if (r < 0) {
				r = r == -ETIMEDOUT ? ll_error_set(err, r, "agreement timed out after %.0f s publishing "
									  "this node's summary", ll_now_s() - t0)
						    : pmix_fail(err, rc, "cannot publish this node's summary through PMIx");
				goto out;
			}
		}
		r = fence(false, st.deadline, &rc);
		if (r < 0) {
			r = r == -ETIMEDOUT ? ll_error_set(err, r, "agreement timed out after %.0f s: a node stopped "
								  "between the two exchanges", timeout)
					    : pmix_fail(err, rc, "the second PMIx fence failed");
			goto out;
		}
	}
	{
		struct ll_agree_input in = {
			.nodes = st.nodes, .n_nodes = st.size, .self = st.me.rank, .strict = o->strict,
			.fetch = fetch_summary, .have = have_summary, .fetch_data = &st,
		};
		r = ll_agree_decide(&in, &res, err);
	}
	if (odd) {
		/* Everyone stays until everyone has read what it needed; a node that failed
		 * alone (it could not read a peer) makes the others time out here, so nobody
		 * launches without the rest. */
		pmix_status_t frc;
		int fr = fence(false, st.deadline, &frc);
		if (r >= 0 && fr < 0) {
			r = fr == -ETIMEDOUT ? ll_error_set(err, fr, "agreement timed out after %.0f s: not every node "
								     "finished deciding", timeout)
					     : pmix_fail(err, frc, "the closing PMIx fence failed");
		}
	}
	if (r < 0)
		goto out;

	ret->backend = LL_AGREE_PMIX;
	ret->nnodes = (int)st.size;
	ret->node_rank = res.node_rank;
	ret->master_addr = LL_TAKE(res.master_addr);
	ret->master_port = res.master_port;
	ret->socket_ifname = LL_TAKE(res.socket_ifname);
	ret->subnet = LL_TAKE(res.subnet);
	ret->checked = true;
	ret->n_fetched = res.n_fetched;
	for (size_t i = 0; i < res.n_warnings; i++)
		ll_cluster_note(ret, "%s", res.warnings[i]);
	r = 0;
out:
	ll_agree_result_release(&res);
	if (st.nodes)
		for (uint32_t i = 0; i < st.size; i++) {
			ll_agree_node_release(&st.nodes[i]);
			ll_summary_free(st.cache[i]);
		}
	free(st.nodes);
	free(st.cache);
	/* After a timeout a fence may still be pending in the server; finalizing then can
	 * wait on it, so only a clean run says goodbye. The process ends soon anyway. */
	if (st.initialized && r != -ETIMEDOUT)
		PMIx_Finalize(NULL, 0);
	return r;
}
