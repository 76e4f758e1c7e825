/* `llmlaunch profiles list|show|validate`: what profiles exist, which apply to this
 * node, what one resolves to, and whether files are valid (docs/profiles.md). */
#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "llmlaunch/cli.h"
#include "llmlaunch/output.h"
#include "llmlaunch/quote.h"
#include "llmlaunch/profile.h"

struct profiles_options {
	bool json;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: llmlaunch profiles list [--json] [OPTIONS]\n"
		"       llmlaunch profiles show [NAME|FILE|URL] [--json] [OPTIONS]\n"
		"       llmlaunch profiles validate FILE... [--allow-loader-vars]\n"
		"\n"
		"Profiles are YAML files with NCCL, environment and torchrun values for a kind of\n"
		"node or cluster. 'list' shows the installed ones, where each comes from and\n"
		"whether it applies to this node by its 'match'. 'show NAME' prints one profile\n"
		"merged with what it extends, each value with its FILE:LINE; without NAME, every\n"
		"layer that applies here (matched profiles, config files, --profile). 'validate'\n"
		"checks files and exits 1 if any has a problem.\n"
		"\n"
		"Options:\n"
		"  --json            machine-readable output (list, show)\n"
		LL_COMMON_HELP
		"  -h, --help        this help\n"
		"\n"
		"Examples:\n"
		"  llmlaunch profiles list\n"
		"  llmlaunch profiles show azure-nd-h100-v5\n"
		"  llmlaunch profiles validate site.yaml team.yaml\n"
		"  llmlaunch profiles show 'https://example.org/p.yaml#sha256=<64 hex digits>'\n");
}

/* 1: continue, 0: exit 0 (help), <0: usage error. */
static int parse_argv(int argc, char **argv, struct ll_ctx *ctx, struct profiles_options *o)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		LL_COMMON_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			if (ll_cmd_option_fallback("profiles", c, optarg, argv, ctx, longopts) < 0)
				return -EINVAL;
		}
	}
	return 1;
}

/* ---- list ---- */

static int cmd_list(struct ll_ctx *ctx, const struct profiles_options *po)
{
	struct ll_profile_opts opts;
	char **dirs = ll_profile_dirs(), **names = NULL, **paths = NULL;
	const struct ll_facts *facts = NULL;
	struct ll_error err = { 0 };
	struct ll_out *o;
	size_t n = 0, n_dirs = 0;
	int status = LL_EXIT_OK;

	while (dirs[n_dirs])
		n_dirs++;
	ll_ctx_profile_opts(ctx, &opts);
	if (ll_ctx_facts(ctx, &facts, &err) < 0) {
		ll_warnf("cannot tell which profiles match this node: %s", err.message);
		ll_error_clear(&err);
		facts = NULL;
	}
	ll_profile_list_installed(dirs, n_dirs, &names, &paths, &n, &err);

	o = ll_out_new(stdout, po->json);
	ll_out_open_object(o, NULL);
	ll_out_open_array(o, "directories");
	for (size_t i = 0; i < n_dirs; i++)
		ll_out_string(o, NULL, NULL, dirs[i]);
	ll_out_close_array(o);
	ll_out_text(o, "%-20s %-7s %s\n", "NAME", "MATCHES", "SOURCE");
	ll_out_open_array(o, "profiles");
	for (size_t i = 0; i < n; i++) {
		_cleanup_(ll_profile_freep) struct ll_profile *p = NULL;
		_cleanup_free_ char *why = NULL;
		const char *matches;

		ll_out_open_object(o, NULL);
		if (ll_profile_load_file(paths[i], &opts.load, &p, NULL, &err) < 0) {
			ll_warnf("%s", err.message);
			ll_error_clear(&err);
			status = LL_EXIT_FAILURE;
			matches = "invalid";
		} else if (!p->match.present) {
			matches = "never";
			why = ll_strdup("no 'match': applies only when asked for");
		} else if (!facts) {
			matches = "unknown";
		} else {
			matches = ll_profile_matches(p, facts, &why) ? "yes" : "no";
		}
		ll_out_string(o, "name", "%-20s ", names[i]);
		ll_out_string(o, "matches", "%-7s ", matches);
		ll_out_string(o, "source", "%s\n", paths[i]);
		if (ll_out_is_json(o)) {
			ll_out_string(o, "description", NULL, p ? p->description : NULL);
			ll_out_string(o, "why", NULL, why);
		}
		ll_out_close_object(o);
	}
	ll_out_close_array(o);
	if (n == 0)
		ll_out_text(o, "(no profiles found)\n");
	ll_out_close_object(o);
	if (ll_out_finish(o) < 0)
		status = LL_EXIT_FAILURE; /* reported once, by main() */
	ll_strv_free_null(names);
	ll_strv_free_null(paths);
	ll_strv_free_null(dirs);
	return status;
}

/* ---- show ---- */

static void print_when(struct ll_out *o, const struct ll_profile_value *v)
{
	struct ll_buf b;

	if (!v->n_when_exists)
		return;
	ll_buf_init(&b);
	for (size_t i = 0; i < v->n_when_exists; i++)
		ll_buf_addf(&b, "%s%s", i ? " or " : "", v->when_exists[i]);
	ll_out_string(o, "when_exists", "  (when %s exists)", b.s);
	ll_buf_release(&b);
}

/* A preflight figure: {value, source} in JSON (null when not stated). */
static void show_figure(struct ll_out *o, const char *key, const char *unit, const struct ll_profile_figure *f)
{
	_cleanup_free_ char *fmt = ll_asprintf("  %-20s %%s", key), *src = NULL;

	if (f->value <= 0) {
		ll_out_string(o, key, fmt, NULL);
		ll_out_text(o, "\n");
		return;
	}
	src = ll_asprintf("%s:%u", f->origin, f->line);
	ll_out_open_object(o, key);
	ll_out_double(o, "value", fmt, f->value, true);
	ll_out_string(o, "source", NULL, src);
	ll_out_close_object(o);
	ll_out_text(o, " %s (%s)\n", unit, src);
}

static void print_set(struct ll_out *o, const struct ll_profile_set *s)
{
	ll_out_open_array(o, "layers");
	ll_out_text(o, "Layers (lowest precedence first)\n");
	for (size_t i = 0; i < s->n_layers; i++) {
		const struct ll_profile_layer *l = &s->layers[i];
		ll_out_open_object(o, NULL);
		ll_out_string(o, "kind", "  %-8s ", ll_layer_kind_name(l->kind));
		ll_out_string(o, "name", "%s", l->profile->name);
		ll_out_string(o, "origin", " (%s)\n", l->profile->origin);
		ll_out_string(o, "description", l->profile->description ? "           %s\n" : NULL,
			      l->profile->description);
		ll_out_close_object(o);
	}
	if (!s->n_layers)
		ll_out_text(o, "  none\n");
	ll_out_close_array(o);

	/* Merged: the last applied value of each name wins; show it once, in the order
	 * names first appear, with what it overrode. */
	ll_out_text(o, "\nValues (the last layer wins)\n");
	ll_out_open_array(o, "values");
	for (size_t i = 0; i < s->n_applied; i++) {
		const struct ll_profile_applied *a = &s->applied[i], *win = NULL;
		size_t n_over = 0;
		bool first = true;

		for (size_t j = 0; j < i && first; j++)
			first = strcmp(s->applied[j].value->name, a->value->name) != 0;
		if (!first)
			continue;
		for (size_t j = i; j < s->n_applied; j++) {
			if (strcmp(s->applied[j].value->name, a->value->name) != 0)
				continue;
			if (!s->applied[j].skipped) {
				if (win)
					n_over++;
				win = &s->applied[j];
			}
		}
		if (!win) {
			/* Every candidate was skipped by when_exists: show the last one. */
			for (size_t j = i; j < s->n_applied; j++)
				if (strcmp(s->applied[j].value->name, a->value->name) == 0)
					win = &s->applied[j];
		}
		ll_out_open_object(o, NULL);
		ll_out_string(o, "name", "  %s", win->value->name);
		ll_out_string(o, "value", "=%s", win->value->value);
		ll_out_string(o, "section", "  [%s]", ll_profile_section_name(win->value->section));
		ll_out_string(o, "origin", "  %s", win->origin);
		print_when(o, win->value);
		ll_out_bool(o, "skipped", win->skipped ? "  SKIPPED: no such file on this node" : "", win->skipped);
		ll_out_bool(o, "trusted", win->value->trusted ? "  TRUSTED: set only because of --allow-loader-vars" : "",
			    win->value->trusted);
		ll_out_int(o, "overrides", n_over ? "  (overrides %s earlier)" : "", (long long)n_over, true);
		ll_out_text(o, "\n");
		ll_out_close_object(o);
	}
	if (!s->n_applied)
		ll_out_text(o, "  none\n");
	ll_out_close_array(o);

	ll_out_open_object(o, "expect");
	ll_out_text(o, "\nExpect (for the Slurm prolog)\n");
	ll_out_int(o, "gpus", "  gpus               %s\n", s->expect.gpus, s->expect.gpus >= 0);
	ll_out_int(o, "active_rdma_ports", "  active_rdma_ports  %s\n", s->expect.active_rdma_ports,
		   s->expect.active_rdma_ports >= 0);
	ll_out_string(o, "link_layer", "  link_layer         %s\n", ll_link_layer_name(s->expect.link_layer));
	ll_out_bool(o, "gdr_required", "  gdr_required       %s\n", s->expect.gdr_required);
	ll_out_text(o, "\nExpect (for the preflight check, docs/check.md)\n");
	show_figure(o, "allreduce_busbw_gbps", "GB/s", &s->expect.allreduce_busbw_gbps);
	show_figure(o, "pair_busbw_gbps", "GB/s", &s->expect.pair_busbw_gbps);
	show_figure(o, "pair_latency_us", "us", &s->expect.pair_latency_us);
	ll_out_close_object(o);
}

static int cmd_show(struct ll_ctx *ctx, const struct profiles_options *po, int argc, char **argv)
{
	_cleanup_(ll_profile_set_freep) struct ll_profile_set *set = NULL;
	struct ll_profile_opts opts;
	struct ll_error err = { 0 };
	struct ll_out *o;
	int r;

	if (argc > 1) {
		ll_errorf("'profiles show' takes at most one profile");
		return LL_EXIT_USAGE;
	}
	if (argc == 1) {
		ll_ctx_profile_opts(ctx, &opts);
		r = ll_profile_resolve_one(argv[0], &opts, &set, &err);
		if (r == 0)
			for (size_t i = 0; i < set->n_warnings; i++)
				ll_warnf("%s", set->warnings[i]);
	} else {
		r = ll_ctx_profiles(ctx, &set, &err);
	}
	if (r < 0) {
		ll_report(&err);
		ll_error_clear(&err);
		return LL_EXIT_FAILURE;
	}
	o = ll_out_new(stdout, po->json);
	ll_out_open_object(o, NULL);
	print_set(o, set);
	ll_out_close_object(o);
	return ll_out_finish(o) < 0 ? LL_EXIT_FAILURE : LL_EXIT_OK; /* a failed write: main() says it */
}

/* ---- validate ---- */

static int validate_one(struct ll_ctx *ctx, const char *path)
{
	_cleanup_(ll_profile_set_freep) struct ll_profile_set *set = NULL;
	struct ll_profile_diags diags = { 0 };
	struct ll_profile *p = NULL;
	struct ll_profile_opts opts;
	struct ll_error err = { 0 };
	int r;

	ll_ctx_profile_opts(ctx, &opts);
	r = ll_profile_load_file(path, &opts.load, &p, &diags, &err);
	if (r < 0) {
		for (size_t i = 0; i < diags.n; i++)
			ll_report(&(struct ll_error){ .message = diags.items[i].message, .hint = diags.items[i].hint });
		ll_profile_diags_release(&diags);
		ll_error_clear(&err);
		return -EINVAL;
	}
	ll_profile_free(p);
	/* The file is well-formed; now what it extends (names, paths; URLs are not fetched). */
	opts.skip_urls = true;
	r = ll_profile_resolve_one(path, &opts, &set, &err);
	if (r < 0) {
		ll_report(&err);
		ll_error_clear(&err);
		return r;
	}
	{
		_cleanup_free_ char *safe = ll_text_escaped(path, 0);

		printf("%s: ok\n", safe);
	}
	return 0;
}

static int cmd_validate(struct ll_ctx *ctx, int argc, char **argv)
{
	int status = LL_EXIT_OK;

	if (argc == 0) {
		ll_errorf("'profiles validate' needs at least one FILE");
		return LL_EXIT_USAGE;
	}
	for (int i = 0; i < argc; i++)
		if (validate_one(ctx, argv[i]) < 0)
			status = LL_EXIT_FAILURE;
	return status;
}

static int cmd_list_args(struct ll_ctx *ctx, const struct profiles_options *o, int argc, char **argv)
{
	(void)argv;
	if (argc > 0) {
		ll_errorf("'profiles list' takes no arguments");
		return LL_EXIT_USAGE;
	}
	return cmd_list(ctx, o);
}

static int cmd_validate_args(struct ll_ctx *ctx, const struct profiles_options *o, int argc, char **argv)
{
	(void)o;
	return cmd_validate(ctx, argc, argv);
}

/* The subcommands, as the top-level table (launcher/cli/commands.c) but with the
 * options parsed before the subcommand's name. */
static const struct {
	const char *name;
	int (*fn)(struct ll_ctx *ctx, const struct profiles_options *o, int argc, char **argv);
} profiles_commands[] = {
	{ "list", cmd_list_args },
	{ "show", cmd_show },
	{ "validate", cmd_validate_args },
};

int cmd_profiles(int argc, char **argv, struct ll_ctx *ctx)
{
	struct profiles_options o = { 0 };
	const char *sub;
	int r;

	r = parse_argv(argc, argv, ctx, &o);
	if (r <= 0)
		return r == 0 ? LL_EXIT_OK : LL_EXIT_USAGE;
	if (optind >= argc) {
		usage(stderr);
		return LL_EXIT_USAGE;
	}
	sub = argv[optind];
	argc -= optind + 1;
	argv += optind + 1;
	for (size_t i = 0; i < LL_ARRAY_SIZE(profiles_commands); i++)
		if (strcmp(sub, profiles_commands[i].name) == 0)
			return profiles_commands[i].fn(ctx, &o, argc, argv);
	ll_errorf("profiles: unknown subcommand '%s'", sub);
	fputs("hint: one of", stderr);
	for (size_t i = 0; i < LL_ARRAY_SIZE(profiles_commands); i++)
		fprintf(stderr, "%s '%s'", i ? "," : "", profiles_commands[i].name);
	fputs("; see 'llmlaunch profiles --help'\n", stderr);
	return LL_EXIT_USAGE;
}
