/* Profiles: reviewed YAML files that carry what no probe can learn (docs/profiles.md).
 *
 * Four parts, one header:
 *   profile.c        the libyaml loader and validator: text in, struct ll_profile out,
 *                    every problem reported as FILE:LINE:COLUMN, key path, "did you mean"
 *   profile-match.c  does a profile's `match` apply to these facts
 *   profile-fetch.c  https:// profiles through libcurl, with a revalidated cache
 *   profile-layers.c the layers (installed profiles that match, config files, --profile)
 *                    flattened into the assignments the planner consumes
 * Library code: returns 0 or -errno, fills struct ll_error, never prints. */
#ifndef LLMLAUNCH_PROFILE_H
#define LLMLAUNCH_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include "llmlaunch/facts.h"
#include "llmlaunch/plan.h"
#include "llmlaunch/util.h"

/* Which part of a profile a value came from. */
enum ll_profile_section {
	LL_PROFILE_NCCL = 0, /* a variable the planner decides; "auto" lets the probe decide */
	LL_PROFILE_ENV,      /* any further variable, set as written */
	LL_PROFILE_TORCHRUN, /* a torchrun option default; name "torchrun.OPTION" */
	LL_PROFILE_SETTING,  /* "bind", "python" */
};
const char *ll_profile_section_name(enum ll_profile_section s);

/* One value. `when_exists` (optional) lists paths of which at least one must exist
 * on the node for the value to apply: how a profile sets NCCL_TOPO_FILE or NCCL_NET
 * only where the platform's file or plugin is really installed. */
struct ll_profile_value {
	enum ll_profile_section section;
	char *name;             /* "NCCL_IB_HCA", "FI_PROVIDER", "torchrun.max_restarts", "bind" */
	char *value;
	char **when_exists;
	size_t n_when_exists;
	unsigned line, column;  /* 1-based position of the key */
	/* Accepted only because --allow-loader-vars was given: a restricted variable,
	 * or one outside what a fetched profile may set (explain lists these). */
	bool trusted;
};

/* `match`: every condition given must hold; a list inside one condition holds when
 * any element does. A profile without `match` never applies by itself. */
struct ll_profile_match {
	bool present;
	char **gpu_model;       /* fnmatch globs, case-insensitive, against any GPU's model */
	size_t n_gpu_model;
	int gpu_count;          /* exact number of GPUs, -1: any */
	int gpu_count_min;      /* -1: any */
	char **rdma_driver;     /* globs on the driver part of RDMA device names (mlx5, efa, irdma) */
	size_t n_rdma_driver;
	enum ll_link_layer link_layer; /* UNKNOWN: any; else some usable port has it */
	enum ll_tristate rdma;  /* YES: the node has RDMA devices; NO: it has none */
	char **hostname;
	size_t n_hostname;
	char **dmi_product_name;
	size_t n_dmi_product_name;
	unsigned n_conditions;  /* how specific the match is (orders installed profiles) */
};

/* A figure the preflight check (docs/check.md) expects of this machine type, with
 * where it was stated: its source, printed with every verdict it decides. */
struct ll_profile_figure {
	double value;           /* < 0: not stated */
	const char *origin;     /* borrowed from the stating profile (the set owns it) */
	unsigned line;
	bool fetched;           /* stated by a profile fetched over the network: it warns, never acts */
};

/* Which of the Prolog's expectations a fetched profile stated (ll_profile_expect.fetched). */
enum {
	LL_EXPECT_GPUS = 1u << 0,
	LL_EXPECT_ACTIVE_RDMA_PORTS = 1u << 1,
	LL_EXPECT_LINK_LAYER = 1u << 2,
	LL_EXPECT_GDR_REQUIRED = 1u << 3,
};

/* `expect`: health expectations for the Slurm prolog, and the preflight check's
 * figures. -1 / UNKNOWN: not stated. What a fetched profile states only warns
 * (docs/security.md): its bit in `fetched`, or the figure's own `fetched`; and it
 * never replaces what a local profile or the site's config stated. */
struct ll_profile_expect {
	int gpus;
	int active_rdma_ports;
	enum ll_link_layer link_layer;
	enum ll_tristate gdr_required;
	unsigned fetched;       /* LL_EXPECT_* bits of the fields above a fetched profile stated */
	struct ll_profile_figure allreduce_busbw_gbps; /* the whole job's, at the largest size */
	struct ll_profile_figure pair_busbw_gbps;      /* a node's figure: its best pair test */
	struct ll_profile_figure pair_latency_us;      /* a node's best small-message round trip / 2 */
};

/* The expectations of nothing stated. */
void ll_profile_expect_init(struct ll_profile_expect *e);
/* Merge p's expectations into `into` as the layers do: later wins field by field,
 * but a fetched profile's field (marked in `fetched`) never replaces one that a
 * local profile or the site's config stated. */
struct ll_profile;
void ll_profile_expect_merge(struct ll_profile_expect *into, const struct ll_profile *p);

struct ll_profile_ref {
	char *target;           /* name, path or URL as written */
	unsigned line, column;
};

struct ll_profile {
	char *origin;           /* file path or URL (no #fragment): the FILE in FILE:LINE */
	bool remote;            /* fetched over the network */
	bool nonpublic;         /* fetched from a loopback, link-local or private address:
				 * only then may its `extends` reach such addresses */
	char *name;             /* `name`, else the file's stem */
	char *description;
	struct ll_profile_ref *extends;
	size_t n_extends;
	struct ll_profile_match match;
	struct ll_profile_value *values; /* in file order */
	size_t n_values;
	struct ll_profile_expect expect;
};

void ll_profile_free(struct ll_profile *p);
static inline void ll_profile_freep(struct ll_profile **p) { if (*p) { ll_profile_free(*p); *p = NULL; } }

/* Every problem found in one file, already formatted "ORIGIN:LINE:COL: KEYPATH: message",
 * each with an optional hint ("did you mean 'NCCL_IB_HCA'?"). */
struct ll_profile_diag {
	char *message;
	char *hint;
};
struct ll_profile_diags {
	struct ll_profile_diag *items;
	size_t n;
};
void ll_profile_diags_release(struct ll_profile_diags *d);

struct ll_profile_load_opts {
	/* Permit loader and library-path variables (see ll_profile_var_restricted) and,
	 * in a remote profile, what is outside its allow-list; such values are marked
	 * `trusted`. */
	bool allow_loader_vars;
	/* The text came over the network: only ll_profile_var_remote_allowed() variables,
	 * and `python` is refused too (it picks the binary). */
	bool remote;
};

/* Parse and validate one profile. `origin` names it in messages. On error returns
 * -EINVAL, *ret untouched, err holds the first problem (+ how many more) and
 * `diags` (optional) every problem. An empty document is an empty profile. */
int ll_profile_parse(const char *origin, const char *text, size_t len, const struct ll_profile_load_opts *opts,
		     struct ll_profile **ret, struct ll_profile_diags *diags, struct ll_error *err);
/* Read FILE (at most LL_PROFILE_MAX_BYTES) and parse it. */
int ll_profile_load_file(const char *path, const struct ll_profile_load_opts *opts, struct ll_profile **ret,
			 struct ll_profile_diags *diags, struct ll_error *err);

#define LL_PROFILE_MAX_BYTES (1024 * 1024)

/* True for names a profile may only set with --allow-loader-vars: anything that makes
 * the workers load or run other code (LD_*, PYTHONPATH, PATH, NCCL_NET_PLUGIN, ...). */
bool ll_profile_var_restricted(const char *name, const char *value);
/* May a profile fetched over the network set `name` to `value` without
 * --allow-loader-vars? An allow-list (docs/security.md): the planner's variables,
 * NCCL_* except the ones naming files, directories, plugins and addresses, known
 * libfabric (FI_*) and UCX tuning names, and a few others (RDMAV_FORK_SAFE,
 * CUDA_DEVICE_MAX_CONNECTIONS, TORCH_NCCL_*). Never a restricted one. */
bool ll_profile_var_remote_allowed(const char *name, const char *value);
/* The directories (with their trailing '/') below which a fetched profile's
 * `when_exists` may test a path, and the test: inside one of them, without "." or
 * ".." components or "//". */
extern const char *const ll_when_exists_remote_dirs[];
extern const size_t ll_n_when_exists_remote_dirs;
bool ll_profile_when_exists_remote_allowed(const char *path);
/* [A-Z_][A-Z0-9_]* */
bool ll_profile_var_name_valid(const char *name);

/* --- match (profile-match.c) --- */

/* Does the profile's match apply? A profile without `match` never does. When it does
 * not, *why (optional, malloc'ed) names the first condition that failed. */
bool ll_profile_matches(const struct ll_profile *p, const struct ll_facts *facts, char **why);
/* "mlx5_0" -> "mlx5", "irdma1" -> "irdma", "bnxt_re0" -> "bnxt_re" (malloc'ed). */
char *ll_rdma_driver_of(const char *device_name);

/* --- fetch (profile-fetch.c) --- */

struct ll_fetch_opts {
	const char *cacert;         /* extra CA bundle (PEM), trusted besides the system's */
	bool allow_http;            /* plain http:// to hosts other than loopback */
	const char *cache_dir;      /* NULL: $XDG_CACHE_HOME/llmlaunch or ~/.cache/llmlaunch */
	long connect_timeout_ms;    /* 0: default 5000 */
	long timeout_ms;            /* 0: $LLMLAUNCH_FETCH_TIMEOUT (seconds) or 20000 */
	long budget_ms;             /* > 0: at most this long, whatever the timeouts (what is
				     * left of a resolution's LL_PROFILE_FETCH_BUDGET_S) */
	size_t max_bytes;           /* 0: LL_PROFILE_MAX_BYTES */
	bool public_only;           /* connect to no loopback, link-local or private address
				     * (an `extends` of a fetched profile, docs/security.md) */
};

struct ll_fetch_result {
	char *body;                 /* NUL-terminated; len without the NUL */
	size_t len;
	char *url;                  /* without the #sha256= fragment, credentials redacted */
	bool from_cache;            /* served from the cache (304, pinned hit or offline) */
	char *warning;              /* set when the cache was used because the server could not be reached */
	bool nonpublic;             /* the answer came from a loopback, link-local or private
				     * address (false when unknown: served from the cache) */
};
void ll_fetch_result_release(struct ll_fetch_result *r);

/* Fetch URL (optionally URL#sha256=HEX). Errors: -EPERM for a refused scheme or redirect,
 * -EBADMSG for a sha256 mismatch, -EFBIG over the size cap, -ENOENT for 404,
 * -ETIMEDOUT / -EHOSTUNREACH with no cached copy. */
int ll_profile_fetch(const char *url, const struct ll_fetch_opts *opts, struct ll_fetch_result *ret,
		     struct ll_error *err);
bool ll_is_url(const char *s);
/* URL with its credentials (user:password@, or a token as user@) replaced by "***":
 * how a URL is shown, logged and stored in the fetch cache. Malloc'ed. */
char *ll_url_redact(const char *url);
/* Split "URL#sha256=HEX": *ret_url malloc'ed, *ret_sha (64 lowercase hex chars or NULL) malloc'ed. */
int ll_url_split_pin(const char *s, char **ret_url, char **ret_sha, struct ll_error *err);

/* --- layers (profile-layers.c) --- */

/* Bounds on one resolution (ll_profiles_resolve: every layer of one command), each
 * profile loaded once however often it is reached:
 *   LL_PROFILE_MAX_LOADED    distinct profiles named by --profile or extends
 *   LL_PROFILE_MAX_FETCHES   of which URLs (one request each, plus redirects)
 *   LL_PROFILE_MAX_APPLIED   applications, a diamond's repeats included
 *   LL_PROFILE_FETCH_BUDGET_S  seconds for all fetches together
 * and extends chains at most 16 deep. Beyond any of them: -E2BIG (-ETIMEDOUT for
 * the time) with a message naming the profile. */
#define LL_PROFILE_MAX_LOADED 64
#define LL_PROFILE_MAX_FETCHES 16
#define LL_PROFILE_MAX_APPLIED 1024
#define LL_PROFILE_FETCH_BUDGET_S 60

struct ll_profile_opts {
	struct ll_profile_load_opts load;
	struct ll_fetch_opts fetch;
	/* Directories searched for NAME.yaml, in order. NULL: ll_profile_dirs(). */
	char **dirs;
	size_t n_dirs;
	/* Root under which `when_exists` paths are checked (--fsroot); NULL: "/". */
	const char *root;
	/* Config files; NULL means the defaults: /etc/llmlaunch/config.yaml (or
	 * $LLMLAUNCH_SYSTEM_CONFIG), $XDG_CONFIG_HOME/llmlaunch/config.yaml, ./.llmlaunch.yaml.
	 * Set `no_config` to skip all three. */
	const char *system_config;
	const char *user_config;
	const char *local_config;
	bool no_config;
	/* Do not apply installed profiles automatically by their `match`. */
	bool no_auto;
	/* Leave URLs in `extends` out instead of fetching them (`profiles validate`). */
	bool skip_urls;
};

/* Why a layer is there. */
enum ll_layer_kind { LL_LAYER_MATCHED = 0, LL_LAYER_SYSTEM, LL_LAYER_USER, LL_LAYER_LOCAL, LL_LAYER_CLI };
const char *ll_layer_kind_name(enum ll_layer_kind k);

struct ll_profile_layer {
	enum ll_layer_kind kind;
	char *requested;            /* as given: name, path or URL; or the config file */
	struct ll_profile *profile; /* the top profile of the layer (owned by the set) */
};

/* One value after when_exists was evaluated, in precedence order (later wins). */
struct ll_profile_applied {
	const struct ll_profile_value *value;
	const struct ll_profile *profile;
	char *origin;               /* "FILE:LINE" */
	bool skipped;               /* when_exists found none of its paths */
};

struct ll_profile_set {
	struct ll_profile **profiles;   /* every profile loaded (layers and what they extend) */
	size_t n_profiles;
	struct ll_profile_layer *layers;
	size_t n_layers;
	struct ll_profile_applied *applied;
	size_t n_applied;
	/* For ll_plan_input: the last applied (non-skipped) value of each name, in the order
	 * of those last values. "auto" entries are kept: they undo lower layers. */
	struct ll_assignment *assignments;
	size_t n_assignments;
	struct ll_profile_expect expect;   /* merged: later layers win field by field */
	char **warnings;                   /* offline cache use, skipped values */
	size_t n_warnings;
};

/* Build every layer for this node. `facts` may be NULL (then nothing matches). */
int ll_profiles_resolve(const struct ll_facts *facts, char *const *cli_profiles, size_t n_cli,
			const struct ll_profile_opts *opts, struct ll_profile_set **ret, struct ll_error *err);
void ll_profile_set_free(struct ll_profile_set *s);
static inline void ll_profile_set_freep(struct ll_profile_set **s) { if (*s) { ll_profile_set_free(*s); *s = NULL; } }
/* The planner's view; borrowed from the set. */
void ll_profile_set_assignments(const struct ll_profile_set *s, const struct ll_assignment **ret, size_t *n);

/* Load one profile by name, path or URL with its `extends` chain into a set of one
 * CLI layer (for `profiles show`). */
int ll_profile_resolve_one(const char *ref, const struct ll_profile_opts *opts, struct ll_profile_set **ret,
			   struct ll_error *err);

/* The directories searched for profile names: $LLMLAUNCH_PROFILE_PATH (colon list) when
 * set, else the source tree's profiles/ when running from a build tree, else the
 * installed LLMLAUNCH_PROFILE_DIR. NULL-terminated, malloc'ed (free each and the array). */
char **ll_profile_dirs(void);

/* Every *.yaml in the profile directories (a name found twice: the first wins).
 * Entries are "NAME\tPATH" pairs split into two arrays; free with ll_strv_free_null. */
int ll_profile_list_installed(char *const *dirs, size_t n_dirs, char ***ret_names, char ***ret_paths,
			      size_t *ret_n, struct ll_error *err);

#endif
