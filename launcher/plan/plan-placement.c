/* Which GPUs this node's workers get, how many workers, and where each local rank
 * runs (GPU, CPUs, memory). Rules in docs/planner.md. */
#include <ctype.h>
#include <errno.h>
#include <hwloc.h>
#include <string.h>

#include "plan-internal.h"

static int parse_count(const char *s, int *ret)
{
	long v;

	if (ll_parse_long(s, 1, 4096, &v) < 0)
		return -EINVAL;
	*ret = (int)v;
	return 0;
}

/* One entry of a visibility list: an index into the vendor's GPUs in PCI order
 * (CUDA with CUDA_DEVICE_ORDER=PCI_BUS_ID; HIP in KFD order, which follows PCI
 * order), or a "GPU-..." UUID or unique UUID prefix (ROCR_VISIBLE_DEVICES takes
 * "GPU-" and AMD's unique id, ROCm docs "GPU isolation techniques"). Returns an
 * index into facts->gpus. */
static int visible_entry(const struct plan_state *s, const char *e, const char **why)
{
	const struct ll_facts *f = s->f;
	bool amd = s->vendor == LL_GPU_VENDOR_AMD;
	int found = -1;

	if (*e && strspn(e, "0123456789") == strlen(e)) {
		long v = strtol(e, NULL, 10);

		if (v >= (long)s->n_pool) {
			*why = "no such GPU index";
			return -1;
		}
		return s->pool[v];
	}
	if (ll_startswith(e, "MIG-")) {
		*why = "MIG instance: its parent GPU is not known from the facts";
		return -1;
	}
	if (!ll_startswith(e, "GPU-")) {
		*why = "neither an index nor a GPU UUID";
		return -1;
	}
	for (size_t k = 0; k < s->n_pool; k++) {
		const char *uuid = f->gpus[s->pool[k]].uuid;

		if (!uuid || !(amd ? ll_startswith(uuid, e + 4) : ll_startswith(uuid, e)))
			continue;
		if (found >= 0) {
			*why = "UUID prefix matches several GPUs";
			return -1;
		}
		found = s->pool[k];
	}
	if (found < 0)
		*why = amd ? "no GPU with this unique id (unknown without ROCm SMI)"
			   : "no GPU with this UUID (UUIDs unknown without NVML)";
	return found;
}

/* CUDA (and HIP) read the list up to the first invalid entry and ignore the rest;
 * so do we, and we say so. */
static void parse_visible(struct plan_state *s, const char *var, const char *list)
{
	_cleanup_free_ char *copy = ll_strdup(list);
	char *save = NULL;

	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const char *why = NULL;
		char *e = tok;
		int idx;

		while (isspace((unsigned char)*e))
			e++;
		ll_strstrip_end(e);
		idx = visible_entry(s, e, &why);
		for (size_t i = 0; idx >= 0 && i < s->n_gpus; i++)
			if (s->gpus[i] == idx) {
				why = "listed twice";
				idx = -1;
			}
		if (idx < 0) {
			plan_lint(s, LL_LINT_ERROR, var, "entry '%s' in %s: %s; %s ignores it and every entry after it",
				  e, var, why, s->vendor == LL_GPU_VENDOR_AMD ? "ROCm" : "CUDA");
			break;
		}
		*(int *)ll_array_push(&s->gpus, &s->n_gpus, sizeof(int)) = idx;
	}
}

/* The vendor whose GPUs the workers use: a framework build drives one (CUDA or
 * ROCm). The one with more GPUs; a tie goes to NVIDIA. */
static void choose_vendor(struct plan_state *s)
{
	const struct ll_facts *f = s->f;
	size_t nvidia = 0, amd = 0;

	for (size_t i = 0; i < f->n_gpus; i++) {
		nvidia += f->gpus[i].vendor != LL_GPU_VENDOR_AMD;
		amd += f->gpus[i].vendor == LL_GPU_VENDOR_AMD;
	}
	s->vendor = amd > nvidia ? LL_GPU_VENDOR_AMD : LL_GPU_VENDOR_NVIDIA;
	for (size_t i = 0; i < f->n_gpus; i++)
		if ((f->gpus[i].vendor == LL_GPU_VENDOR_AMD) == (s->vendor == LL_GPU_VENDOR_AMD))
			*(int *)ll_array_push(&s->pool, &s->n_pool, sizeof(int)) = (int)i;
	if (nvidia && amd)
		plan_lint(s, LL_LINT_WARNING, s->vendor == LL_GPU_VENDOR_AMD ? "ROCR_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES",
			  "GPUs of two vendors (%zu NVIDIA, %zu AMD): a PyTorch build drives one of them (CUDA or ROCm); "
			  "planned for the %zu %s GPU%s, the others are left alone",
			  nvidia, amd, s->n_pool, s->vendor == LL_GPU_VENDOR_AMD ? "AMD" : "NVIDIA", s->n_pool == 1 ? "" : "s");
}

/* The visibility variable of the vendor, from the highest layer: CUDA_VISIBLE_DEVICES;
 * for AMD ROCR_VISIBLE_DEVICES (ROCm's recommendation on Linux), else HIP's own
 * HIP_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES, which HIP honors too (HIP docs,
 * "GPU isolation variables"). */
static const char *visible_input(struct plan_state *s, const char **ret_var, enum ll_source *src, const char **origin)
{
	static const char *const amd_vars[] = { "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES" };
	const char *v;

	if (s->vendor != LL_GPU_VENDOR_AMD) {
		*ret_var = "CUDA_VISIBLE_DEVICES";
		return plan_input_value(s, *ret_var, src, origin);
	}
	for (size_t i = 0; i < LL_ARRAY_SIZE(amd_vars); i++)
		if ((v = plan_input_value(s, amd_vars[i], src, origin))) {
			*ret_var = amd_vars[i];
			return v;
		}
	*ret_var = "ROCR_VISIBLE_DEVICES";
	return NULL;
}

int plan_gpus_decide(struct plan_state *s, struct ll_error *err)
{
	const struct ll_facts *f = s->f;
	enum ll_source src = LL_SOURCE_DEFAULT;
	const char *origin = NULL, *list, *slurm_var = NULL, *var;
	(void)err;

	if (!f->gpus_known) {
		/* Neither an order nor a selection can be checked against GPUs nobody
		 * recorded; what the user brings is passed on as it is. */
		plan_decide(s, "CUDA_DEVICE_ORDER", NULL, LL_SOURCE_PROBE, true, "GPUs unknown: %s", ll_facts_gpus_unknown_why(f));
		plan_decide(s, "CUDA_VISIBLE_DEVICES", NULL, LL_SOURCE_PROBE, true, "GPUs unknown: %s", ll_facts_gpus_unknown_why(f));
		return 0;
	}
	if (f->n_gpus == 0) {
		plan_decide(s, "CUDA_DEVICE_ORDER", NULL, LL_SOURCE_PROBE, true, "no GPUs on this node");
		return 0;
	}
	choose_vendor(s);
	if (s->vendor == LL_GPU_VENDOR_AMD)
		plan_decide(s, "CUDA_DEVICE_ORDER", NULL, LL_SOURCE_PROBE, true,
			    "AMD GPUs: HIP numbers them itself (KFD order), CUDA_DEVICE_ORDER is CUDA's");
	else
		plan_decide(s, "CUDA_DEVICE_ORDER", "PCI_BUS_ID", LL_SOURCE_DEFAULT, true,
			    "CUDA indices follow PCI bus order, the order of the plan and of nvidia-smi");

	list = visible_input(s, &var, &src, &origin);
	if (!list) {
		slurm_var = plan_environ_get(s->in, "SLURM_STEP_GPUS") ? "SLURM_STEP_GPUS"
			    : plan_environ_get(s->in, "SLURM_JOB_GPUS") ? "SLURM_JOB_GPUS"
									 : NULL;
		list = slurm_var ? plan_environ_get(s->in, slurm_var) : NULL;
		src = LL_SOURCE_ENVIRONMENT;
	}
	if (!list) {
		for (size_t i = 0; i < s->n_pool; i++)
			*(int *)ll_array_push(&s->gpus, &s->n_gpus, sizeof(int)) = s->pool[i];
		plan_decide(s, var, NULL, LL_SOURCE_PROBE, true, "all %zu %sGPUs are visible", s->n_pool,
			    s->vendor == LL_GPU_VENDOR_AMD ? "AMD " : "");
		return 0;
	}
	parse_visible(s, slurm_var ? slurm_var : var, list);
	if (slurm_var)
		plan_decide(s, var, list, src, true,
			    "from %s (Slurm's allocation; its indices are taken as PCI order): %zu of %zu GPUs",
			    slurm_var, s->n_gpus, s->n_pool);
	else
		plan_decide(s, var, list, src, true, "%s%s: %zu of %zu GPUs for the workers",
			    src == LL_SOURCE_ENVIRONMENT ? "inherited from the environment"
			    : src == LL_SOURCE_CLI	 ? "set on the command line"
							 : "set by profile ",
			    src == LL_SOURCE_PROFILE && origin ? origin : "", s->n_gpus, s->n_pool);
	plan_origin(s, var, src == LL_SOURCE_ENVIRONMENT ? NULL : origin);
	return 0;
}

/* torchrun.nproc_per_node: the command line's or a profile's count, else one worker per
 * visible GPU. torchrun's own words (auto, gpu, cpu) pass on to it: it counts then, and
 * the placement covers the plan's count. */
static void decide_nproc(struct plan_state *s)
{
	enum ll_source src = LL_SOURCE_DEFAULT;
	const char *origin = NULL, *v, *name = "torchrun.nproc_per_node";
	char num[16];
	int n = 0;

	v = plan_input_value(s, name, &src, &origin);
	if (v && parse_count(v, &n) < 0 && strcmp(v, "auto") != 0 && strcmp(v, "gpu") != 0 && strcmp(v, "cpu") != 0) {
		plan_lint(s, LL_LINT_ERROR, name, "'%s' is not a count of workers: ignored", v);
		v = NULL;
	}
	if (v && n > 0) {
		plan_decide(s, name, v, src, false, src == LL_SOURCE_CLI ? "set on the command line (%s)" : "set by profile %s",
			    origin ? origin : "?");
		plan_origin(s, name, origin);
	} else if (v) {
		/* torchrun counts at start; the plan places as many ranks as it would itself. */
		n = s->n_gpus > 0 ? (int)s->n_gpus : 1;
		plan_decide(s, name, v, src, false, "%s %s: torchrun counts the workers itself; the placement covers %d",
			    src == LL_SOURCE_CLI ? "set on the command line:" : "set by profile", origin ? origin : "?", n);
		plan_origin(s, name, origin);
		plan_lint(s, LL_LINT_INFO, name, "'%s' is decided by torchrun: ranks beyond the plan's %d run unbound", v, n);
	} else if (s->n_gpus > 0) {
		n = (int)s->n_gpus;
		snprintf(num, sizeof(num), "%d", n);
		plan_decide(s, name, num, LL_SOURCE_PROBE, false, "one worker per visible GPU");
	} else if (!s->f->gpus_known) {
		/* torchrun needs a count; its own default is 1. Not a guess about the
		 * node: a default, and the lint says to give the real count. */
		n = 1;
		plan_decide(s, name, "1", LL_SOURCE_DEFAULT, false,
			    "GPUs unknown: %s: torchrun's default of one worker", ll_facts_gpus_unknown_why(s->f));
		plan_lint(s, LL_LINT_WARNING, name,
			  "the number of GPUs is unknown, %s: one worker is started; give --nproc-per-node, "
			  "or probe the node itself",
			  ll_facts_gpus_unknown_why(s->f));
	} else {
		n = 1;
		plan_decide(s, name, "1", LL_SOURCE_DEFAULT, false,
			    s->f->n_gpus > 0 ? "no GPU visible: one CPU worker" : "no GPUs: one CPU worker");
	}
	s->p->nproc_per_node = n;
	if (s->n_gpus > 0 && (size_t)n > s->n_gpus)
		plan_lint(s, LL_LINT_WARNING, name, "%d workers on %zu GPUs: local ranks share GPUs round-robin", n,
			  s->n_gpus);
}

static void decide_bind(struct plan_state *s)
{
	enum ll_source src;
	const char *origin, *v;
	enum ll_bind_mode m;

	if (s->in->bind_from_cli) {
		s->p->bind = s->in->bind;
		plan_decide(s, "bind", ll_bind_mode_name(s->in->bind), LL_SOURCE_CLI, false, "--bind on the command line");
	} else if ((v = plan_input_value(s, "bind", &src, &origin)) && ll_bind_mode_parse(v, &m) == 0) {
		s->p->bind = m;
		plan_decide(s, "bind", v, src, false, "set by %s%s%s", ll_source_name(src), origin ? " " : "",
			    origin ? origin : "");
		plan_origin(s, "bind", origin);
	} else {
		if (v)
			plan_lint(s, LL_LINT_ERROR, "bind", "'%s' is not a binding mode (numa, core or none)", v);
		s->p->bind = s->in->bind;
		plan_decide(s, "bind", ll_bind_mode_name(s->in->bind), LL_SOURCE_DEFAULT, false,
			    "CPUs and memory of each GPU's NUMA node, split among its ranks");
	}
	if ((v = plan_input_value(s, "cores-per-rank", &src, &origin))) {
		if (parse_count(v, &s->cores_per_rank) == 0)
			plan_decide(s, "cores-per-rank", v, src, false, "set by %s", ll_source_name(src));
		else
			plan_lint(s, LL_LINT_ERROR, "cores-per-rank", "'%s' is not a count of cores", v);
	}
}

/* The cores a rank may share with others of its domain: those of its GPU's NUMA
 * node, or every core when the node (or the GPU's locality) is unknown. Returns the
 * domain key: a NUMA OS index, or -1 for the whole machine. */
static int rank_domain(const struct plan_state *s, int gpu)
{
	const struct ll_facts *f = s->f;
	int numa = gpu >= 0 ? f->gpus[gpu].numa_node : -1;

	if (numa < 0)
		return -1;
	for (size_t c = 0; c < f->n_cores; c++)
		if (f->cores[c].numa_node == numa)
			return numa;
	return -1; /* a NUMA node without CPUs (GPU memory exposed as NUMA) */
}

static size_t domain_cores(const struct ll_facts *f, int domain, size_t *out)
{
	size_t n = 0;

	for (size_t c = 0; c < f->n_cores; c++)
		if (domain < 0 || f->cores[c].numa_node == domain)
			out[n++] = c;
	return n;
}

/* hwloc list string of the given cores; `first_pu_only` keeps one hardware thread per core. */
static char *cores_cpuset(const struct ll_facts *f, const size_t *cores, size_t n, bool first_pu_only, int *numa)
{
	hwloc_bitmap_t all = hwloc_bitmap_alloc(), one = hwloc_bitmap_alloc();
	char *text = NULL;

	*numa = n > 0 ? f->cores[cores[0]].numa_node : -1;
	for (size_t i = 0; i < n; i++) {
		const struct ll_core *c = &f->cores[cores[i]];

		if (c->numa_node != *numa)
			*numa = -1;
		if (!c->cpuset || hwloc_bitmap_list_sscanf(one, c->cpuset) < 0)
			continue;
		if (first_pu_only && !hwloc_bitmap_iszero(one))
			hwloc_bitmap_only(one, (unsigned)hwloc_bitmap_first(one));
		hwloc_bitmap_or(all, all, one);
	}
	if (!hwloc_bitmap_iszero(all) && hwloc_bitmap_list_asprintf(&text, all) < 0)
		text = NULL;
	hwloc_bitmap_free(all);
	hwloc_bitmap_free(one);
	return text;
}

int plan_placement_decide(struct plan_state *s, struct ll_error *err)
{
	const struct ll_facts *f = s->f;
	struct ll_plan *p = s->p;
	_cleanup_free_ size_t *cores = ll_calloc(f->n_cores + 1, sizeof(size_t));
	_cleanup_free_ int *domain = NULL;
	int min_cores = 0;
	bool oversubscribed = false;
	struct ll_buf omp_why;
	(void)err;

	decide_bind(s);
	decide_nproc(s);
	domain = ll_calloc((size_t)p->nproc_per_node, sizeof(int));
	p->ranks = ll_calloc((size_t)p->nproc_per_node, sizeof(*p->ranks));
	p->n_ranks = (size_t)p->nproc_per_node;

	for (size_t r = 0; r < p->n_ranks; r++) {
		struct ll_rank_placement *rk = &p->ranks[r];

		rk->local_rank = (int)r;
		rk->gpu = s->n_gpus > 0 ? s->gpus[r % s->n_gpus] : -1;
		rk->gpu_busid = rk->gpu >= 0 ? ll_strdup(f->gpus[rk->gpu].busid) : NULL;
		rk->numa_node = -1;
		domain[r] = rank_domain(s, rk->gpu);
	}

	ll_buf_init(&omp_why);
	for (size_t r = 0; r < p->n_ranks; r++) {
		struct ll_rank_placement *rk = &p->ranks[r];
		size_t m = domain_cores(f, domain[r], cores), k = 0, j = 0, share, first;
		int numa;

		for (size_t q = 0; q < p->n_ranks; q++) {
			if (domain[q] != domain[r])
				continue;
			if (q < r)
				j++;
			k++;
		}
		if (m == 0)
			continue; /* no core facts: nothing to bind to */
		share = m / k;
		if (share == 0) {
			/* More ranks than cores: each rank gets one core, shared round-robin. */
			oversubscribed = true;
			share = 1;
			first = j % m;
		} else {
			if (p->bind == LL_BIND_CORE && s->cores_per_rank > 0) {
				if ((size_t)s->cores_per_rank * k <= m)
					share = (size_t)s->cores_per_rank;
				else if (j == 0)
					plan_lint(s, LL_LINT_WARNING, "cores-per-rank",
						  "%d cores for each of %zu ranks do not fit in %zu cores: %zu each",
						  s->cores_per_rank, k, m, share);
			}
			first = j * share;
		}
		rk->n_cores = (int)share;
		if (min_cores == 0 || rk->n_cores < min_cores) {
			min_cores = rk->n_cores;
			ll_buf_reset(&omp_why);
			if (domain[r] >= 0)
				ll_buf_addf(&omp_why, "%zu cores of NUMA node %d shared by %zu rank%s", m, domain[r], k,
					    k == 1 ? "" : "s");
			else
				ll_buf_addf(&omp_why, "%zu cores of the machine shared by %zu rank%s", m, k,
					    k == 1 ? "" : "s");
		}
		if (p->bind == LL_BIND_NONE)
			continue;
		rk->cpuset = cores_cpuset(f, cores + first, share, p->bind == LL_BIND_CORE, &numa);
		rk->numa_node = domain[r] >= 0 ? domain[r] : numa;
	}
	if (oversubscribed)
		plan_lint(s, LL_LINT_WARNING, "torchrun.nproc_per_node", "more ranks than cores: ranks share cores");

	if (min_cores > 0) {
		char num[16];

		snprintf(num, sizeof(num), "%d", min_cores);
		plan_decide(s, "OMP_NUM_THREADS", num, LL_SOURCE_PROBE, true, "cores each rank is given: %s",
			    omp_why.s);
	} else {
		plan_decide(s, "OMP_NUM_THREADS", NULL, LL_SOURCE_PROBE, true,
			    "cores unknown: torchrun's default (1) applies");
	}
	ll_buf_release(&omp_why);
	return 0;
}
