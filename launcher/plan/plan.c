/* The planner's frame: the order of decisions, precedence between layers
 * (default < probe < profile < cluster < environment < cli), the plan's storage and
 * the parallelism summary. The rules themselves live in plan-net.c (network),
 * plan-placement.c (GPUs, ranks, binding) and lint.c. Pure: no I/O, no globals. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

#include "plan-internal.h"
#include "llmlaunch/env.h"
#include "llmlaunch/torchrun-options.h"

static const char *const source_names[] = {
	[LL_SOURCE_DEFAULT] = "default",
	[LL_SOURCE_PROBE] = "probe",
	[LL_SOURCE_NCCL_CONF] = "nccl-conf",
	[LL_SOURCE_PROFILE] = "profile",
	[LL_SOURCE_CLUSTER] = "cluster",
	[LL_SOURCE_LAUNCH] = "launch",
	[LL_SOURCE_ENVIRONMENT] = "environment",
	[LL_SOURCE_CLI] = "cli",
};

const char *ll_source_name(enum ll_source s)
{
	return (unsigned)s < LL_ARRAY_SIZE(source_names) ? source_names[s] : "?";
}

static const char *const bind_names[] = {
	[LL_BIND_NUMA] = "numa",
	[LL_BIND_CORE] = "core",
	[LL_BIND_NONE] = "none",
};

const char *ll_bind_mode_name(enum ll_bind_mode m)
{
	return (unsigned)m < LL_ARRAY_SIZE(bind_names) ? bind_names[m] : "?";
}

int ll_bind_mode_parse(const char *s, enum ll_bind_mode *ret)
{
	for (size_t i = 0; s && i < LL_ARRAY_SIZE(bind_names); i++)
		if (strcmp(s, bind_names[i]) == 0) {
			*ret = (enum ll_bind_mode)i;
			return 0;
		}
	return -EINVAL;
}

static const char *const lint_level_names[] = {
	[LL_LINT_INFO] = "info",
	[LL_LINT_WARNING] = "warning",
	[LL_LINT_ERROR] = "error",
};

const char *ll_lint_level_name(enum ll_lint_level l)
{
	return (unsigned)l < LL_ARRAY_SIZE(lint_level_names) ? lint_level_names[l] : "?";
}

/* Variables for the workers are spelled in capitals; lower-case names are settings
 * of llmlaunch or torchrun ("bind", "torchrun.max_restarts"). */
bool plan_is_variable_name(const char *name)
{
	if (!name || !(isupper((unsigned char)*name) || *name == '_'))
		return false;
	for (const char *c = name; *c; c++)
		if (!(isupper((unsigned char)*c) || isdigit((unsigned char)*c) || *c == '_'))
			return false;
	return true;
}

/* The lower-case names anything reads back from a plan (plan-placement.c, `run`'s
 * choice of interpreter); "torchrun.OPTION" besides. */
static const char *const setting_names[] = { "bind",    "cores-per-rank", "nproc-per-node",
					     "python", "hang_timeout",   "on_hang" };

const char *const *ll_plan_setting_names(size_t *ret_n)
{
	*ret_n = LL_ARRAY_SIZE(setting_names);
	return setting_names;
}

int ll_plan_setting_check(const char *name, const char *value, char **ret_expected)
{
	long n;

	*ret_expected = NULL;
	if (plan_is_variable_name(name))
		return 0;
	if (ll_startswith(name, "torchrun.")) {
		const struct ll_torchrun_option *o = ll_torchrun_option_find(name + strlen("torchrun."));

		if (!o)
			return -ENOENT;
		*ret_expected = ll_torchrun_value_check(o, value);
		return *ret_expected ? -EINVAL : 0;
	}
	if (strcmp(name, "bind") == 0) {
		enum ll_bind_mode m;

		if (ll_bind_mode_parse(value, &m) == 0)
			return 0;
		*ret_expected = ll_strdup("numa, core or none");
		return -EINVAL;
	}
	if (strcmp(name, "nproc-per-node") == 0)
		return ll_plan_setting_check("torchrun.nproc_per_node", value, ret_expected);
	if (strcmp(name, "cores-per-rank") == 0) {
		if (ll_parse_long(value, 1, LL_TORCHRUN_MAX_NPROC, &n) == 0)
			return 0;
		*ret_expected = ll_asprintf("a count from 1 to %d", LL_TORCHRUN_MAX_NPROC);
		return -EINVAL;
	}
	if (strcmp(name, "hang_timeout") == 0) {
		double s;

		if (ll_parse_seconds(name, value, 1, LL_HANG_TIMEOUT_MAX_S, &s, NULL) == 0)
			return 0;
		*ret_expected = ll_strdup("a duration from 1 s to 30 days (30, 30s, 5m, 1h)");
		return -EINVAL;
	}
	if (strcmp(name, "on_hang") == 0) {
		if (strcmp(value, "stop") == 0 || strcmp(value, "dump") == 0)
			return 0;
		*ret_expected = ll_strdup("stop or dump");
		return -EINVAL;
	}
	if (strcmp(name, "python") == 0) {
		if (*value)
			return 0;
		*ret_expected = ll_strdup("the path of an interpreter");
		return -EINVAL;
	}
	return -ENOENT;
}

struct ll_setting *plan_find(const struct ll_plan *p, const char *name)
{
	for (size_t i = 0; i < p->n_settings; i++)
		if (strcmp(p->settings[i].name, name) == 0)
			return &p->settings[i];
	return NULL;
}

const struct ll_setting *ll_plan_get(const struct ll_plan *p, const char *name)
{
	return p && name ? plan_find(p, name) : NULL;
}

const char *ll_plan_value(const struct ll_plan *p, const char *name)
{
	const struct ll_setting *s = ll_plan_get(p, name);

	return s ? s->value : NULL;
}

static void setting_release(struct ll_setting *s)
{
	free(s->name);
	free(s->value);
	free(s->origin);
	free(s->reason);
}

/* Takes ownership of `reason`. */
static void plan_put(struct ll_plan *p, const char *name, const char *value, enum ll_source source,
		     const char *origin, char *reason, bool exported)
{
	struct ll_setting *s = plan_find(p, name);
	/* Copy first: the arguments may point into the setting being replaced. */
	char *n = ll_strdup(name), *v = ll_strdup(value), *o = ll_strdup(origin);

	if (s)
		setting_release(s);
	else
		s = ll_array_push(&p->settings, &p->n_settings, sizeof(*s));
	s->name = n;
	s->value = v;
	s->source = source;
	s->origin = o;
	s->reason = reason ? reason : ll_strdup("");
	s->exported = exported;
}

void ll_plan_set(struct ll_plan *p, const char *name, const char *value, enum ll_source source,
		 const char *origin, const char *reason, bool exported)
{
	plan_put(p, name, value, source, origin, ll_strdup(reason), exported);
	if (strcmp(name, "torchrun.nnodes") == 0 && value)
		p->nnodes = atoi(value);
}

struct ll_plan *ll_plan_dup(const struct ll_plan *p)
{
	struct ll_plan *d = ll_calloc(1, sizeof(*d));

	*d = (struct ll_plan){ .bind = p->bind, .nproc_per_node = p->nproc_per_node, .nnodes = p->nnodes };
	for (size_t i = 0; i < p->n_settings; i++) {
		const struct ll_setting *s = &p->settings[i];

		plan_put(d, s->name, s->value, s->source, s->origin, ll_strdup(s->reason), s->exported);
	}
	d->ranks = ll_calloc(p->n_ranks ? p->n_ranks : 1, sizeof(*d->ranks));
	d->n_ranks = p->n_ranks;
	for (size_t i = 0; i < p->n_ranks; i++) {
		d->ranks[i] = p->ranks[i];
		d->ranks[i].gpu_busid = ll_strdup(p->ranks[i].gpu_busid);
		d->ranks[i].cpuset = ll_strdup(p->ranks[i].cpuset);
	}
	for (size_t i = 0; i < p->n_lints; i++) {
		struct ll_lint *l = ll_array_push(&d->lints, &d->n_lints, sizeof(*l));

		*l = p->lints[i];
		l->variable = ll_strdup(p->lints[i].variable);
		l->message = ll_strdup(p->lints[i].message);
	}
	for (size_t i = 0; i < p->n_conf; i++) {
		struct ll_conf_line *c = ll_array_push(&d->conf, &d->n_conf, sizeof(*c));

		*c = p->conf[i];
		c->name = ll_strdup(p->conf[i].name);
		c->value = ll_strdup(p->conf[i].value);
		c->origin = ll_strdup(p->conf[i].origin);
		c->note = ll_strdup(p->conf[i].note);
	}
	return d;
}

void plan_decide(struct plan_state *s, const char *name, const char *value, enum ll_source source,
		 bool exported, const char *reason_fmt, ...)
{
	struct ll_buf b;
	va_list ap;

	ll_buf_init(&b);
	va_start(ap, reason_fmt);
	ll_buf_vaddf(&b, reason_fmt, ap);
	va_end(ap);
	plan_put(s->p, name, value, source, NULL, ll_buf_detach(&b), exported);
	ll_buf_release(&b);
}

void plan_origin(struct plan_state *s, const char *name, const char *origin)
{
	struct ll_setting *st = plan_find(s->p, name);

	if (st && origin) {
		free(st->origin);
		st->origin = ll_strdup(origin);
	}
}

/* The one way a lint is added: the planner's rules and the launch's checks alike. */
static void lint_vadd(struct ll_plan *p, enum ll_lint_level level, const char *variable, bool blocking,
		      const char *fmt, va_list ap)
{
	struct ll_lint *l = ll_array_push(&p->lints, &p->n_lints, sizeof(*l));

	l->message = ll_vasprintf(fmt, ap);
	l->level = level;
	l->variable = ll_strdup(variable);
	l->blocking = blocking;
}

void plan_lint(struct plan_state *s, enum ll_lint_level level, const char *variable, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lint_vadd(s->p, level, variable, false, fmt, ap);
	va_end(ap);
}

void ll_plan_lint_add(struct ll_plan *p, enum ll_lint_level level, const char *variable, bool blocking,
		     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lint_vadd(p, level, variable, blocking, fmt, ap);
	va_end(ap);
}

const char *plan_environ_get(const struct ll_plan_input *in, const char *name)
{
	/* The planner is pure: no environment given is an empty one, never the process's. */
	return in->environ ? ll_env_get(in->environ, name) : NULL;
}

const char *plan_input_value(const struct plan_state *s, const char *name, enum ll_source *ret_source,
			     const char **ret_origin)
{
	const struct ll_plan_input *in = s->in;
	const char *v = NULL, *origin = NULL;
	enum ll_source src = LL_SOURCE_DEFAULT;

	for (size_t i = 0; i < in->n_profile; i++)
		if (strcmp(in->profile[i].name, name) == 0 && !ll_streq(in->profile[i].value, "auto")) {
			v = in->profile[i].value;
			origin = in->profile[i].origin;
			src = LL_SOURCE_PROFILE;
		}
	if (plan_is_variable_name(name)) {
		const char *e = plan_environ_get(in, name);

		if (e) {
			v = e;
			origin = NULL;
			src = LL_SOURCE_ENVIRONMENT;
		}
	}
	for (size_t i = 0; i < in->n_cli; i++)
		if (strcmp(in->cli[i].name, name) == 0) {
			v = in->cli[i].value;
			origin = in->cli[i].origin;
			src = LL_SOURCE_CLI;
		}
	if (v) {
		if (ret_source)
			*ret_source = src;
		if (ret_origin)
			*ret_origin = origin;
	}
	return v;
}

/* Lay a value from profile, environment or command line over what the probe decided.
 * The reason keeps what the probe would have done, so `explain` shows both. */
static void plan_override(struct plan_state *s, const char *name, const char *value, enum ll_source source,
			  const char *origin)
{
	struct ll_setting *old = plan_find(s->p, name);
	struct ll_buf b;

	/* Values resolved before planning (CUDA_VISIBLE_DEVICES, bind, ...) already
	 * carry their highest source; lower layers must not replace them. */
	if (old && (old->source > source || (old->source == source && ll_streq(old->value, value))))
		return;
	ll_buf_init(&b);
	switch (source) {
	case LL_SOURCE_PROFILE:
		ll_buf_addf(&b, "set by profile %s", origin ? origin : "(unknown origin)");
		break;
	case LL_SOURCE_ENVIRONMENT:
		ll_buf_add(&b, "inherited from the environment");
		break;
	case LL_SOURCE_CLI:
		ll_buf_addf(&b, "set on the command line (%s)", origin ? origin : "--set");
		break;
	default:
		ll_buf_addf(&b, "set by %s", ll_source_name(source));
		break;
	}
	if (old && old->value)
		ll_buf_addf(&b, "; %s chose '%s'", ll_source_name(old->source), old->value);
	else if (old)
		ll_buf_addf(&b, "; %s left it unset (%s)", ll_source_name(old->source), old->reason);
	plan_put(s->p, name, value, source, source == LL_SOURCE_ENVIRONMENT ? NULL : origin, ll_buf_detach(&b),
		 old ? old->exported : plan_is_variable_name(name));
	ll_buf_release(&b);
}

static void plan_apply_layers(struct plan_state *s)
{
	const struct ll_plan_input *in = s->in;

	for (size_t i = 0; i < in->n_profile; i++)
		if (!ll_streq(in->profile[i].value, "auto"))
			plan_override(s, in->profile[i].name, in->profile[i].value, LL_SOURCE_PROFILE,
				      in->profile[i].origin);
	/* Only variables the plan speaks about: everything else in the environment is
	 * inherited by the workers anyway and is not ours to list. */
	for (size_t i = 0; i < s->p->n_settings; i++) {
		const struct ll_setting *st = &s->p->settings[i];
		const char *e = st->exported ? plan_environ_get(in, st->name) : NULL;

		if (e)
			plan_override(s, st->name, e, LL_SOURCE_ENVIRONMENT, NULL);
	}
	for (size_t i = 0; i < in->n_cli; i++)
		plan_override(s, in->cli[i].name, in->cli[i].value, LL_SOURCE_CLI, in->cli[i].origin);
}

/* "; ... clique 3 ...": the workers' GPUs registered with a multi-node NVLink fabric,
 * whose domain this node alone cannot size (the agreement does: agree-clique.c). */
static const char *clique_note(const struct plan_state *s)
{
	for (size_t i = 0; i < s->n_gpus; i++) {
		const struct ll_gpu_fabric_info *fi = &s->f->gpus[s->gpus[i]].nvfabric;

		if (fi->state == LL_FABRIC_COMPLETED && fi->status == 0 && fi->cluster_uuid)
			return "; on this node only: its GPUs are in a multi-node NVLink clique, which the "
			       "agreement under srun or mpirun counts across nodes";
	}
	return "";
}

/* The GPU-GPU fabric of the workers' GPUs: NVLink (NVIDIA) or XGMI (AMD), the size
 * of the largest set they join, and LLMLAUNCH_NVLINK_DOMAIN as NVIDIA's name of it. */
static void decide_gpu_fabric(struct plan_state *s)
{
	const struct ll_facts *f = s->f;
	bool amd = s->vendor == LL_GPU_VENDOR_AMD;
	int domain = ll_facts_gpu_domain(f, s->gpus, s->n_gpus);
	int fabric = ll_facts_gpu_fabric(f, s->gpus, s->n_gpus);
	const char *unknown = amd ? LL_PLAN_XGMI_UNKNOWN
			      : f->source && ll_startswith(f->source, "snapshot:") ? LL_PLAN_NVLINK_UNKNOWN_EXPORT
										   : LL_PLAN_NVLINK_UNKNOWN_LIVE;
	const char *name = fabric == LL_GPU_FABRIC_XGMI ? "xgmi" : "nvlink";
	char num[32];

	snprintf(num, sizeof(num), "%zu", s->n_gpus);
	plan_decide(s, "LLMLAUNCH_GPUS_PER_NODE", num, LL_SOURCE_PROBE, true, "GPUs this node's workers get");
	snprintf(num, sizeof(num), "%d", domain);
	if (s->n_gpus == 0) {
		plan_decide(s, "LLMLAUNCH_NVLINK_DOMAIN", "0", LL_SOURCE_PROBE, true, f->n_gpus ? "no GPU visible" : "no GPUs");
		plan_decide(s, "LLMLAUNCH_GPU_FABRIC", NULL, LL_SOURCE_PROBE, true, "no GPUs for the workers");
		plan_decide(s, "LLMLAUNCH_GPU_DOMAIN", "0", LL_SOURCE_PROBE, true, "no GPUs for the workers");
		return;
	}
	if (domain < 0) {
		/* Absent link facts are not "no link": a plain export lists SXM GPUs joined
		 * by NVSwitches, or an XGMI hive, exactly like PCIe cards. */
		plan_decide(s, "LLMLAUNCH_GPU_FABRIC", NULL, LL_SOURCE_PROBE, true, "%s", unknown);
		plan_decide(s, "LLMLAUNCH_GPU_DOMAIN", NULL, LL_SOURCE_PROBE, true, "%s", unknown);
	} else if (domain == 1) {
		plan_decide(s, "LLMLAUNCH_GPU_FABRIC", "pcie", LL_SOURCE_PROBE, true,
			    s->n_gpus == 1 ? "one GPU" : "no NVLink or XGMI between the workers' GPUs: PCIe");
		plan_decide(s, "LLMLAUNCH_GPU_DOMAIN", "1", LL_SOURCE_PROBE, true,
			    s->n_gpus == 1 ? "one GPU" : "no GPU-GPU fabric link between the workers' GPUs");
	} else {
		plan_decide(s, "LLMLAUNCH_GPU_FABRIC", name, LL_SOURCE_PROBE, true, "the workers' GPUs are joined by %s",
			    ll_gpu_fabric_name((enum ll_gpu_fabric)fabric));
		plan_decide(s, "LLMLAUNCH_GPU_DOMAIN", num, LL_SOURCE_PROBE, true,
			    "largest set of the workers' GPUs joined by %s", ll_gpu_fabric_name((enum ll_gpu_fabric)fabric));
	}
	if (amd)
		plan_decide(s, "LLMLAUNCH_NVLINK_DOMAIN", NULL, LL_SOURCE_PROBE, true,
			    "AMD GPUs have no NVLink: their fabric is LLMLAUNCH_GPU_FABRIC, LLMLAUNCH_GPU_DOMAIN");
	else if (domain < 0)
		plan_decide(s, "LLMLAUNCH_NVLINK_DOMAIN", NULL, LL_SOURCE_PROBE, true, "%s", unknown);
	else
		plan_decide(s, "LLMLAUNCH_NVLINK_DOMAIN", num, LL_SOURCE_PROBE, true, "%s%s",
			    s->n_gpus == 1 ? "one GPU"
			    : domain == 1  ? "no NVLink between the workers' GPUs"
					   : "largest set of the workers' GPUs joined by NVLink/NVSwitch",
			    clique_note(s));
}

static void plan_decide_facts(struct plan_state *s)
{
	const struct ll_facts *f = s->f;
	const struct plan_net *net = &s->net;
	char num[32];

	snprintf(num, sizeof(num), "%d", s->p->nnodes);
	plan_decide(s, "LLMLAUNCH_NNODES", num, LL_SOURCE_DEFAULT, true,
		    s->p->nnodes == 1 ? "one node unless cluster agreement says otherwise" : "nodes in the job");
	if (!f->gpus_known) {
		plan_decide(s, "LLMLAUNCH_GPUS_PER_NODE", NULL, LL_SOURCE_PROBE, true, "GPUs unknown: %s", ll_facts_gpus_unknown_why(f));
		plan_decide(s, "LLMLAUNCH_NVLINK_DOMAIN", NULL, LL_SOURCE_PROBE, true, "GPUs unknown: %s", ll_facts_gpus_unknown_why(f));
		plan_decide(s, "LLMLAUNCH_GPU_FABRIC", NULL, LL_SOURCE_PROBE, true, "GPUs unknown: %s", ll_facts_gpus_unknown_why(f));
		plan_decide(s, "LLMLAUNCH_GPU_DOMAIN", NULL, LL_SOURCE_PROBE, true, "GPUs unknown: %s", ll_facts_gpus_unknown_why(f));
	} else {
		decide_gpu_fabric(s);
	}

	if (net->n_chosen > 0) {
		const char *kind = net->link_layer == LL_LINK_LAYER_INFINIBAND ? "ib"
				 : net->link_layer == LL_LINK_LAYER_ETHERNET  ? "roce"
									       : "rdma";
		double sum = 0;
		bool known = true;

		plan_decide(s, "LLMLAUNCH_NET", kind, LL_SOURCE_PROBE, true, "%zu RDMA port%s chosen (%s)",
			    net->n_chosen, net->n_chosen == 1 ? "" : "s",
			    net->link_layer == LL_LINK_LAYER_UNKNOWN ? "link layer unknown"
								     : ll_link_layer_name(net->link_layer));
		for (size_t i = 0; i < net->n_chosen; i++) {
			double r = f->rdma[net->chosen_dev[i]].ports[net->chosen_port[i]].rate_gbps;

			if (r < 0)
				known = false;
			else
				sum += r;
		}
		if (known) {
			snprintf(num, sizeof(num), "%g", sum);
			plan_decide(s, "LLMLAUNCH_NET_GBPS", num, LL_SOURCE_PROBE, true,
				    "sum of the chosen ports' rates");
		} else {
			plan_decide(s, "LLMLAUNCH_NET_GBPS", NULL, LL_SOURCE_PROBE, true,
				    "rate of some chosen port unknown");
		}
	} else if (net->plugin_fabric && net->plugin_installed == LL_YES) {
		plan_decide(s, "LLMLAUNCH_NET", "ofi", LL_SOURCE_PROBE, true, "%s (%s) through aws-ofi-nccl",
			    net->plugin_fabric[0] == 'e' ? "AWS EFA" : "HPE Slingshot", net->plugin_devices);
		if (net->plugin_gbps >= 0) {
			snprintf(num, sizeof(num), "%g", net->plugin_gbps);
			plan_decide(s, "LLMLAUNCH_NET_GBPS", num, LL_SOURCE_PROBE, true, "sum of the fabric's port rates");
		} else {
			plan_decide(s, "LLMLAUNCH_NET_GBPS", NULL, LL_SOURCE_PROBE, true, "rate of the fabric unknown");
		}
	} else if (net->states_unknown || net->class_unknown || (net->plugin_fabric && net->plugin_installed == LL_UNKNOWN)) {
		plan_decide(s, "LLMLAUNCH_NET", "unknown", LL_SOURCE_PROBE, true, "%s: NCCL decides at run time",
			    net->devices_unknown  ? LL_PLAN_NETDEVS_UNKNOWN
			    : net->states_unknown ? "RDMA port states unknown"
			    : net->class_unknown  ? "what drives some RDMA device is unknown"
						  : "whether aws-ofi-nccl is installed is unknown");
		plan_decide(s, "LLMLAUNCH_NET_GBPS", NULL, LL_SOURCE_PROBE, true, "network unknown");
	} else {
		plan_decide(s, "LLMLAUNCH_NET", "socket", LL_SOURCE_PROBE, true, "%s",
			    net->plugin_fabric ? "aws-ofi-nccl missing: TCP sockets" : "no usable RDMA port: TCP sockets");
		if (net->socket_if && net->socket_if->speed_mbps > 0) {
			snprintf(num, sizeof(num), "%g", net->socket_if->speed_mbps / 1000.0);
			plan_decide(s, "LLMLAUNCH_NET_GBPS", num, LL_SOURCE_PROBE, true, "link speed of %s",
				    net->socket_if->name);
		} else {
			plan_decide(s, "LLMLAUNCH_NET_GBPS", NULL, LL_SOURCE_PROBE, true,
				    "speed of the socket interface unknown");
		}
	}
}

/* The first command-line value that says the user runs the rendezvous by hand
 * (llmlaunch/torchrun-options.h, by_hand), NULL when none does. */
static const struct ll_assignment *rendezvous_by_hand(const struct ll_plan_input *in)
{
	for (size_t i = 0; i < in->n_cli; i++) {
		const struct ll_torchrun_option *o = ll_torchrun_setting_option(in->cli[i].name);

		if (o && o->by_hand && (o->kind != LL_TORCHRUN_FLAG || ll_torchrun_flag_on(in->cli[i].value)))
			return &in->cli[i];
	}
	return NULL;
}

/* "torchrun.nnodes=2 (--nnodes)", "torchrun.rdzv_endpoint=h:1 (site.yaml:4)". */
static char *assignment_text(const struct ll_assignment *a)
{
	const struct ll_torchrun_option *o = ll_torchrun_setting_option(a->name);

	if (o && o->kind == LL_TORCHRUN_FLAG)
		return ll_asprintf("%s (%s)", a->name, a->origin ? a->origin : "?");
	return ll_asprintf("%s=%s (%s)", a->name, a->value, a->origin ? a->origin : "?");
}

/* Who may set a torchrun option (docs/security.md, "torchrun options"): a fetched
 * profile only how torchrun runs the workers; the command line and local profiles
 * the world too, but only where no launcher's agreement decides it; and the
 * command line alone how the script runs. -EINVAL (a usage error) naming the value,
 * its origin and what it would replace. */
static int check_owner(const struct plan_state *s, const struct ll_assignment *a, bool from_profile,
		       struct ll_error *err)
{
	const struct ll_torchrun_option *o = ll_torchrun_setting_option(a->name);
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ char *expected = NULL;
	const char *agreement = ll_plan_value(s->p, "agreement");

	if (!o)
		return ll_error_set(err, -EINVAL, "'%s' (%s): torchrun has no option '--%s'", a->name,
				    a->origin ? a->origin : "?", a->name + strlen("torchrun."));
	text = assignment_text(a);
	if ((expected = ll_torchrun_value_check(o, a->value)))
		return ll_error_set(err, -EINVAL, "%s: expected %s", text, expected);
	if (from_profile && a->remote && o->owner != LL_TORCHRUN_TUNING)
		return ll_error_set(err, -EINVAL, "%s: a profile fetched over the network may not set %s", text, o->what);
	if (from_profile && o->owner == LL_TORCHRUN_COMMAND)
		return ll_error_set(err, -EINVAL, "%s: %s is the command line's alone", text, o->what);
	if (o->owner == LL_TORCHRUN_WORLD && agreement) {
		ll_error_set(err, -EINVAL, "%s would replace %s, which the %s agreement decides on every node", text,
			     o->what, agreement);
		ll_error_hint(err, "under srun, mpirun or an engine's variables (a TrainJob's PET_*, ...) llmlaunch agrees "
				   "the world itself; drop the value, or run the rendezvous by hand outside the launcher "
				   "(--nnodes N --master-addr HOST on every node)");
		return -EINVAL;
	}
	return 0;
}

static int check_torchrun_owner(const struct plan_state *s, const struct ll_assignment *a, bool from_profile,
				struct ll_error *err)
{
	int r = check_owner(s, a, from_profile, err);

	if (r < 0 && err)
		err->usage = true;
	return r;
}

/* Who decides the world: the launcher's agreement (in->launcher), or nobody (one node,
 * or the user's own rendezvous flags); then every torchrun option of the profiles and
 * the command line against its owner. */
static int plan_decide_world(struct plan_state *s, struct ll_error *err)
{
	const struct ll_plan_input *in = s->in;
	const struct ll_assignment *hand = rendezvous_by_hand(in);
	int r;

	if (in->launcher && !hand)
		plan_decide(s, "agreement", in->launcher, LL_SOURCE_ENVIRONMENT, false,
			    "%s: the nodes agree their ranks, the master and their interfaces before the job starts",
			    in->launcher_why ? in->launcher_why : "a launcher runs this node");
	else if (hand)
		plan_decide(s, "agreement", NULL, LL_SOURCE_CLI, false,
			    "%s on the command line: you run the rendezvous by hand%s%s%s", hand->origin ? hand->origin : "?",
			    in->launcher ? "; the " : "", in->launcher ? in->launcher : "",
			    in->launcher ? " launcher's world is not used" : "");
	else
		plan_decide(s, "agreement", NULL, LL_SOURCE_DEFAULT, false,
			    "no launcher (srun, mpirun) and no engine's variables (docs/kubernetes.md): this node is the "
			    "only one");
	for (size_t i = 0; i < in->n_profile; i++)
		if (ll_startswith(in->profile[i].name, "torchrun.") && !ll_streq(in->profile[i].value, "auto") &&
		    (r = check_torchrun_owner(s, &in->profile[i], true, err)) < 0)
			return r;
	for (size_t i = 0; i < in->n_cli; i++)
		if (ll_startswith(in->cli[i].name, "torchrun.") && (r = check_torchrun_owner(s, &in->cli[i], false, err)) < 0)
			return r;
	return 0;
}

/* torchrun's own defaults that llmlaunch replaces. */
static void plan_decide_torchrun(struct plan_state *s)
{
	char num[32];

	snprintf(num, sizeof(num), "%d", s->p->nnodes);
	plan_decide(s, "torchrun.nnodes", num, LL_SOURCE_DEFAULT, false,
		    s->p->nnodes == 1 ? "this node alone" : "nodes in the job");
	/* torch 1.13 on Python 3.11 crashes on torchrun's defaults of --redirects and --tee
	 * (Std.from_str iterates an enum whose iteration skips 0 and 3 there:
	 * ../shared/notes/ENVIRONMENT.md). A map whose only key is a local rank that does
	 * not exist means "nothing" and takes the other path; Std's mapping takes one-digit
	 * ranks only (torch/distributed/elastic/multiprocessing/api.py, _MAPPING_REGEX). */
	for (int i = 0; i < 2; i++) {
		const char *name = i ? "torchrun.tee" : "torchrun.redirects";

		if (s->p->nproc_per_node <= 9) {
			snprintf(num, sizeof(num), "%d:0", s->p->nproc_per_node);
			plan_decide(s, name, num, LL_SOURCE_DEFAULT, false,
				    "nothing %s: local rank %d does not exist (torchrun's own default crashes torch 1.13 on "
				    "Python 3.11)",
				    i ? "copied to files" : "redirected", s->p->nproc_per_node);
		} else {
			plan_decide(s, name, NULL, LL_SOURCE_DEFAULT, false,
				    "torchrun's default: no one-digit local rank is free to name in the map that avoids "
				    "torch 1.13's crash on Python 3.11");
		}
	}
}

/* The transport NCCL will use, once, after every layer: what the probe found, unless
 * NCCL_NET or NCCL_IB_DISABLE from a profile, NCCL's files, the environment or the
 * command line says otherwise. The agreement compares it, the log watcher expects it,
 * the check's verdict judges by it. */
static void plan_decide_transport(struct plan_state *s)
{
	struct ll_setting *net = plan_find(s->p, "LLMLAUNCH_NET");
	const struct ll_setting *forced = plan_find(s->p, "NCCL_NET"), *off = plan_find(s->p, "NCCL_IB_DISABLE");
	_cleanup_free_ char *probe = NULL;

	if (!net)
		return;
	probe = ll_strdup(net->value ? net->value : "unknown");
	if (forced && forced->value && forced->source > LL_SOURCE_PROBE) {
		const char *v = forced->value;

		if (strcasecmp(v, "Socket") == 0)
			plan_decide(s, "LLMLAUNCH_NET", "socket", forced->source, true,
				    "NCCL_NET=%s (%s) forces TCP sockets; the probe found %s", v, ll_source_name(forced->source),
				    probe);
		else if (strcasecmp(v, "IB") != 0)
			plan_decide(s, "LLMLAUNCH_NET", strcasestr(v, "libfabric") || strcasestr(v, "ofi") ? "ofi" : "unknown",
				    forced->source, true, "NCCL_NET=%s (%s) names a net plugin; the probe found %s", v,
				    ll_source_name(forced->source), probe);
		return;
	}
	if (off && ll_streq(off->value, "1") && off->source > LL_SOURCE_PROBE &&
	    (ll_streq(probe, "ib") || ll_streq(probe, "roce") || ll_streq(probe, "rdma")))
		plan_decide(s, "LLMLAUNCH_NET", "socket", off->source, true,
			    "NCCL_IB_DISABLE=1 (%s) turns NCCL's InfiniBand and RoCE transport off: TCP sockets; the probe "
			    "found %s",
			    ll_source_name(off->source), probe);
}

int ll_plan_build(const struct ll_plan_input *in, struct ll_plan **ret, struct ll_error *err)
{
	struct plan_state s = { .in = in, .f = in->facts };
	int r;

	if (!in->facts)
		return ll_error_set(err, -EINVAL, "cannot plan without facts");
	s.p = ll_calloc(1, sizeof(*s.p));
	s.p->nnodes = in->nnodes > 0 ? in->nnodes : 1;

	r = plan_gpus_decide(&s, err);
	if (r >= 0)
		r = plan_net_decide(&s, err);
	if (r >= 0)
		r = plan_placement_decide(&s, err);
	if (r < 0)
		goto fail;
	plan_decide_facts(&s);
	plan_decide_torchrun(&s);
	r = plan_decide_world(&s, err);
	if (r < 0)
		goto fail;
	plan_apply_layers(&s);
	plan_conf_apply(&s);
	plan_decide_transport(&s);
	plan_lint_all(&s);

	free(s.gpus);
	free(s.pool);
	free(s.net.chosen_dev);
	free(s.net.chosen_port);
	free(s.net.plugin_devices);
	*ret = s.p;
	return 0;
fail:
	free(s.gpus);
	free(s.pool);
	free(s.net.chosen_dev);
	free(s.net.chosen_port);
	free(s.net.plugin_devices);
	ll_plan_free(s.p);
	return r;
}

void ll_plan_free(struct ll_plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_settings; i++)
		setting_release(&p->settings[i]);
	free(p->settings);
	for (size_t i = 0; i < p->n_ranks; i++) {
		free(p->ranks[i].gpu_busid);
		free(p->ranks[i].cpuset);
	}
	free(p->ranks);
	for (size_t i = 0; i < p->n_lints; i++) {
		free(p->lints[i].variable);
		free(p->lints[i].message);
	}
	free(p->lints);
	for (size_t i = 0; i < p->n_conf; i++) {
		free(p->conf[i].name);
		free(p->conf[i].value);
		free(p->conf[i].origin);
		free(p->conf[i].note);
	}
	free(p->conf);
	free(p);
}

void ll_plan_summary(const struct ll_plan *p, struct ll_buf *out)
{
	const char *gpus = ll_plan_value(p, "LLMLAUNCH_GPUS_PER_NODE");
	const char *dom = ll_plan_value(p, "LLMLAUNCH_GPU_DOMAIN");
	const char *fab = ll_plan_value(p, "LLMLAUNCH_GPU_FABRIC");
	const char *net = ll_plan_value(p, "LLMLAUNCH_NET");
	const char *gbps = ll_plan_value(p, "LLMLAUNCH_NET_GBPS");
	const struct ll_setting *dom_setting = ll_plan_get(p, "LLMLAUNCH_GPU_DOMAIN");
	int n_gpus = gpus ? atoi(gpus) : 0, domain = dom ? atoi(dom) : 0;
	/* "NVLink" unless the workers' fabric is XGMI or their GPUs are AMD's (the plan
	 * holds ROCR_VISIBLE_DEVICES for AMD GPUs only). */
	const char *fabric = ll_streq(fab, "xgmi") || ll_plan_get(p, "ROCR_VISIBLE_DEVICES") ? "XGMI" : "NVLink";
	const char *net_text = ll_streq(net, "ib")     ? "InfiniBand"
			       : ll_streq(net, "roce")   ? "RoCE"
			       : ll_streq(net, "rdma")   ? "RDMA (link layer unknown)"
			       : ll_streq(net, "socket") ? "TCP sockets"
			       : ll_streq(net, "ofi")    ? "libfabric through aws-ofi-nccl"
							 : "unknown";

	/* What is not known is said, never turned into advice. */
	if (!gpus) {
		/* The reason's own words, "GPUs unknown: WHY (detail)", without the detail. */
		const struct ll_setting *g = ll_plan_get(p, "LLMLAUNCH_GPUS_PER_NODE");
		const char *why = g && g->reason && ll_startswith(g->reason, "GPUs unknown: ") ? g->reason + 14
											  : "not in the topology";
		const char *detail = strstr(why, " (");

		ll_buf_addf(out, "GPUs unknown (%.*s); ", detail ? (int)(detail - why) : (int)strlen(why), why);
	}
	else if (n_gpus == 0)
		ll_buf_add(out, "No GPUs for the workers: CPU training over gloo, ");
	else if (!dom)
		ll_buf_addf(out, "%d GPU%s per node, %s unknown; ", n_gpus, n_gpus == 1 ? "" : "s", fabric);
	else if (domain > n_gpus)
		ll_buf_addf(out, "%d GPU%s per node, NVLink domain of %d GPUs across nodes (multi-node NVLink); ", n_gpus,
			    n_gpus == 1 ? "" : "s", domain);
	else
		ll_buf_addf(out, "%d GPU%s per node, %s domain of %d; ", n_gpus, n_gpus == 1 ? "" : "s", fabric, domain);
	ll_buf_addf(out, "network between nodes: %s", net_text);
	if (gbps)
		ll_buf_addf(out, " (%s Gb/s per node)", gbps);
	ll_buf_addf(out, "; %d node%s. ", p->nnodes, p->nnodes == 1 ? "" : "s");
	if (!gpus)
		ll_buf_add(out, "No layout advice without the GPUs: probe the node itself, or give an export made "
				"with I/O ('lstopo --of xml' keeps GPUs and NICs by default).");
	else if (n_gpus == 0)
		ll_buf_add(out, "Use data parallelism only.");
	else if (n_gpus == 1)
		ll_buf_add(out, "One GPU per node: data parallelism across nodes (FSDP/ZeRO sharding to save memory).");
	else if (!dom) {
		/* The reason's first clause: "NVLink unknown: this export has no NVML data". */
		const char *why = dom_setting && dom_setting->reason ? dom_setting->reason : "GPU links unknown";
		int len = (int)strcspn(why, "(");

		while (len > 0 && why[len - 1] == ' ')
			len--;
		bool xgmi = strcmp(fabric, "XGMI") == 0;

		ll_buf_addf(out, "%.*s; whether tensor parallelism stays on %s or crosses PCIe cannot be said: "
				 "check %s on the node%s, or probe the node itself.",
			    len, why, fabric, xgmi ? "'rocm-smi --showtopo'" : "'nvidia-smi topo -m'",
			    xgmi ? "" : " (NV# entries)");
	} else if (domain > n_gpus)
		/* The agreement put each clique's nodes on consecutive ranks (agree-clique.c). */
		ll_buf_addf(out,
			    "Keep tensor and expert parallelism inside the NVLink domain: tensor x expert parallel "
			    "size at most %d, which consecutive ranks fill (the nodes of one clique have consecutive "
			    "node ranks); use data parallelism (or sharded data parallelism such as FSDP/ZeRO) and "
			    "pipeline stages across domains.",
			    domain);
	else if (domain > 1)
		ll_buf_addf(out,
			    "Keep tensor parallelism (and pipeline stages, when the model needs them) inside the "
			    "%s domain: tensor-parallel size at most %d; use data parallelism (or sharded data "
			    "parallelism such as FSDP/ZeRO) across domains and nodes.",
			    fabric, domain);
	else
		ll_buf_addf(out, "No %s between GPUs: tensor parallelism would cross PCIe; prefer data "
				 "parallelism (FSDP/ZeRO sharding to save memory) and pipeline stages if the model "
				 "does not fit one GPU.",
			    fabric);
	if (ll_streq(net, "socket") && p->nnodes > 1)
		ll_buf_add(out, " Across nodes only TCP sockets are available: expect slow gradient all-reduce; "
				"larger batches or gradient accumulation help.");
}

int ll_plan_from_facts(const struct ll_facts *f, struct ll_plan **ret)
{
	static char *const no_environ[] = { NULL };
	struct ll_plan_input in = { .facts = f, .environ = no_environ, .nnodes = 1 };

	return ll_plan_build(&in, ret, NULL);
}

int ll_plan_parallelism_summary(const struct ll_facts *f, struct ll_buf *out)
{
	_cleanup_(ll_plan_freep) struct ll_plan *p = NULL;
	int r;

	r = ll_plan_from_facts(f, &p);
	if (r < 0)
		return r;
	ll_plan_summary(p, out);
	return 0;
}
