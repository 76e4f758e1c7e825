#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "llmlaunch/agree.h"
#include "llmlaunch/cli.h"
#include "llmlaunch/probe.h"
#include "llmlaunch/quote.h"

#include <unistd.h>

bool ll_ctx_common_option(struct ll_ctx *ctx, int opt, const char *arg)
{
	switch (opt) {
	case LL_OPT_TOPOLOGY:
		ctx->probe.topology_file = arg;
		return true;
	case LL_OPT_FSROOT:
		ctx->probe.fsroot = arg;
		return true;
	case LL_OPT_PROFILE:
		*(const char **)ll_array_push(&ctx->profiles, &ctx->n_profiles, sizeof(char *)) = arg;
		return true;
	case LL_OPT_CACERT:
		ctx->cacert = arg;
		return true;
	case LL_OPT_ALLOW_HTTP:
		ctx->allow_http = true;
		return true;
	case LL_OPT_ALLOW_LOADER_VARS:
		ctx->allow_loader_vars = true;
		return true;
	case LL_OPT_NO_CACHE:
		ctx->probe.no_cache = true;
		return true;
	default:
		return false;
	}
}

/* "did you mean '--json'?" for an unknown long option, from the command's own table. */
static void option_hint(const char *cmd, const char *given, const struct option *longopts)
{
	const char *names[128], *pick;
	size_t n = 0;
	_cleanup_free_ char *word = NULL;

	if (!longopts || strncmp(given, "--", 2) != 0)
		return;
	word = ll_strndup(given + 2, strcspn(given + 2, "="));
	for (const struct option *o = longopts; o->name && n < LL_ARRAY_SIZE(names); o++)
		names[n++] = o->name;
	if ((pick = ll_did_you_mean(word, names, n, 0)))
		fprintf(stderr, "hint: did you mean '--%s'? (llmlaunch %s --help)\n", pick, cmd);
	else
		fprintf(stderr, "hint: 'llmlaunch %s --help' lists the options\n", cmd);
}

int ll_cmd_option_fallback(const char *cmd, int c, const char *arg, char **argv, struct ll_ctx *ctx,
			   const struct option *longopts)
{
	if (c == '?') {
		if (optopt > 0 && optopt < 0x80 && optopt != '?') {
			ll_errorf("%s: unknown option '-%c'", cmd, optopt);
			fprintf(stderr, "hint: 'llmlaunch %s --help' lists the options\n", cmd);
		} else {
			ll_errorf("%s: unknown option '%s'", cmd, argv[optind - 1]);
			option_hint(cmd, argv[optind - 1], longopts);
		}
		return -EINVAL;
	}
	if (c == ':') {
		ll_errorf("%s: option '%s' needs a value", cmd, argv[optind - 1]);
		return -EINVAL;
	}
	if (ctx && ll_ctx_common_option(ctx, c, arg))
		return 1;
	ll_errorf("%s: option '%s' is not supported here", cmd, argv[optind - 1]);
	return -EINVAL;
}

int ll_cmd_options_done(const char *cmd, int argc, char **argv, struct ll_ctx *ctx)
{
	if (optind < argc) {
		ll_errorf("%s: unexpected argument '%s'", cmd, argv[optind]);
		return -EINVAL;
	}
	if (ctx->probe.topology_file && ctx->probe.fsroot) {
		ll_errorf("%s: --topology and --fsroot exclude each other (a snapshot has no /sys)", cmd);
		return -EINVAL;
	}
	return 1;
}

int ll_ctx_facts(struct ll_ctx *ctx, const struct ll_facts **ret, struct ll_error *err)
{
	struct ll_probe_report report = { 0 };
	const char *debug = getenv("LLMLAUNCH_CACHE_DEBUG");
	int r;

	if (!ctx->facts) {
		ctx->probe.report = &report;
		r = ll_probe(&ctx->probe, &ctx->topo, &ctx->facts, err);
		ctx->probe.report = NULL;
		if (r < 0) {
			ll_probe_report_release(&report);
			return r;
		}
		/* A broken NVML does not fail the probe, but GPU names and NVLink
		 * are then unknown and the user should hear why. */
		if (!ctx->probe.topology_file && report.nvml_warning)
			ll_warnf("%s", report.nvml_warning);
		if (!ctx->probe.topology_file && report.rsmi_warning)
			ll_warnf("%s", report.rsmi_warning);
		/* Why a probe was slow (or a cache ignored) is a question for
		 * debugging, not for every run. */
		if (report.cache_status && debug && *debug && strcmp(debug, "0") != 0)
			fprintf(stderr, "llmlaunch: debug: probe cache: %s\n", report.cache_status);
		ll_probe_report_release(&report);
	}
	*ret = ctx->facts;
	return 0;
}

/* One line on stderr: "PREFIX" then the text, every byte a terminal would act on
 * escaped (messages name profiles' keys, log lines, hosts: text from files). */
static void say(const char *prefix, const char *text)
{
	_cleanup_free_ char *safe = ll_text_escaped(text, 0);

	fprintf(stderr, "%s%s\n", prefix, safe);
}

static void vreport(const char *level, const char *fmt, va_list ap)
{
	_cleanup_free_ char *prefix = ll_asprintf("llmlaunch: %s", level);
	struct ll_buf b;

	ll_buf_init(&b);
	ll_buf_vaddf(&b, fmt, ap);
	say(prefix, b.s);
	ll_buf_release(&b);
}

void ll_errorf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("", fmt, ap);
	va_end(ap);
}

void ll_warnf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("warning: ", fmt, ap);
	va_end(ap);
}

void ll_cli_agree_progress(void *data, const struct ll_agree_progress *p)
{
	static int tty = -1;
	static bool printed;
	static double last_s;
	static size_t last_n;
	const char *what = p->what == LL_AGREE_WAIT_REACH ? " to reach the master" : "";
	_cleanup_free_ char *names = NULL;

	(void)data;
	if (tty < 0)
		tty = isatty(STDERR_FILENO);
	if (p->done) {
		if (printed && tty)
			fputs("\r\033[K", stderr);
		else if (printed && p->ok)
			fprintf(stderr, "llmlaunch: all %zu nodes there after %.0f s\n", p->n_nodes, p->waited_s);
		printed = false;
		return;
	}
	names = ll_text_escaped(p->names, 0);
	if (tty) {
		/* our own control sequences: return, erase the line */
		fprintf(stderr, "\r\033[Kllmlaunch: waiting for %zu of %zu nodes%s: %s (%.0f s)", p->n_missing,
			p->n_nodes, what, names, p->waited_s);
	} else {
		bool changed = p->n_missing != last_n;
		if (printed && !(changed && p->waited_s - last_s >= 10) && p->waited_s - last_s < 60)
			return;
		fprintf(stderr, "llmlaunch: waiting for %zu of %zu nodes%s: %s\n", p->n_missing, p->n_nodes, what,
			names);
	}
	fflush(stderr);
	printed = true;
	last_s = p->waited_s;
	last_n = p->n_missing;
}

void ll_report(const struct ll_error *err)
{
	say("llmlaunch: ", err && err->message ? err->message : "unknown error");
	if (err && err->hint)
		say("hint: ", err->hint);
}
