/* The profile loader: a YAML tree (profile-yaml.c) checked against the schema in
 * docs/profiles.md. Every problem is collected (not just the first) so that
 * `profiles validate` shows them all, each as ORIGIN:LINE:COL: KEYPATH: message. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <strings.h>
#include <string.h>

#include "llmlaunch/file.h"
#include "llmlaunch/plan.h"
#include "llmlaunch/profile.h"
#include "llmlaunch/torchrun-options.h"
#include "profile-internal.h"
#include "profile-yaml.h"

#define MAX_DIAGS 100

#define TRUST_HINT "pass --allow-loader-vars if you trust this profile to choose code"
#define TRUST_HINT_REMOTE                                                                  \
	"a fetched profile may set NCCL tuning, known FI_*/UCX_* tuning and torchrun's tuning " \
	"(docs/security.md); pass --allow-loader-vars if you trust it with the rest"

const char *ll_profile_section_name(enum ll_profile_section s)
{
	static const char *const names[] = { "nccl", "env", "torchrun", "setting" };
	return (unsigned)s < LL_ARRAY_SIZE(names) ? names[s] : "?";
}

static const char *const top_keys[] = {
	"name", "description", "extends", "match", "nccl", "env", "torchrun", "bind", "python", "expect",
	"hang_timeout", "on_hang",
};
static const char *const match_keys[] = {
	"gpu_model", "gpu_count", "gpu_count_min", "rdma_driver", "link_layer", "rdma", "hostname", "dmi_product_name",
};
static const char *const expect_keys[] = { "gpus", "active_rdma_ports", "link_layer", "gdr_required",
					    "allreduce_busbw_gbps", "pair_busbw_gbps", "pair_latency_us" };
static const char *const value_keys[] = { "value", "when_exists" };

struct loader {
	const char *origin;
	const struct ll_profile_load_opts *opts;
	struct ll_profile *p;
	struct ll_profile_diags diags;
};

void ll_profile_diags_release(struct ll_profile_diags *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		free(d->items[i].message);
		free(d->items[i].hint);
	}
	free(d->items);
	d->items = NULL;
	d->n = 0;
}

static void diag_add(struct loader *l, const struct ll_ynode *at, const char *path, char *hint, const char *fmt, ...)
	LL_PRINTF(5, 6);
static void diag_add(struct loader *l, const struct ll_ynode *at, const char *path, char *hint, const char *fmt, ...)
{
	struct ll_profile_diag *d;
	struct ll_buf b;
	va_list ap;

	if (l->diags.n >= MAX_DIAGS) {
		free(hint);
		return;
	}
	ll_buf_init(&b);
	ll_buf_addf(&b, "%s:%u:%u: ", l->origin, at ? at->line : 1, at ? at->column : 1);
	if (path && *path)
		ll_buf_addf(&b, "%s: ", path);
	va_start(ap, fmt);
	ll_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	d = ll_array_push(&l->diags.items, &l->diags.n, sizeof(*d));
	d->message = ll_buf_detach(&b);
	d->hint = hint;
}

/* "did you mean 'X'?" when one candidate is close enough to be a misspelling. */
static char *suggest_within(const char *word, const char *const *cands, size_t n, size_t limit)
{
	const char *pick = ll_did_you_mean(word, cands, n, limit);

	return pick ? ll_asprintf("did you mean '%s'?", pick) : NULL;
}

/* About one typo per four characters for keys. */
static char *suggest(const char *word, const char *const *cands, size_t n)
{
	return suggest_within(word, cands, n, 0);
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

/* ---- scalar helpers ---- */

static bool need_scalar(struct loader *l, const struct ll_ynode *n, const char *path, const char *what)
{
	if (n && n->type == LL_YNODE_SCALAR && !ll_ynode_is_null(n))
		return true;
	diag_add(l, n, path, ll_ynode_is_null(n) && n && n->type == LL_YNODE_SCALAR ?
		 ll_strdup("write '' for an empty string") : NULL,
		 "expected %s, found %s", what, ll_ynode_type_name(n));
	return false;
}

static bool check_text(struct loader *l, const struct ll_ynode *n, const char *path)
{
	if (memchr(n->s, '\0', n->len)) {
		diag_add(l, n, path, NULL, "value contains a NUL character");
		return false;
	}
	if (strpbrk(n->s, "\n\r")) {
		diag_add(l, n, path, ll_strdup("values are one line: use a plain or quoted scalar, not a block"),
			 "value contains a newline");
		return false;
	}
	return true;
}


static bool get_int(struct loader *l, const struct ll_ynode *n, const char *path, long min, long max, int *ret)
{
	long v;

	if (!need_scalar(l, n, path, "an integer"))
		return false;
	if (!ll_profile_parse_long(n->s, min, max, &v)) {
		diag_add(l, n, path, NULL, "'%s' is not an integer from %ld to %ld", n->s, min, max);
		return false;
	}
	*ret = (int)v;
	return true;
}

/* A positive number (a measured figure), with the place it was written. */
static bool get_figure(struct loader *l, const struct ll_ynode *n, const char *path, struct ll_profile_figure *ret)
{
	char *end;
	double v;

	if (!need_scalar(l, n, path, "a number"))
		return false;
	errno = 0;
	v = strtod(n->s, &end);
	if (end == n->s || *end || errno || !(v > 0 && v < 1e9)) {
		diag_add(l, n, path, NULL, "'%s' is not a number above 0", n->s);
		return false;
	}
	*ret = (struct ll_profile_figure){ .value = v, .origin = l->p->origin, .line = n->line, .fetched = l->opts->remote };
	return true;
}

static bool parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = { "true", "yes", "on" }, *const no[] = { "false", "no", "off" };

	for (size_t i = 0; i < 3; i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return *ret = true, true;
		if (strcasecmp(s, no[i]) == 0)
			return *ret = false, true;
	}
	return false;
}

static bool get_bool(struct loader *l, const struct ll_ynode *n, const char *path, enum ll_tristate *ret)
{
	bool b;

	if (!need_scalar(l, n, path, "true or false"))
		return false;
	if (!parse_bool(n->s, &b)) {
		diag_add(l, n, path, NULL, "'%s' is not a boolean (true or false)", n->s);
		return false;
	}
	*ret = b ? LL_YES : LL_NO;
	return true;
}

static bool get_link_layer(struct loader *l, const struct ll_ynode *n, const char *path, enum ll_link_layer *ret)
{
	if (!need_scalar(l, n, path, "a link layer"))
		return false;
	if (strcasecmp(n->s, "InfiniBand") == 0 || strcasecmp(n->s, "IB") == 0)
		*ret = LL_LINK_LAYER_INFINIBAND;
	else if (strcasecmp(n->s, "Ethernet") == 0 || strcasecmp(n->s, "RoCE") == 0)
		*ret = LL_LINK_LAYER_ETHERNET;
	else {
		diag_add(l, n, path, NULL, "'%s' is not a link layer (InfiniBand or Ethernet)", n->s);
		return false;
	}
	return true;
}

/* A string or a list of strings, appended to *list. */
static void get_strings(struct loader *l, const struct ll_ynode *n, const char *path, char ***list, size_t *count)
{
	if (n && n->type == LL_YNODE_SEQUENCE) {
		if (n->n == 0)
			diag_add(l, n, path, NULL, "empty list");
		for (size_t i = 0; i < n->n; i++) {
			_cleanup_free_ char *sub = ll_asprintf("%s[%zu]", path, i);
			if (need_scalar(l, n->items[i], sub, "a string") && check_text(l, n->items[i], sub))
				*(char **)ll_array_push(list, count, sizeof(char *)) = ll_strdup(n->items[i]->s);
		}
		return;
	}
	if (need_scalar(l, n, path, "a string or a list of strings") && check_text(l, n, path))
		*(char **)ll_array_push(list, count, sizeof(char *)) = ll_strdup(n->s);
}

/* Walk a mapping's keys: each must be a scalar, unique, and (when `keys` is given)
 * one of them, else "unknown key" with the closest valid one. Calls fn for the rest. */
typedef void (*pair_fn)(struct loader *l, const struct ll_ynode *key, const struct ll_ynode *val, const char *path,
			void *data);
static bool walk_mapping(struct loader *l, const struct ll_ynode *n, const char *path, const char *const *keys,
			 size_t n_keys, pair_fn fn, void *data)
{
	if (!n || n->type != LL_YNODE_MAPPING) {
		diag_add(l, n, path, NULL, "expected a mapping, found %s", ll_ynode_type_name(n));
		return false;
	}
	for (size_t i = 0; i + 1 < n->n; i += 2) {
		const struct ll_ynode *k = n->items[i], *v = n->items[i + 1];
		_cleanup_free_ char *sub = NULL;
		bool dup = false;

		if (k->type != LL_YNODE_SCALAR || ll_ynode_is_null(k)) {
			diag_add(l, k, path, NULL, "keys must be plain names, found %s", ll_ynode_type_name(k));
			continue;
		}
		sub = *path ? ll_asprintf("%s.%s", path, k->s) : ll_strdup(k->s);
		for (size_t j = 0; j < i && !dup; j += 2)
			dup = n->items[j]->type == LL_YNODE_SCALAR && n->items[j]->s && strcmp(n->items[j]->s, k->s) == 0;
		if (dup) {
			diag_add(l, k, sub, NULL, "duplicate key '%s'", k->s);
			continue;
		}
		if (keys && !in_list(k->s, keys, n_keys)) {
			diag_add(l, k, sub, suggest(k->s, keys, n_keys), "unknown key '%s'", k->s);
			continue;
		}
		fn(l, k, v, sub, data);
	}
	return true;
}

/* ---- values ---- */

struct value_ctx {
	enum ll_profile_section section;
};

/* "/usr/lib/, ... or /opt/" */
static char *when_exists_dirs(void)
{
	struct ll_buf b;

	ll_buf_init(&b);
	for (size_t i = 0; i < ll_n_when_exists_remote_dirs; i++)
		ll_buf_addf(&b, "%s%s", i == 0 ? "" : i + 1 == ll_n_when_exists_remote_dirs ? " or " : ", ",
			    ll_when_exists_remote_dirs[i]);
	return ll_buf_detach(&b);
}

static void add_value(struct loader *l, const struct ll_ynode *key, const struct ll_ynode *val, const char *path,
		      enum ll_profile_section section, const char *name)
{
	const struct ll_ynode *vnode = val, *when = NULL;
	struct ll_profile_value *pv;
	bool restricted = false, outside = false;
	const char *expected;

	/* The long form: NAME: { value: X, when_exists: PATH | [PATHS] } */
	if (val && val->type == LL_YNODE_MAPPING) {
		vnode = NULL;
		for (size_t i = 0; i + 1 < val->n; i += 2) {
			const struct ll_ynode *k = val->items[i];
			_cleanup_free_ char *sub = NULL;
			if (k->type != LL_YNODE_SCALAR) {
				diag_add(l, k, path, NULL, "keys must be plain names, found %s", ll_ynode_type_name(k));
				continue;
			}
			sub = ll_asprintf("%s.%s", path, k->s);
			if (strcmp(k->s, "value") == 0 && !vnode)
				vnode = val->items[i + 1];
			else if (strcmp(k->s, "when_exists") == 0 && !when)
				when = val->items[i + 1];
			else if (in_list(k->s, value_keys, LL_ARRAY_SIZE(value_keys)))
				diag_add(l, k, sub, NULL, "duplicate key '%s'", k->s);
			else
				diag_add(l, k, sub, suggest(k->s, value_keys, LL_ARRAY_SIZE(value_keys)),
					 "unknown key '%s'", k->s);
		}
		if (!vnode) {
			diag_add(l, val, path, NULL, "missing 'value'");
			return;
		}
	}
	if (!need_scalar(l, vnode, path, "a value") || !check_text(l, vnode, path))
		return;

	if (section == LL_PROFILE_NCCL && strcmp(vnode->s, "auto") != 0 && !ll_profile_nccl_value_valid(name, vnode->s, &expected))
		diag_add(l, vnode, path, NULL, "'%s' is not a valid value: expected %s or auto", vnode->s, expected);
	if (section == LL_PROFILE_ENV && strcmp(vnode->s, "auto") == 0)
		diag_add(l, vnode, path, ll_strdup("'auto' means 'let the probe decide' and only works under 'nccl'"),
			 "'auto' is not a value for '%s'", name);
	if (section == LL_PROFILE_NCCL || section == LL_PROFILE_ENV) {
		restricted = ll_profile_var_restricted(name, vnode->s);
		/* A fetched profile: an allow-list, not the deny-list above. */
		outside = l->opts->remote && !restricted && !ll_profile_var_remote_allowed(name, vnode->s);
	}
	if (restricted && !l->opts->allow_loader_vars)
		diag_add(l, key, path, ll_strdup(TRUST_HINT), "'%s' selects code the workers load; a profile may not set it",
			 name);
	else if (outside && !l->opts->allow_loader_vars)
		diag_add(l, key, path, ll_strdup(TRUST_HINT_REMOTE),
			 "'%s' is not among the variables a profile from the network may set", name);

	pv = ll_array_push(&l->p->values, &l->p->n_values, sizeof(*pv));
	pv->trusted = restricted || outside || (section == LL_PROFILE_SETTING && l->opts->remote &&
						  strcmp(name, "python") == 0);
	pv->section = section;
	pv->name = ll_strdup(name);
	pv->value = ll_strdup(vnode->s);
	pv->line = key->line;
	pv->column = key->column;
	if (when) {
		_cleanup_free_ char *sub = ll_asprintf("%s.when_exists", path);
		get_strings(l, when, sub, &pv->when_exists, &pv->n_when_exists);
		for (size_t i = 0; i < pv->n_when_exists; i++) {
			if (pv->when_exists[i][0] != '/') {
				diag_add(l, when, sub, NULL, "'%s' is not an absolute path", pv->when_exists[i]);
			} else if (l->opts->remote && !ll_profile_when_exists_remote_allowed(pv->when_exists[i])) {
				/* Refused as written, before any look at the node: the answer
				 * cannot tell whether the path exists. */
				_cleanup_free_ char *dirs = when_exists_dirs();

				diag_add(l, when, sub,
					 ll_asprintf("a fetched profile may test only where software is installed: %s", dirs),
					 "'%s' is outside the places a profile from the network may test", pv->when_exists[i]);
			}
		}
	}
}

static void on_var(struct loader *l, const struct ll_ynode *k, const struct ll_ynode *v, const char *path, void *data)
{
	const struct value_ctx *vc = data;
	bool planner = in_list(k->s, ll_planner_vars, ll_n_planner_vars);

	if (!ll_profile_var_name_valid(k->s)) {
		diag_add(l, k, path, NULL, "'%s' is not a valid variable name ([A-Z_][A-Z0-9_]*)", k->s);
		return;
	}
	if (vc->section == LL_PROFILE_NCCL && !planner) {
		/* One edit only: NCCL_IB_HCAS is a misspelt NCCL_IB_HCA, NCCL_IB_TC is another variable. */
		char *hint = suggest_within(k->s, ll_planner_vars, ll_n_planner_vars, 1);
		if (!hint)
			hint = ll_asprintf("'nccl' holds only what the planner decides; put '%s' under 'env'", k->s);
		diag_add(l, k, path, hint, "'%s' is not a variable the planner decides", k->s);
		return;
	}
	if (vc->section == LL_PROFILE_ENV && planner) {
		diag_add(l, k, path, ll_asprintf("move it under 'nccl', where 'auto' also works"),
			 "'%s' is decided by the planner", k->s);
		return;
	}
	add_value(l, k, v, path, vc->section, k->s);
}

static void on_torchrun(struct loader *l, const struct ll_ynode *k, const struct ll_ynode *v, const char *path,
			void *data)
{
	_cleanup_free_ char *name = ll_asprintf("torchrun.%s", k->s);
	const struct ll_torchrun_option *opt = ll_torchrun_option_find(k->s);
	size_t before = l->diags.n;

	(void)data;
	/* walk_mapping passed only the keys a local profile may hold. */
	if (!opt)
		return;
	if (l->opts->remote && opt->owner != LL_TORCHRUN_TUNING) {
		diag_add(l, k, path, ll_strdup("a profile from the network may tune how torchrun runs the workers, never "
					       "who they talk to or what runs (docs/security.md)"),
			 "a profile fetched over the network may not set '%s': it is %s", k->s,
			 ll_torchrun_owner_text(opt->owner));
		return;
	}
	/* Validation first, then add_value for the text checks and the entry itself. */
	if (v && v->type == LL_YNODE_SCALAR && !ll_ynode_is_null(v)) {
		_cleanup_free_ char *expected = ll_torchrun_value_check(opt, v->s);

		if (expected)
			diag_add(l, v, path, NULL, "'%s' is not %s", v->s, expected);
	}
	if (l->diags.n == before)
		add_value(l, k, v, path, LL_PROFILE_TORCHRUN, name);
}

static void on_match(struct loader *l, const struct ll_ynode *k, const struct ll_ynode *v, const char *path, void *data)
{
	struct ll_profile_match *m = &l->p->match;
	size_t before = l->diags.n;

	(void)data;
	if (strcmp(k->s, "gpu_model") == 0)
		get_strings(l, v, path, &m->gpu_model, &m->n_gpu_model);
	else if (strcmp(k->s, "gpu_count") == 0)
		get_int(l, v, path, 0, 1 << 16, &m->gpu_count);
	else if (strcmp(k->s, "gpu_count_min") == 0)
		get_int(l, v, path, 0, 1 << 16, &m->gpu_count_min);
	else if (strcmp(k->s, "rdma_driver") == 0)
		get_strings(l, v, path, &m->rdma_driver, &m->n_rdma_driver);
	else if (strcmp(k->s, "link_layer") == 0)
		get_link_layer(l, v, path, &m->link_layer);
	else if (strcmp(k->s, "rdma") == 0)
		get_bool(l, v, path, &m->rdma);
	else if (strcmp(k->s, "hostname") == 0)
		get_strings(l, v, path, &m->hostname, &m->n_hostname);
	else if (strcmp(k->s, "dmi_product_name") == 0)
		get_strings(l, v, path, &m->dmi_product_name, &m->n_dmi_product_name);
	if (l->diags.n == before)
		m->n_conditions++;
}

static void on_expect(struct loader *l, const struct ll_ynode *k, const struct ll_ynode *v, const char *path,
		      void *data)
{
	struct ll_profile_expect *e = &l->p->expect;

	(void)data;
	if (strcmp(k->s, "gpus") == 0)
		get_int(l, v, path, 0, 1 << 16, &e->gpus);
	else if (strcmp(k->s, "active_rdma_ports") == 0)
		get_int(l, v, path, 0, 1 << 16, &e->active_rdma_ports);
	else if (strcmp(k->s, "link_layer") == 0)
		get_link_layer(l, v, path, &e->link_layer);
	else if (strcmp(k->s, "gdr_required") == 0)
		get_bool(l, v, path, &e->gdr_required);
	else if (strcmp(k->s, "allreduce_busbw_gbps") == 0)
		get_figure(l, v, path, &e->allreduce_busbw_gbps);
	else if (strcmp(k->s, "pair_busbw_gbps") == 0)
		get_figure(l, v, path, &e->pair_busbw_gbps);
	else if (strcmp(k->s, "pair_latency_us") == 0)
		get_figure(l, v, path, &e->pair_latency_us);
}

void ll_profile_expect_init(struct ll_profile_expect *e)
{
	*e = (struct ll_profile_expect){ .gpus = -1, .active_rdma_ports = -1, .gdr_required = LL_UNKNOWN };
	e->allreduce_busbw_gbps.value = e->pair_busbw_gbps.value = e->pair_latency_us.value = -1;
}

static bool valid_profile_name(const char *s)
{
	if (!*s || strlen(s) > 64 || !(islower((unsigned char)*s) || isdigit((unsigned char)*s)))
		return false;
	for (; *s; s++)
		if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '-' || *s == '_' || *s == '.'))
			return false;
	return true;
}

/* NAME.yaml or NAME.yml: a file, not a profile name. */
static bool yaml_name(const char *s)
{
	size_t n = strlen(s);

	return (n > 5 && strcmp(s + n - 5, ".yaml") == 0) || (n > 4 && strcmp(s + n - 4, ".yml") == 0);
}

static void on_top(struct loader *l, const struct ll_ynode *k, const struct ll_ynode *v, const char *path, void *data)
{
	struct ll_profile *p = l->p;
	struct value_ctx vc;

	(void)data;
	if (strcmp(k->s, "name") == 0) {
		if (need_scalar(l, v, path, "a name") && check_text(l, v, path)) {
			if (!valid_profile_name(v->s))
				diag_add(l, v, path, NULL, "'%s' is not a profile name (a-z, 0-9, '-', '_', '.')", v->s);
			free(p->name);
			p->name = ll_strdup(v->s);
		}
	} else if (strcmp(k->s, "description") == 0) {
		if (need_scalar(l, v, path, "a string")) {
			free(p->description);
			p->description = ll_strdup(v->s);
		}
	} else if (strcmp(k->s, "extends") == 0) {
		const struct ll_ynode *one = v;
		size_t n = v && v->type == LL_YNODE_SEQUENCE ? v->n : 1;
		if (v && v->type == LL_YNODE_SEQUENCE && v->n == 0)
			diag_add(l, v, path, NULL, "empty list");
		for (size_t i = 0; i < n; i++) {
			_cleanup_free_ char *sub = v && v->type == LL_YNODE_SEQUENCE ? ll_asprintf("%s[%zu]", path, i)
										       : ll_strdup(path);
			struct ll_profile_ref *ref;
			if (v && v->type == LL_YNODE_SEQUENCE)
				one = v->items[i];
			if (!need_scalar(l, one, sub, "a profile name, path or URL") || !check_text(l, one, sub))
				continue;
			/* Refused as written: a fetched profile naming local files could read
			 * or probe this machine's (profile-layers.c refuses it again). */
			if (l->opts->remote && !ll_is_url(one->s) &&
			    (strchr(one->s, '/') || yaml_name(one->s))) {
				diag_add(l, one, sub, NULL, "'%s': a profile from the network may extend only names and URLs",
					 one->s);
				continue;
			}
			ref = ll_array_push(&p->extends, &p->n_extends, sizeof(*ref));
			ref->target = ll_strdup(one->s);
			ref->line = one->line;
			ref->column = one->column;
		}
	} else if (strcmp(k->s, "match") == 0) {
		p->match.present = true;
		walk_mapping(l, v, path, match_keys, LL_ARRAY_SIZE(match_keys), on_match, NULL);
		if (v && v->type == LL_YNODE_MAPPING && v->n == 0)
			diag_add(l, v, path, ll_strdup("remove 'match' to apply the profile only when asked for"),
				 "an empty match would apply everywhere");
	} else if (strcmp(k->s, "nccl") == 0 || strcmp(k->s, "env") == 0) {
		vc.section = k->s[0] == 'n' ? LL_PROFILE_NCCL : LL_PROFILE_ENV;
		walk_mapping(l, v, path, NULL, 0, on_var, &vc);
	} else if (strcmp(k->s, "torchrun") == 0) {
		size_t n_keys;
		const char *const *keys = ll_torchrun_profile_keys(false, &n_keys);

		walk_mapping(l, v, path, keys, n_keys, on_torchrun, NULL);
	} else if (strcmp(k->s, "expect") == 0) {
		walk_mapping(l, v, path, expect_keys, LL_ARRAY_SIZE(expect_keys), on_expect, NULL);
	} else if (strcmp(k->s, "bind") == 0) {
		if (need_scalar(l, v, path, "numa, core or none") && strcmp(v->s, "numa") && strcmp(v->s, "core") &&
		    strcmp(v->s, "none"))
			diag_add(l, v, path, NULL, "'%s' is not a binding (numa, core or none)", v->s);
		else if (v && v->type == LL_YNODE_SCALAR && !ll_ynode_is_null(v))
			add_value(l, k, v, path, LL_PROFILE_SETTING, "bind");
	} else if (strcmp(k->s, "hang_timeout") == 0 || strcmp(k->s, "on_hang") == 0) {
		/* Stopping a job, or signalling every rank for its stack, is the user's
		 * or the site's to decide, not a server's. */
		if (l->opts->remote && !l->opts->allow_loader_vars)
			diag_add(l, k, path, ll_strdup(TRUST_HINT), "a profile from the network may not set '%s'", k->s);
		else if (need_scalar(l, v, path, strcmp(k->s, "on_hang") == 0 ? "stop or dump" : "a duration")) {
			_cleanup_free_ char *expected = NULL;

			if (ll_plan_setting_check(k->s, v->s, &expected) < 0)
				diag_add(l, v, path, NULL, "'%s' is not %s", v->s, expected ? expected : "a value here");
			else
				add_value(l, k, v, path, LL_PROFILE_SETTING, k->s);
		}
	} else if (strcmp(k->s, "python") == 0) {
		if (l->opts->remote && !l->opts->allow_loader_vars)
			diag_add(l, k, path, ll_strdup(TRUST_HINT), "a profile from the network may not choose the interpreter");
		else
			add_value(l, k, v, path, LL_PROFILE_SETTING, "python");
	}
}

void ll_profile_free(struct ll_profile *p)
{
	if (!p)
		return;
	free(p->origin);
	free(p->name);
	free(p->description);
	for (size_t i = 0; i < p->n_extends; i++)
		free(p->extends[i].target);
	free(p->extends);
	for (size_t i = 0; i < p->n_values; i++) {
		free(p->values[i].name);
		free(p->values[i].value);
		ll_strv_free(p->values[i].when_exists, p->values[i].n_when_exists);
	}
	free(p->values);
	ll_strv_free(p->match.gpu_model, p->match.n_gpu_model);
	ll_strv_free(p->match.rdma_driver, p->match.n_rdma_driver);
	ll_strv_free(p->match.hostname, p->match.n_hostname);
	ll_strv_free(p->match.dmi_product_name, p->match.n_dmi_product_name);
	free(p);
}

static char *stem_of(const char *origin)
{
	const char *base = strrchr(origin, '/');
	const char *dot;

	base = base ? base + 1 : origin;
	dot = strrchr(base, '.');
	if (dot && (strcmp(dot, ".yaml") == 0 || strcmp(dot, ".yml") == 0))
		return ll_strndup(base, (size_t)(dot - base));
	return ll_strdup(base);
}

int ll_profile_parse(const char *origin, const char *text, size_t len, const struct ll_profile_load_opts *opts,
		     struct ll_profile **ret, struct ll_profile_diags *diags, struct ll_error *err)
{
	static const struct ll_profile_load_opts no_opts;
	struct loader l = { .origin = origin, .opts = opts ? opts : &no_opts };
	struct ll_ynode *root = NULL;
	int r;

	r = ll_yaml_parse(origin, text, len, &root, err);
	if (r < 0) {
		if (diags) {
			struct ll_profile_diag *d = ll_array_push(&diags->items, &diags->n, sizeof(*d));
			d->message = ll_strdup(err ? err->message : "syntax error");
		}
		return r;
	}

	l.p = ll_calloc(1, sizeof(*l.p));
	l.p->origin = ll_strdup(origin);
	l.p->remote = l.opts->remote;
	l.p->match.gpu_count = l.p->match.gpu_count_min = -1;
	ll_profile_expect_init(&l.p->expect);
	l.p->match.rdma = LL_UNKNOWN;

	if (root && !ll_ynode_is_null(root))
		walk_mapping(&l, root, "", top_keys, LL_ARRAY_SIZE(top_keys), on_top, NULL);
	ll_ynode_free(root);
	if (!l.p->name)
		l.p->name = stem_of(origin);

	if (l.diags.n > 0) {
		if (l.diags.n == 1)
			ll_error_set(err, -EINVAL, "%s", l.diags.items[0].message);
		else
			ll_error_set(err, -EINVAL, "%s (and %zu more problems)", l.diags.items[0].message, l.diags.n - 1);
		if (l.diags.items[0].hint)
			ll_error_hint(err, "%s", l.diags.items[0].hint);
		if (diags) {
			for (size_t i = 0; i < l.diags.n; i++)
				*(struct ll_profile_diag *)ll_array_push(&diags->items, &diags->n,
									 sizeof(struct ll_profile_diag)) = l.diags.items[i];
			free(l.diags.items);
		} else {
			ll_profile_diags_release(&l.diags);
		}
		ll_profile_free(l.p);
		return -EINVAL;
	}
	*ret = l.p;
	return 0;
}

int ll_profile_load_file(const char *path, const struct ll_profile_load_opts *opts, struct ll_profile **ret,
			 struct ll_profile_diags *diags, struct ll_error *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	/* The true length, so that a NUL byte is reported where it is, not hidden. A
	 * FIFO, a device or a directory is refused at once (ll_open_regular). */
	r = ll_read_file_n(path, LL_PROFILE_MAX_BYTES, &text, &len);
	if (r < 0) {
		if (r == -EFBIG)
			ll_error_set(err, r, "cannot read profile '%s': larger than %d bytes", path, LL_PROFILE_MAX_BYTES);
		else
			ll_error_set(err, r, "cannot read profile '%s': %s", path, ll_file_strerror(r));
		if (diags) {
			struct ll_profile_diag *d = ll_array_push(&diags->items, &diags->n, sizeof(*d));
			d->message = ll_strdup(err ? err->message : "cannot read");
		}
		return r;
	}
	return ll_profile_parse(path, text, len, opts, ret, diags, err);
}
