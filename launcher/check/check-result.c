/* Reading the check script's lines and the verdict on them (llmlaunch/check.h). */
#include "llmlaunch/check.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "llmlaunch/hostlist.h"

void ll_check_result_release(struct ll_check_result *r)
{
	for (int i = 0; r->nodes && i < r->nnodes; i++) {
		free(r->nodes[i].name);
		free(r->nodes[i].why);
	}
	free(r->nodes);
	free(r->sizes);
	free(r->backend);
	free(r->last_phase);
	*r = (struct ll_check_result){ 0 };
}

void ll_check_verdict_release(struct ll_check_verdict *v)
{
	free(v->slow_gbps.source);
	free(v->slow_lat_us.source);
	free(v->job_busbw_gbps.source);
	free(v->named);
	free(v->job_why);
	free(v->transport_why);
	free(v->advice);
	*v = (struct ll_check_verdict){ 0 };
}

static int bad_line(struct ll_error *err, const char *origin, unsigned line, const char *what)
{
	return ll_error_set(err, -EINVAL, "%s:%u: %s", origin, line, what);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of n values (sorts them). */
static double median(double *v, size_t n)
{
	if (!n)
		return -1;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A node's own view of each round's exchange, until both views are put together. */
struct views {
	double *time_us, *lat_us; /* [node * rounds + round], 0: none */
	size_t bytes;
};

static int parse_header(struct ll_check_result *r, json_t *o, struct views *v)
{
	const char *backend = json_string_value(json_object_get(o, "backend"));
	json_int_t world = json_integer_value(json_object_get(o, "world"));
	json_int_t nnodes = json_integer_value(json_object_get(o, "nnodes"));
	json_int_t nproc = json_integer_value(json_object_get(o, "nproc"));
	json_int_t rounds = json_integer_value(json_object_get(o, "rounds"));

	/* Each count within its bound before it becomes an int, and their product in
	 * 64 bits: 65,536 nodes x 65,537 processes overflowed an int and passed. */
	if (!backend || nnodes < 1 || nnodes > LL_CHECK_MAX_NODES || nproc < 1 || nproc > LL_CHECK_MAX_NPROC ||
	    world != nnodes * nproc || rounds < 0 || rounds > 3 || rounds != ll_check_rounds((size_t)nnodes))
		return -EINVAL;
	r->world = (int)world;
	r->nnodes = (int)nnodes;
	r->nproc = (int)nproc;
	r->rounds = (int)rounds;
	r->backend = ll_strdup(backend);
	r->nodes = ll_calloc((size_t)r->nnodes, sizeof(*r->nodes));
	for (int i = 0; i < r->nnodes; i++)
		for (int k = 0; k < 3; k++)
			r->nodes[i].pair_gbps[k] = r->nodes[i].pair_lat_us[k] = -1;
	v->time_us = ll_calloc((size_t)r->nnodes * 3, sizeof(double));
	v->lat_us = ll_calloc((size_t)r->nnodes * 3, sizeof(double));
	return 0;
}

static int parse_allreduce(struct ll_check_result *r, json_t *a)
{
	json_t *times = json_object_get(a, "time_us"), *t;
	_cleanup_free_ double *v = NULL;
	struct ll_check_size *s;
	size_t n = json_array_size(times), i;
	json_int_t bytes = json_integer_value(json_object_get(a, "bytes"));

	if (!n || bytes <= 0)
		return -EINVAL;
	v = ll_calloc(n, sizeof(*v));
	json_array_foreach(times, i, t) {
		if (!json_is_number(t) || json_number_value(t) <= 0)
			return -EINVAL;
		v[i] = json_number_value(t);
	}
	s = ll_array_push(&r->sizes, &r->n_sizes, sizeof(*s));
	s->bytes = (size_t)bytes;
	s->iters = (int)json_integer_value(json_object_get(a, "iters"));
	s->time_us = median(v, n);
	s->algbw_gbps = (double)s->bytes / s->time_us / 1e3;
	/* nccl-tests' all_reduce: busBw = algBw * 2(n-1)/n (src/all_reduce.cu). */
	s->busbw_gbps = r->world > 1 ? s->algbw_gbps * 2.0 * (r->world - 1) / r->world : s->algbw_gbps;
	return 0;
}

/* The best of a pair view's repetitions: a link's capacity shows in its fastest
 * repetition, while a busy CPU or a neighbour's burst can only slow some of them
 * (docs/check.md, "Noise"). */
static int best_of(json_t *a, double *ret)
{
	json_t *t;
	size_t i;

	*ret = -1;
	if (!json_array_size(a))
		return -EINVAL;
	json_array_foreach(a, i, t) {
		double x = json_number_value(t);

		if (!json_is_number(t) || !(x > 0))
			return -EINVAL;
		if (*ret < 0 || x < *ret)
			*ret = x;
	}
	return 0;
}

static int parse_pair(struct ll_check_result *r, json_t *p, struct views *v)
{
	json_int_t round = json_integer_value(json_object_get(p, "round"));
	json_int_t node = json_integer_value(json_object_get(p, "node"));
	json_int_t bytes = json_integer_value(json_object_get(p, "bytes"));
	double t, lat;

	if (round < 0 || round >= r->rounds || node < 0 || node >= r->nnodes || bytes <= 0 ||
	    best_of(json_object_get(p, "time_us"), &t) < 0 || best_of(json_object_get(p, "lat_us"), &lat) < 0)
		return -EINVAL;
	v->time_us[node * 3 + round] = t;
	v->lat_us[node * 3 + round] = lat;
	v->bytes = (size_t)bytes;
	return 0;
}

/* Both nodes' views of a pair: the slower one is the pair's. */
static void join_views(struct ll_check_result *r, const struct views *v)
{
	for (int i = 0; i < r->nnodes; i++) {
		struct ll_check_node *n = &r->nodes[i];

		n->gbps = n->lat_us = -1;
		for (int k = 0; k < r->rounds; k++) {
			long p = ll_check_partner((size_t)r->nnodes, k, (size_t)i);
			double t, lat;

			if (p < 0 || !(v->time_us[i * 3 + k] > 0) || !(v->time_us[p * 3 + k] > 0))
				continue;
			t = v->time_us[i * 3 + k] > v->time_us[p * 3 + k] ? v->time_us[i * 3 + k] : v->time_us[p * 3 + k];
			lat = v->lat_us[i * 3 + k] > v->lat_us[p * 3 + k] ? v->lat_us[i * 3 + k] : v->lat_us[p * 3 + k];
			n->pair_gbps[k] = (double)v->bytes * r->nproc / t / 1e3;
			n->pair_lat_us[k] = lat;
			if (n->pair_gbps[k] > n->gbps)
				n->gbps = n->pair_gbps[k];
			if (n->lat_us < 0 || lat < n->lat_us)
				n->lat_us = lat;
		}
	}
}

int ll_check_parse(const char *text, const char *origin, struct ll_check_result *ret, struct ll_error *err)
{
	struct ll_check_result r = { 0 };
	struct views v = { 0 };
	unsigned line = 0;
	int rc = 0;

	for (const char *p = text; *p && rc == 0;) {
		const char *nl = strchr(p, '\n');
		json_t *o, *x;
		json_error_t je;

		line++;
		if (!nl)
			break; /* a line the script did not finish: it was stopped */
		o = json_loadb(p, (size_t)(nl - p), 0, &je);
		p = nl + 1;
		if (!json_is_object(o)) {
			json_decref(o);
			rc = bad_line(err, origin, line, "not a JSON object");
			break;
		}
		if ((x = json_object_get(o, "phase"))) {
			free(r.last_phase);
			r.last_phase = ll_asprintf("%s, step %lld of %lld", json_string_value(x) ? json_string_value(x) : "?",
						   (long long)json_integer_value(json_object_get(o, "step")),
						   (long long)json_integer_value(json_object_get(o, "of")));
		} else if (json_object_get(o, "check")) {
			if (r.nodes || parse_header(&r, o, &v) < 0)
				rc = bad_line(err, origin, line, "not a valid check header");
		} else if (!r.nodes) {
			rc = bad_line(err, origin, line, "results before the check's header");
		} else if ((x = json_object_get(o, "node"))) {
			json_int_t i = json_integer_value(x);
			const char *name = json_string_value(json_object_get(o, "name"));

			/* "" is a node whose llmlaunch knew no name for it: it stays
			 * unnamed. Anything else must be a host name, for it goes to the
			 * exclude file and to scontrol. */
			if (i < 0 || i >= r.nnodes || !name || r.nodes[i].seen || (*name && !ll_check_node_name_valid(name))) {
				rc = bad_line(err, origin, line, "not a valid node line");
			} else {
				r.nodes[i].seen = true;
				r.nodes[i].name = *name ? ll_strdup(name) : NULL;
				r.nodes[i].nccl_fallback = json_is_true(json_object_get(o, "nccl_fallback"));
			}
		} else if ((x = json_object_get(o, "allreduce"))) {
			if (parse_allreduce(&r, x) < 0)
				rc = bad_line(err, origin, line, "not a valid all-reduce line");
		} else if ((x = json_object_get(o, "pair"))) {
			if (parse_pair(&r, x, &v) < 0)
				rc = bad_line(err, origin, line, "not a valid pair line");
		} else if (json_object_get(o, "end")) {
			r.complete = true;
		} else {
			rc = bad_line(err, origin, line, "unknown line");
		}
		json_decref(o);
	}
	/* A node without a name stays without one: a placeholder ("node 2") would go
	 * into the exclude file and to scontrol as if it were a host. */
	if (rc == 0 && r.nodes)
		join_views(&r, &v);
	free(v.time_us);
	free(v.lat_us);
	if (rc < 0) {
		ll_check_result_release(&r);
		return rc;
	}
	*ret = r;
	return 0;
}

bool ll_check_node_name_valid(const char *s)
{
	size_t label = 0, n = 0;

	/* Host name syntax (RFC 1123: letters, digits, '-' inside labels of at most 63,
	 * dot-separated), with '_' as Slurm node names may have it; at most
	 * LL_CHECK_NAME_MAX bytes, what the check's script carries. No character that
	 * means something to hostlist syntax, scontrol or a shell. */
	if (!s || !*s)
		return false;
	for (const char *c = s; *c; c++, n++) {
		if (*c == '.') {
			if (label == 0 || c[-1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
		      (*c == '-' && label > 0)))
			return false;
		if (++label > 63)
			return false;
	}
	return n <= LL_CHECK_NAME_MAX && label > 0 && s[n - 1] != '-';
}

static char *figure_source(const struct ll_profile_figure *f)
{
	return ll_asprintf("profile %s:%u", f->origin ? f->origin : "?", f->line);
}

/* What a fetched profile's figures would have said: the nodes below its pair
 * figure or above its latency (at most 8 named), the job below its all-reduce
 * figure. NULL when nothing misses them. */
static char *fetched_advice(const struct ll_check_result *res, const struct ll_profile_expect *e)
{
	const struct ll_profile_figure *bw = e->pair_busbw_gbps.fetched ? &e->pair_busbw_gbps : NULL;
	const struct ll_profile_figure *lat = e->pair_latency_us.fetched ? &e->pair_latency_us : NULL;
	const struct ll_profile_figure *job = e->allreduce_busbw_gbps.fetched ? &e->allreduce_busbw_gbps : NULL;
	size_t missed = 0;
	struct ll_buf b, names;

	ll_buf_init(&b);
	ll_buf_init(&names);
	for (int i = 0; i < res->nnodes; i++) {
		const struct ll_check_node *n = &res->nodes[i];

		if (!((bw && bw->value > 0 && n->gbps > 0 && n->gbps < bw->value) ||
		      (lat && lat->value > 0 && n->lat_us > 0 && n->lat_us > lat->value)))
			continue;
		if (missed++ < 8)
			ll_buf_addf(&names, "%s%s", names.len ? ", " : "", n->name ? n->name : "a node without a name");
	}
	if (missed) {
		_cleanup_free_ char *a = bw && bw->value > 0 ? figure_source(bw) : NULL;
		_cleanup_free_ char *c = lat && lat->value > 0 ? figure_source(lat) : NULL;

		ll_buf_addf(&b, "%zu node%s miss%s a fetched profile's figures (%s%s%s): %s%s", missed,
			    missed == 1 ? "" : "s", missed == 1 ? "es" : "", a ? a : "", a && c ? "; " : "", c ? c : "",
			    names.s, missed > 8 ? " and more" : "");
	}
	if (job && job->value > 0 && res->n_sizes) {
		const struct ll_check_size *big = &res->sizes[0];
		_cleanup_free_ char *src = figure_source(job);

		for (size_t k = 1; k < res->n_sizes; k++)
			if (res->sizes[k].bytes > big->bytes)
				big = &res->sizes[k];
		if (big->busbw_gbps < job->value)
			ll_buf_addf(&b, "%sthe all-reduce's bus bandwidth %.3g GB/s is below a fetched profile's %.3g GB/s (%s)",
				    b.len ? "; " : "", big->busbw_gbps, job->value, src);
	}
	ll_buf_release(&names);
	if (!b.len) {
		ll_buf_release(&b);
		return NULL;
	}
	ll_buf_add(&b, "; a warning only: a profile fetched over the network cannot name, exclude or drain nodes");
	return ll_buf_detach(&b);
}

static void name_node(struct ll_check_verdict *v, size_t i)
{
	if (v->n_named && v->named[v->n_named - 1] == i)
		return;
	*(size_t *)ll_array_push(&v->named, &v->n_named, sizeof(size_t)) = i;
}

void ll_check_decide(struct ll_check_result *res, const struct ll_profile_expect *expect,
		     const struct ll_nccl_verdict *nccl, struct ll_check_verdict *ret)
{
	struct ll_check_verdict v = { .median_gbps = -1, .median_lat_us = -1 };
	_cleanup_free_ double *g = ll_calloc((size_t)res->nnodes + 1, sizeof(double));
	_cleanup_free_ double *l = ll_calloc((size_t)res->nnodes + 1, sizeof(double));
	size_t n_g = 0, n_l = 0;
	bool median_rule = res->nnodes >= LL_CHECK_MEDIAN_MIN_NODES;

	v.slow_gbps.value = v.slow_lat_us.value = v.job_busbw_gbps.value = -1;
	for (int i = 0; i < res->nnodes; i++) {
		if (res->nodes[i].gbps > 0)
			g[n_g++] = res->nodes[i].gbps;
		if (res->nodes[i].lat_us > 0)
			l[n_l++] = res->nodes[i].lat_us;
	}
	v.median_gbps = median(g, n_g);
	v.median_lat_us = median(l, n_l);

	/* A fetched profile's figures warn and never act (docs/security.md): they are
	 * said in v.advice, and the thresholds are as if they were not stated. */
	if (expect && (expect->pair_busbw_gbps.fetched || expect->pair_latency_us.fetched ||
		       expect->allreduce_busbw_gbps.fetched)) {
		struct ll_profile_expect local = *expect;
		static const struct ll_profile_figure unstated = { .value = -1 };

		if (local.pair_busbw_gbps.fetched)
			local.pair_busbw_gbps = unstated;
		if (local.pair_latency_us.fetched)
			local.pair_latency_us = unstated;
		if (local.allreduce_busbw_gbps.fetched)
			local.allreduce_busbw_gbps = unstated;
		ll_check_decide(res, &local, nccl, ret);
		ret->advice = fetched_advice(res, expect);
		return;
	}

	/* The thresholds and their sources: a profile's figure for this machine type
	 * first, else the job's own median. */
	if (expect && expect->pair_busbw_gbps.value > 0) {
		v.slow_gbps.value = expect->pair_busbw_gbps.value;
		v.slow_gbps.source = figure_source(&expect->pair_busbw_gbps);
	} else if (median_rule && v.median_gbps > 0) {
		v.slow_gbps.value = v.median_gbps * LL_CHECK_SLOW_RATIO;
		v.slow_gbps.source = ll_asprintf("%.0f%% of the job's median %.3g GB/s", LL_CHECK_SLOW_RATIO * 100,
						 v.median_gbps);
	}
	if (expect && expect->pair_latency_us.value > 0) {
		v.slow_lat_us.value = expect->pair_latency_us.value;
		v.slow_lat_us.source = figure_source(&expect->pair_latency_us);
	} else if (median_rule && v.median_lat_us > 0) {
		double by_ratio = v.median_lat_us * LL_CHECK_LAT_RATIO, by_gap = v.median_lat_us + LL_CHECK_LAT_GAP_US;

		v.slow_lat_us.value = by_ratio > by_gap ? by_ratio : by_gap;
		v.slow_lat_us.source = ll_asprintf("the job's median %.3g us x %g, and at least %g us above it",
						   v.median_lat_us, LL_CHECK_LAT_RATIO, LL_CHECK_LAT_GAP_US);
	}
	if (expect && expect->allreduce_busbw_gbps.value > 0) {
		v.job_busbw_gbps.value = expect->allreduce_busbw_gbps.value;
		v.job_busbw_gbps.source = figure_source(&expect->allreduce_busbw_gbps);
	}

	for (int i = 0; i < res->nnodes; i++) {
		struct ll_check_node *n = &res->nodes[i];
		struct ll_buf why;

		ll_buf_init(&why);
		n->slow = n->broken = false;
		if (res->nnodes >= 2 && n->gbps < 0) {
			n->broken = true;
			ll_buf_add(&why, "no pair test completed");
		}
		if (n->gbps > 0 && v.slow_gbps.value > 0 && n->gbps < v.slow_gbps.value) {
			n->slow = true;
			ll_buf_addf(&why, "%.3g GB/s, below %.3g GB/s (%s)", n->gbps, v.slow_gbps.value, v.slow_gbps.source);
			if (v.median_gbps > 0)
				ll_buf_addf(&why, "; %.2g of the median %.3g GB/s", n->gbps / v.median_gbps, v.median_gbps);
		}
		if (n->lat_us > 0 && v.slow_lat_us.value > 0 && n->lat_us > v.slow_lat_us.value) {
			n->slow = true;
			ll_buf_addf(&why, "%s%.3g us latency, above %.3g us (%s)", why.len ? "; " : "", n->lat_us,
				    v.slow_lat_us.value, v.slow_lat_us.source);
		}
		free(n->why);
		n->why = why.len ? ll_buf_detach(&why) : NULL;
		ll_buf_release(&why);
		if (n->slow || n->broken)
			name_node(&v, (size_t)i);
	}

	/* A profile's figure that most nodes miss says more about the figure (or the
	 * whole fabric) than about the nodes: the job is slow, no node is named, so a
	 * wrong or hostile figure can never exclude or drain a cluster. The median rule
	 * cannot name more than half by construction. */
	if (v.n_named * 2 > (size_t)res->nnodes && res->nnodes >= 2 &&
	    ((expect && expect->pair_busbw_gbps.value > 0) || (expect && expect->pair_latency_us.value > 0))) {
		size_t n_slow = 0;

		for (size_t k = 0; k < v.n_named; k++) {
			struct ll_check_node *n = &res->nodes[v.named[k]];

			if (n->slow && !n->broken)
				n_slow++;
		}
		if (n_slow * 2 > (size_t)res->nnodes) {
			bool bw = expect->pair_busbw_gbps.value > 0, lat = expect->pair_latency_us.value > 0;
			size_t kept = 0;

			v.job_slow = true;
			v.job_why = ll_asprintf("%zu of %d nodes miss the profile's figures (%s%s%s): the figures or the "
						"whole fabric are wrong, not single nodes",
						n_slow, res->nnodes, bw ? v.slow_gbps.source : "", bw && lat ? "; " : "",
						lat ? v.slow_lat_us.source : "");
			for (size_t k = 0; k < v.n_named; k++) {
				struct ll_check_node *n = &res->nodes[v.named[k]];

				n->slow = false;
				if (n->broken)
					v.named[kept++] = v.named[k];
			}
			v.n_named = kept;
		}
	}

	if (v.job_busbw_gbps.value > 0 && res->n_sizes) {
		const struct ll_check_size *big = &res->sizes[0];

		for (size_t k = 1; k < res->n_sizes; k++)
			if (res->sizes[k].bytes > big->bytes)
				big = &res->sizes[k];
		if (big->busbw_gbps < v.job_busbw_gbps.value) {
			char *before = v.job_why;

			v.job_slow = true;
			v.job_why = ll_asprintf("%s%sall-reduce of %zu bytes: bus bandwidth %.3g GB/s, below %.3g GB/s (%s)",
						before ? before : "", before ? "; " : "", big->bytes, big->busbw_gbps,
						v.job_busbw_gbps.value, v.job_busbw_gbps.source);
			free(before);
		}
	}

	{
		size_t n_seen = 0;
		struct ll_buf b;

		for (int i = 0; i < res->nnodes; i++)
			n_seen += res->nodes[i].nccl_fallback;
		ll_buf_init(&b);
		if (nccl && nccl->fallback) {
			bool first = true;

			ll_buf_addf(&b, "NCCL ran over sockets where the plan expected %s",
				    nccl->expect == LL_NET_EXPECT_ROCE ? "RoCE" : nccl->expect == LL_NET_EXPECT_IB ? "InfiniBand" : "RDMA");
			for (size_t i = 0; i < nccl->n_hosts; i++) {
				const struct ll_nccl_host *h = &nccl->hosts[i];

				if (!h->fallback || !h->name)
					continue;
				/* the log verdict's own words for the host (llmlaunch logs prints them) */
				ll_buf_add(&b, "; ");
				ll_nccl_host_summary(h, &b);
				first = false;
			}
			if (first && nccl->fallback_reason)
				ll_buf_addf(&b, ": %s", nccl->fallback_reason);
		} else if (n_seen) {
			ll_buf_add(&b, "NCCL ran over sockets where the plan expected RDMA");
		}
		if (n_seen) {
			/* what the other nodes read in their own logs, carried with the figures */
			size_t shown = 0;

			ll_buf_add(&b, " (seen in the logs of ");
			for (int i = 0; i < res->nnodes; i++) {
				if (!res->nodes[i].nccl_fallback)
					continue;
				if (res->nodes[i].name)
					ll_buf_addf(&b, "%s%s", shown++ ? ", " : "", res->nodes[i].name);
				else
					ll_buf_addf(&b, "%snode rank %d (no name)", shown++ ? ", " : "", i);
			}
			ll_buf_add(&b, ")");
		}
		if (b.len) {
			ll_buf_add(&b, "; the figures measure sockets, not the planned network");
			v.transport_fallback = true;
			v.transport_why = ll_buf_detach(&b);
		}
		ll_buf_release(&b);
	}
	v.ok = res->complete && !v.n_named && !v.job_slow && !v.transport_fallback;
	*ret = v;
}

char *ll_check_exclude_list(const struct ll_check_result *res, const struct ll_check_verdict *v)
{
	_cleanup_free_ char **names = ll_calloc(v->n_named + 1, sizeof(char *));

	for (size_t i = 0; i < v->n_named; i++) {
		names[i] = res->nodes[v->named[i]].name;
		if (!names[i])
			return NULL;
	}
	return ll_hostlist_compress(names, v->n_named);
}
