/* Profile layers, lowest to highest precedence (docs/profiles.md):
 *   1. installed profiles whose `match` applies (least specific first, then by name)
 *   2. /etc/llmlaunch/config.yaml
 *   3. $XDG_CONFIG_HOME/llmlaunch/config.yaml
 *   4. ./.llmlaunch.yaml
 *   5. each --profile NAME|PATH|URL, in order
 * Each layer contributes what it extends first, then its own values. The result is
 * a flat list of assignments (later wins) with FILE:LINE origins for the planner. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llmlaunch/clock.h"
#include "llmlaunch/paths.h"
#include "llmlaunch/profile.h"
#include "llmlaunch/version.h"

#define MAX_EXTENDS_DEPTH 16

const char *ll_layer_kind_name(enum ll_layer_kind k)
{
	static const char *const names[] = { "matched", "system", "user", "local", "cli" };
	return (unsigned)k < LL_ARRAY_SIZE(names) ? names[k] : "?";
}

static void strv_push(char ***v, size_t *n, char *s)
{
	*(char **)ll_array_push(v, n, sizeof(char *)) = s;
}

char **ll_profile_dirs(void)
{
	const char *env = getenv("LLMLAUNCH_PROFILE_PATH");
	char **v = NULL;
	size_t n = 0;

	if (env) {
		_cleanup_free_ char *copy = ll_strdup(env);
		char *save = NULL;
		for (char *t = strtok_r(copy, ":", &save); t; t = strtok_r(NULL, ":", &save))
			strv_push(&v, &n, ll_strdup(t));
	} else {
		strv_push(&v, &n, ll_installed_profile_dir());
	}
	strv_push(&v, &n, NULL);
	return v;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *yaml_stem(const char *file)
{
	size_t n = strlen(file);

	if (n > 5 && strcmp(file + n - 5, ".yaml") == 0)
		return ll_strndup(file, n - 5);
	if (n > 4 && strcmp(file + n - 4, ".yml") == 0)
		return ll_strndup(file, n - 4);
	return NULL;
}

int ll_profile_list_installed(char *const *dirs, size_t n_dirs, char ***ret_names, char ***ret_paths, size_t *ret_n,
			      struct ll_error *err)
{
	char **names = NULL, **paths = NULL;
	size_t n = 0, np = 0;

	(void)err;
	for (size_t d = 0; d < n_dirs; d++) {
		char **files = NULL;
		size_t nf = 0;
		DIR *dir = opendir(dirs[d]);
		struct dirent *de;

		if (!dir)
			continue; /* a missing directory simply holds no profiles */
		while ((de = readdir(dir))) {
			_cleanup_free_ char *stem = de->d_name[0] != '.' ? yaml_stem(de->d_name) : NULL;
			if (stem)
				strv_push(&files, &nf, ll_strdup(de->d_name));
		}
		closedir(dir);
		if (nf)
			qsort(files, nf, sizeof(char *), cmp_str);
		for (size_t i = 0; i < nf; i++) {
			char *stem = yaml_stem(files[i]);
			bool seen = false;
			for (size_t j = 0; j < n && !seen; j++)
				seen = strcmp(names[j], stem) == 0;
			if (seen) {
				free(stem);
			} else {
				strv_push(&names, &n, stem);
				strv_push(&paths, &np, ll_asprintf("%s/%s", dirs[d], files[i]));
			}
			free(files[i]);
		}
		free(files);
	}
	strv_push(&names, &n, NULL);
	strv_push(&paths, &np, NULL);
	*ret_names = names;
	*ret_paths = paths;
	*ret_n = n - 1;
	return 0;
}

/* ---- resolution ---- */

/* Every profile is loaded once per resolution: a diamond of extends reaches the same
 * file or URL many times (8 extends per level, 6 levels: 262,144 paths), and each
 * load used to read, parse and, for a URL, fetch it again. */
struct memo {
	char *key;                  /* canonical path (realpath) or the URL as written */
	struct ll_profile *p;       /* owned by the set */
};

struct resolver {
	const struct ll_profile_opts *opts;
	struct ll_profile_set *set;
	char **dirs;
	size_t n_dirs;
	char *stack[MAX_EXTENDS_DEPTH + 1]; /* identities of the chain being expanded */
	size_t depth;
	struct memo *memo;
	size_t n_memo;
	size_t n_loaded;            /* distinct profiles loaded by reference (--profile, extends) */
	size_t n_fetches;           /* of which fetched from a URL */
	size_t n_applied;           /* profiles applied, repeats of a diamond included */
	double fetch_s;             /* time spent fetching so far */
};

static bool is_path_free(const char *ref)
{
	char *stem;

	if (strchr(ref, '/'))
		return true;
	stem = yaml_stem(ref);
	free(stem);
	return stem != NULL;
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return ll_strdup(".");
	return slash == path ? ll_strdup("/") : ll_strndup(path, (size_t)(slash - path));
}

static char *find_by_name(struct resolver *r, const char *name)
{
	for (size_t i = 0; i < r->n_dirs; i++) {
		static const char *const exts[] = { ".yaml", ".yml" };
		for (size_t e = 0; e < 2; e++) {
			char *p = ll_asprintf("%s/%s%s", r->dirs[i], name, exts[e]);
			if (access(p, F_OK) == 0)
				return p;
			free(p);
		}
	}
	return NULL;
}

static void not_found_hint(struct resolver *r, const char *name, struct ll_error *err)
{
	char **names = NULL, **paths = NULL;
	size_t n = 0;
	const char *pick;

	ll_profile_list_installed(r->dirs, r->n_dirs, &names, &paths, &n, NULL);
	pick = ll_did_you_mean(name, (const char *const *)names, n, 3);
	if (pick)
		ll_error_hint(err, "did you mean '%s'? ('llmlaunch profiles list' shows them all)", pick);
	else
		ll_error_hint(err, "'llmlaunch profiles list' shows the installed profiles");
	ll_strv_free_null(names);
	ll_strv_free_null(paths);
}

static struct ll_profile *memo_find(const struct resolver *r, const char *key)
{
	for (size_t i = 0; i < r->n_memo; i++)
		if (strcmp(r->memo[i].key, key) == 0)
			return r->memo[i].p;
	return NULL;
}

static void keep(struct resolver *r, struct ll_profile *p)
{
	*(struct ll_profile **)ll_array_push(&r->set->profiles, &r->set->n_profiles, sizeof(p)) = p;
}

/* The set owns p from now on; later references to `key` get the same profile. */
static void memo_add(struct resolver *r, const char *key, struct ll_profile *p)
{
	struct memo *m = ll_array_push(&r->memo, &r->n_memo, sizeof(*m));

	m->key = ll_strdup(key);
	m->p = p;
	keep(r, p);
}

static int count_load(struct resolver *r, const char *ref, struct ll_error *err)
{
	if (++r->n_loaded > LL_PROFILE_MAX_LOADED)
		return ll_error_set(err, -E2BIG, "'%s': more than %d distinct profiles in one resolution", ref,
				    LL_PROFILE_MAX_LOADED);
	return 0;
}

/* `shown`: ref as messages may name it (ll_url_redact). */
static int fetch_ref(struct resolver *r, const char *ref, const char *shown, const struct ll_profile *base,
		     struct ll_profile **ret, struct ll_error *err)
{
	struct ll_profile_load_opts lo = r->opts->load;
	struct ll_fetch_opts fo = r->opts->fetch;
	struct ll_fetch_result res = { 0 };
	double start;
	int k;

	if (++r->n_fetches > LL_PROFILE_MAX_FETCHES)
		return ll_error_set(err, -E2BIG, "'%s': more than %d profile URLs in one resolution", shown,
				    LL_PROFILE_MAX_FETCHES);
	/* One budget for all fetches of a command: 20 URLs that each time out must not
	 * hold a launch for 20 x 20 s. */
	if (r->fetch_s >= LL_PROFILE_FETCH_BUDGET_S)
		return ll_error_set(err, -ETIMEDOUT, "'%s': fetching profiles took more than %d s in all", shown,
				    LL_PROFILE_FETCH_BUDGET_S);
	fo.budget_ms = (long)((LL_PROFILE_FETCH_BUDGET_S - r->fetch_s) * 1000) + 1;
	/* A fetched profile may not send this machine to loopback, link-local or
	 * private addresses (the node's own services, the cloud's metadata server)
	 * unless it came from such an address itself, which only the user's own URL
	 * can have reached. */
	if (base && base->remote && !base->nonpublic)
		fo.public_only = true;
	start = ll_now_s();
	k = ll_profile_fetch(ref, &fo, &res, err);
	r->fetch_s += ll_now_s() - start;
	if (k < 0)
		return k;
	if (res.warning)
		strv_push(&r->set->warnings, &r->set->n_warnings, LL_TAKE(res.warning));
	lo.remote = true;
	k = ll_profile_parse(res.url, res.body, res.len, &lo, ret, NULL, err);
	if (k == 0)
		(*ret)->nonpublic = res.nonpublic;
	ll_fetch_result_release(&res);
	return k;
}

/* Load one reference, or find it loaded already. `base` is the including profile
 * (NULL for a layer itself). *ret is owned by the set; *ret_identity (malloc'ed)
 * names it in cycle messages. */
static int load_ref(struct resolver *r, const char *ref, const struct ll_profile *base, char **ret_identity,
		    struct ll_profile **ret, struct ll_error *err)
{
	_cleanup_free_ char *path = NULL, *key = NULL;
	struct ll_profile *p;
	int k;

	if (ll_is_url(ref)) {
		_cleanup_free_ char *bare = NULL, *sha = NULL, *shown = NULL;

		/* The URL as written, pin included, is the key; the URL without the pin
		 * names it (a cycle through two pins of one URL is still a cycle), and
		 * never with its credentials. */
		k = ll_url_split_pin(ref, &bare, &sha, err);
		if (k < 0)
			return k;
		*ret_identity = ll_url_redact(bare);
		shown = ll_url_redact(ref);
		p = memo_find(r, ref);
		if (!p) {
			k = count_load(r, shown, err);
			if (k == 0)
				k = fetch_ref(r, ref, shown, base, &p, err);
			if (k < 0) {
				free(LL_TAKE(*ret_identity));
				return k;
			}
			memo_add(r, ref, p);
		}
		*ret = p;
		return 0;
	}
	if (is_path_free(ref)) {
		/* A fetched profile naming local files could read or probe this machine's. */
		if (base && base->remote)
			return ll_error_set(err, -EPERM, "'%s': a profile from the network may extend only names and URLs",
					    ref);
		if (ref[0] != '/' && base) {
			_cleanup_free_ char *d = dir_of(base->origin);
			path = ll_asprintf("%s/%s", d, ref);
		} else {
			path = ll_strdup(ref);
		}
	} else {
		path = find_by_name(r, ref);
		if (!path) {
			ll_error_set(err, -ENOENT, "no profile named '%s'", ref);
			not_found_hint(r, ref, err);
			return -ENOENT;
		}
	}
	key = realpath(path, NULL);
	if (!key)
		key = ll_strdup(path);
	p = memo_find(r, key);
	if (!p) {
		k = count_load(r, ref, err);
		if (k == 0)
			k = ll_profile_load_file(path, &r->opts->load, &p, NULL, err);
		if (k < 0)
			return k;
		memo_add(r, key, p);
	}
	*ret = p;
	*ret_identity = LL_TAKE(key);
	return 0;
}

/* Later layers win field by field, except that a fetched profile's value never
 * replaces one that a local profile or the site's config stated: only those act
 * (drain a node, name one for exclusion); a fetched one warns. */
void ll_profile_expect_merge(struct ll_profile_expect *into, const struct ll_profile *p)
{
	const struct ll_profile_expect *e = &p->expect;
	bool remote = p->remote;

#define STATED_GPUS(x) ((x)->gpus >= 0)
#define STATED_PORTS(x) ((x)->active_rdma_ports >= 0)
#define STATED_LAYER(x) ((x)->link_layer != LL_LINK_LAYER_UNKNOWN)
#define STATED_GDR(x) ((x)->gdr_required != LL_UNKNOWN)
#define TAKE(stated, field, bit)                                                                 \
	do {                                                                                     \
		if (!stated(e) || (remote && stated(into) && !(into->fetched & (bit))))         \
			break;                                                                   \
		into->field = e->field;                                                          \
		into->fetched = remote ? into->fetched | (bit) : into->fetched & ~(unsigned)(bit); \
	} while (0)
	TAKE(STATED_GPUS, gpus, LL_EXPECT_GPUS);
	TAKE(STATED_PORTS, active_rdma_ports, LL_EXPECT_ACTIVE_RDMA_PORTS);
	TAKE(STATED_LAYER, link_layer, LL_EXPECT_LINK_LAYER);
	TAKE(STATED_GDR, gdr_required, LL_EXPECT_GDR_REQUIRED);
#undef TAKE
#undef STATED_GPUS
#undef STATED_PORTS
#undef STATED_LAYER
#undef STATED_GDR
	if (e->allreduce_busbw_gbps.value > 0 && !(remote && into->allreduce_busbw_gbps.value > 0 &&
						   !into->allreduce_busbw_gbps.fetched))
		into->allreduce_busbw_gbps = e->allreduce_busbw_gbps;
	if (e->pair_busbw_gbps.value > 0 && !(remote && into->pair_busbw_gbps.value > 0 && !into->pair_busbw_gbps.fetched))
		into->pair_busbw_gbps = e->pair_busbw_gbps;
	if (e->pair_latency_us.value > 0 && !(remote && into->pair_latency_us.value > 0 && !into->pair_latency_us.fetched))
		into->pair_latency_us = e->pair_latency_us;
}

static bool any_exists(const char *root, char *const *paths, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *p = root && strcmp(root, "/") != 0 ? ll_asprintf("%s%s", root, paths[i])
									 : ll_strdup(paths[i]);
		if (access(p, F_OK) == 0)
			return true;
	}
	return false;
}

static void warn_once(struct ll_profile_set *s, char *w)
{
	for (size_t i = 0; i < s->n_warnings; i++)
		if (strcmp(s->warnings[i], w) == 0) {
			free(w);
			return;
		}
	strv_push(&s->warnings, &s->n_warnings, w);
}

static void apply_values(struct resolver *r, const struct ll_profile *p)
{
	for (size_t i = 0; i < p->n_values; i++) {
		const struct ll_profile_value *v = &p->values[i];
		struct ll_profile_applied *a = ll_array_push(&r->set->applied, &r->set->n_applied, sizeof(*a));
		a->value = v;
		a->profile = p;
		a->origin = ll_asprintf("%s:%u", p->origin, v->line);
		a->skipped = v->n_when_exists > 0 && !any_exists(r->opts->root, v->when_exists, v->n_when_exists);
		/* The user said yes to this, but should see what a URL chose for them. */
		if (v->trusted && p->remote)
			warn_once(r->set, ll_asprintf("%s: '%s' from a profile fetched over the network, set only "
						      "because --allow-loader-vars was given",
						      a->origin, v->name));
	}
	ll_profile_expect_merge(&r->set->expect, p);
}

/* Apply p's extends chain (depth first), then p itself. p is owned by the set. */
static int expand(struct resolver *r, const struct ll_profile *p, struct ll_error *err)
{
	for (size_t i = 0; i < p->n_extends; i++) {
		const struct ll_profile_ref *ref = &p->extends[i];
		struct ll_profile *child = NULL;
		char *id = NULL;
		int k;

		if (r->opts->skip_urls && ll_is_url(ref->target))
			continue;
		k = load_ref(r, ref->target, p, &id, &child, err);
		if (k < 0) {
			ll_error_prefix(err, "%s:%u:%u: extends", p->origin, ref->line, ref->column);
			return k;
		}
		for (size_t d = 0; d < r->depth; d++) {
			if (strcmp(r->stack[d], id) != 0)
				continue;
			struct ll_buf chain;
			ll_buf_init(&chain);
			for (size_t e = d; e < r->depth; e++)
				ll_buf_addf(&chain, "'%s' -> ", r->stack[e]);
			ll_buf_addf(&chain, "'%s'", id);
			k = ll_error_set(err, -ELOOP, "%s:%u:%u: extends: cycle %s", p->origin, ref->line, ref->column,
					 chain.s);
			ll_buf_release(&chain);
			free(id);
			return k;
		}
		if (r->depth >= MAX_EXTENDS_DEPTH) {
			free(id);
			return ll_error_set(err, -ELOOP, "%s:%u:%u: extends: chain deeper than %d profiles", p->origin,
					    ref->line, ref->column, MAX_EXTENDS_DEPTH);
		}
		r->stack[r->depth++] = id;
		k = expand(r, child, err);
		free(r->stack[--r->depth]);
		if (k < 0)
			return k;
	}
	/* Loads are memoised, but a diamond is still applied once per path to it (the
	 * later application wins, docs/profiles.md): bound the paths. */
	if (++r->n_applied > LL_PROFILE_MAX_APPLIED)
		return ll_error_set(err, -E2BIG, "'%s': extends reaches more than %d profiles counting repeats "
					 "(a diamond of extends too wide and deep)",
				    r->depth > 0 ? r->stack[0] : p->origin, LL_PROFILE_MAX_APPLIED);
	apply_values(r, p);
	return 0;
}

static int add_layer(struct resolver *r, enum ll_layer_kind kind, const char *requested, struct ll_profile *p,
		     char *identity, struct ll_error *err)
{
	struct ll_profile_layer *layer;
	int k;

	layer = ll_array_push(&r->set->layers, &r->set->n_layers, sizeof(*layer));
	layer->kind = kind;
	layer->requested = ll_is_url(requested) ? ll_url_redact(requested) : ll_strdup(requested);
	layer->profile = p;
	r->stack[0] = identity;
	r->depth = 1;
	k = expand(r, p, err);
	free(r->stack[0]);
	r->depth = 0;
	return k;
}

static int layer_ref(struct resolver *r, enum ll_layer_kind kind, const char *ref, struct ll_error *err)
{
	struct ll_profile *p = NULL;
	char *id = NULL;
	int k;

	k = load_ref(r, ref, NULL, &id, &p, err);
	if (k < 0)
		return k;
	return add_layer(r, kind, ref, p, id, err);
}

/* A config file is optional; when present it is a profile, and a `match` in it makes
 * it conditional. */
static int layer_config(struct resolver *r, enum ll_layer_kind kind, const char *path, const struct ll_facts *facts,
			struct ll_error *err)
{
	struct ll_profile *p = NULL;
	char *id;
	int k;

	if (!path || access(path, F_OK) < 0)
		return 0;
	k = ll_profile_load_file(path, &r->opts->load, &p, NULL, err);
	if (k < 0)
		return k;
	if (p->match.present && !ll_profile_matches(p, facts, NULL)) {
		ll_profile_free(p);
		return 0;
	}
	id = realpath(path, NULL);
	if (!id)
		id = ll_strdup(path);
	memo_add(r, id, p);
	return add_layer(r, kind, path, p, id, err);
}

struct matched {
	struct ll_profile *p;
	char *path;
};

static int cmp_matched(const void *a, const void *b)
{
	const struct matched *x = a, *y = b;

	if (x->p->match.n_conditions != y->p->match.n_conditions)
		return x->p->match.n_conditions < y->p->match.n_conditions ? -1 : 1;
	return strcmp(x->p->name, y->p->name);
}

static int layer_matched(struct resolver *r, const struct ll_facts *facts, struct ll_error *err)
{
	char **names = NULL, **paths = NULL;
	struct matched *m = NULL;
	size_t n = 0, nm = 0;
	int k = 0;

	ll_profile_list_installed(r->dirs, r->n_dirs, &names, &paths, &n, err);
	for (size_t i = 0; i < n; i++) {
		struct ll_profile *p = NULL;
		struct ll_error e = { 0 };
		if (ll_profile_load_file(paths[i], &r->opts->load, &p, NULL, &e) < 0) {
			/* One broken installed file must not stop every launch; say so instead. */
			strv_push(&r->set->warnings, &r->set->n_warnings,
				  ll_asprintf("ignoring installed profile: %s", e.message));
			ll_error_clear(&e);
			continue;
		}
		if (ll_profile_matches(p, facts, NULL)) {
			struct matched *x = ll_array_push(&m, &nm, sizeof(*x));
			x->p = p;
			x->path = paths[i];
		} else {
			ll_profile_free(p);
		}
	}
	if (nm)
		qsort(m, nm, sizeof(*m), cmp_matched);
	for (size_t i = 0; i < nm; i++) {
		if (k == 0) {
			char *id = realpath(m[i].path, NULL);

			if (!id)
				id = ll_strdup(m[i].path);
			memo_add(r, id, m[i].p);
			k = add_layer(r, LL_LAYER_MATCHED, m[i].p->name, m[i].p, id, err);
		} else {
			ll_profile_free(m[i].p);
		}
	}
	free(m);
	ll_strv_free_null(names);
	ll_strv_free_null(paths);
	return k;
}

/* One assignment per name: the last applied value. An `auto` in a higher layer must
 * undo a value from a lower one, so lower values of that name are not passed on. */
static void finish(struct ll_profile_set *s)
{
	for (size_t i = 0; i < s->n_applied; i++) {
		const struct ll_profile_applied *a = &s->applied[i];
		struct ll_assignment *x;
		bool later = false;

		if (a->skipped)
			continue;
		for (size_t j = i + 1; j < s->n_applied && !later; j++)
			later = !s->applied[j].skipped && strcmp(s->applied[j].value->name, a->value->name) == 0;
		if (later)
			continue;
		x = ll_array_push(&s->assignments, &s->n_assignments, sizeof(*x));
		x->name = a->value->name;
		x->value = a->value->value;
		x->origin = a->origin;
		x->remote = a->profile->remote;
	}
}

static struct ll_profile_set *set_new(void)
{
	struct ll_profile_set *s = ll_calloc(1, sizeof(*s));

	ll_profile_expect_init(&s->expect);
	return s;
}

static void resolver_init(struct resolver *r, const struct ll_profile_opts *opts, char ***owned_dirs)
{
	*owned_dirs = NULL;
	r->opts = opts;
	r->set = set_new();
	if (opts->dirs) {
		r->dirs = opts->dirs;
		r->n_dirs = opts->n_dirs;
	} else {
		*owned_dirs = ll_profile_dirs();
		r->dirs = *owned_dirs;
		for (r->n_dirs = 0; r->dirs[r->n_dirs]; r->n_dirs++)
			;
	}
}

int ll_profiles_resolve(const struct ll_facts *facts, char *const *cli_profiles, size_t n_cli,
			const struct ll_profile_opts *opts, struct ll_profile_set **ret, struct ll_error *err)
{
	static const struct ll_profile_opts defaults;
	struct resolver r = { 0 };
	char **owned_dirs;
	int k = 0;

	opts = opts ? opts : &defaults;
	resolver_init(&r, opts, &owned_dirs);
	if (!opts->no_auto)
		k = layer_matched(&r, facts, err);
	if (k == 0 && !opts->no_config) {
		const char *sys = opts->system_config ? opts->system_config : getenv("LLMLAUNCH_SYSTEM_CONFIG");
		const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
		_cleanup_free_ char *user = NULL;

		if (opts->user_config)
			user = ll_strdup(opts->user_config);
		else if (xdg && *xdg == '/')
			user = ll_asprintf("%s/llmlaunch/config.yaml", xdg);
		else if (home && *home)
			user = ll_asprintf("%s/.config/llmlaunch/config.yaml", home);
		k = layer_config(&r, LL_LAYER_SYSTEM, sys ? sys : "/etc/llmlaunch/config.yaml", facts, err);
		if (k == 0)
			k = layer_config(&r, LL_LAYER_USER, user, facts, err);
		if (k == 0)
			k = layer_config(&r, LL_LAYER_LOCAL, opts->local_config ? opts->local_config : ".llmlaunch.yaml",
					 facts, err);
	}
	for (size_t i = 0; k == 0 && i < n_cli; i++)
		k = layer_ref(&r, LL_LAYER_CLI, cli_profiles[i], err);
	ll_strv_free_null(owned_dirs);
	for (size_t i = 0; i < r.n_memo; i++)
		free(r.memo[i].key);
	free(r.memo);
	if (k < 0) {
		ll_profile_set_free(r.set);
		return k;
	}
	finish(r.set);
	*ret = r.set;
	return 0;
}

int ll_profile_resolve_one(const char *ref, const struct ll_profile_opts *opts, struct ll_profile_set **ret,
			   struct ll_error *err)
{
	char *refs[] = { (char *)ref };
	struct ll_profile_opts o = *opts;

	o.no_auto = true;
	o.no_config = true;
	return ll_profiles_resolve(NULL, refs, 1, &o, ret, err);
}

void ll_profile_set_free(struct ll_profile_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_profiles; i++)
		ll_profile_free(s->profiles[i]);
	free(s->profiles);
	for (size_t i = 0; i < s->n_layers; i++)
		free(s->layers[i].requested);
	free(s->layers);
	for (size_t i = 0; i < s->n_applied; i++)
		free(s->applied[i].origin);
	free(s->applied);
	free(s->assignments);
	ll_strv_free(s->warnings, s->n_warnings);
	free(s);
}

void ll_profile_set_assignments(const struct ll_profile_set *s, const struct ll_assignment **ret, size_t *n)
{
	*ret = s ? s->assignments : NULL;
	*n = s ? s->n_assignments : 0;
}
