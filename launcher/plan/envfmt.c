/* Quoting of environment variables for each consumer. Why each rule:
 * - sh: inside single quotes nothing is special but the quote itself, which is
 *   closed, escaped and reopened ('\''). Works in every POSIX shell and zsh. A byte a
 *   terminal acts on is never written raw: such a value is "$(printf '...')" with
 *   the byte in octal (common/quote.c).
 * - fish: inside single quotes fish treats only \' and \\ as escapes; such bytes
 *   are \xHH outside them.
 * - dotenv: python-dotenv reads single-quoted values literally except \' and \\,
 *   exactly fish's rule, but it expands ${NAME} in every kind of value and cannot
 *   end a quoted value with a backslash: those two are errors. Values without
 *   ' or \ read the same in systemd's EnvironmentFile= and compose's env_file.
 * - slurm: a TaskProlog line "export NAME=value" is taken literally to the end of
 *   the line; there is no quoting at all, so a newline cannot be expressed. */
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "llmlaunch/envfmt.h"
#include "llmlaunch/quote.h"

static const char *const format_names[] = {
	[LL_ENV_SH] = "sh",
	[LL_ENV_FISH] = "fish",
	[LL_ENV_DOTENV] = "dotenv",
	[LL_ENV_JSON] = "json",
	[LL_ENV_SLURM] = "slurm",
};

const char *ll_env_format_name(enum ll_env_format f)
{
	return (unsigned)f < LL_ARRAY_SIZE(format_names) ? format_names[f] : "?";
}

int ll_env_format_parse(const char *s, enum ll_env_format *ret)
{
	for (size_t i = 0; s && i < LL_ARRAY_SIZE(format_names); i++)
		if (strcmp(s, format_names[i]) == 0) {
			*ret = (enum ll_env_format)i;
			return 0;
		}
	return -EINVAL;
}

static bool name_valid(const char *name)
{
	if (!name || !*name || (*name >= '0' && *name <= '9'))
		return false;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
			return false;
	return true;
}

/* Single quotes where only ' and \ need a backslash (fish, python-dotenv). */
static void quote_backslash(const char *v, struct ll_buf *out)
{
	ll_buf_addc(out, '\'');
	for (const char *c = v; *c; c++) {
		if (*c == '\'' || *c == '\\')
			ll_buf_addc(out, '\\');
		ll_buf_addc(out, *c);
	}
	ll_buf_addc(out, '\'');
}

/* A byte a terminal acts on (an escape sequence, a C1 control, a byte that is not
 * UTF-8): these formats would have to write it raw. */
static int control_error(struct ll_error *err, const char *name, enum ll_env_format fmt)
{
	ll_error_set(err, -EINVAL, "value of '%s' holds a control character or a byte that is not UTF-8, which the %s "
				   "format cannot write without sending it to a terminal as it is",
		     name, ll_env_format_name(fmt));
	ll_error_hint(err, fmt == LL_ENV_SH ? "use --format fish or json for this value (it also ends in a newline)"
					    : "use --format sh, fish or json for this value");
	return -EINVAL;
}

static int dotenv_error(struct ll_error *err, const char *name, const char *what)
{
	ll_error_set(err, -EINVAL, "value of '%s' contains %s", name, what);
	ll_error_hint(err, "use --format sh, fish or json for this value");
	return -EINVAL;
}

int ll_env_quote(enum ll_env_format fmt, const char *name, const char *value, struct ll_buf *out,
		 struct ll_error *err)
{
	switch (fmt) {
	case LL_ENV_SH:
		if (ll_sh_quote(value, false, out) < 0)
			return control_error(err, name, fmt);
		return 0;
	case LL_ENV_FISH:
		ll_fish_quote(value, out);
		return 0;
	case LL_ENV_DOTENV:
		if (!ll_text_is_plain(value, strlen(value)) && !strchr(value, '\n'))
			return control_error(err, name, fmt);
		/* One variable per line keeps the file readable by line-based tools. */
		if (strchr(value, '\n'))
			goto newline;
		/* python-dotenv expands ${...} even inside single quotes, and its quote
		 * pattern reads a final \\' as an escaped quote: neither can be written. */
		if (strstr(value, "${"))
			return dotenv_error(err, name, "'${', which python-dotenv always expands");
		if (*value && value[strlen(value) - 1] == '\\')
			return dotenv_error(err, name, "a trailing backslash, which python-dotenv cannot read back");
		quote_backslash(value, out);
		return 0;
	case LL_ENV_SLURM:
		if (strchr(value, '\n'))
			goto newline;
		if (!ll_text_is_plain(value, strlen(value)))
			return control_error(err, name, fmt);
		ll_buf_add(out, value);
		return 0;
	case LL_ENV_JSON:
		break;
	}
	return ll_error_set(err, -EINVAL, "format '%s' has no per-value quoting", ll_env_format_name(fmt));
newline:
	ll_error_set(err, -EINVAL, "value of '%s' contains a newline, which the %s format cannot express", name,
		     ll_env_format_name(fmt));
	ll_error_hint(err, "use --format sh, fish or json for values with newlines");
	return -EINVAL;
}

static int write_json(const struct ll_envvar *vars, size_t n, struct ll_buf *out, struct ll_error *err)
{
	json_t *o = json_object();
	char *text;

	for (size_t i = 0; i < n; i++)
		if (json_object_set_new(o, vars[i].name, json_string(vars[i].value)) < 0) {
			json_decref(o);
			return ll_error_set(err, -EINVAL, "value of '%s' is not valid UTF-8, which JSON cannot carry",
					    vars[i].name);
		}
	text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!text)
		return ll_error_set(err, -ENOMEM, "cannot write JSON");
	ll_buf_add(out, text);
	ll_buf_addc(out, '\n');
	free(text);
	return 0;
}

int ll_env_write(enum ll_env_format fmt, const struct ll_envvar *vars, size_t n, struct ll_buf *out,
		 struct ll_error *err)
{
	struct ll_buf b;
	int r = 0;

	for (size_t i = 0; i < n; i++)
		if (!name_valid(vars[i].name))
			return ll_error_set(err, -EINVAL, "'%s' is not a valid environment variable name",
					    vars[i].name ? vars[i].name : "");
	if (fmt == LL_ENV_JSON)
		return write_json(vars, n, out, err);

	ll_buf_init(&b);
	for (size_t i = 0; i < n && r >= 0; i++) {
		switch (fmt) {
		case LL_ENV_SH:
		case LL_ENV_SLURM:
			ll_buf_addf(&b, "export %s=", vars[i].name);
			break;
		case LL_ENV_FISH:
			ll_buf_addf(&b, "set -gx %s ", vars[i].name);
			break;
		default:
			ll_buf_addf(&b, "%s=", vars[i].name);
			break;
		}
		r = ll_env_quote(fmt, vars[i].name, vars[i].value, &b, err);
		ll_buf_addc(&b, '\n');
	}
	if (r >= 0)
		ll_buf_add(out, b.s);
	ll_buf_release(&b);
	return r;
}

int ll_env_write_plan(enum ll_env_format fmt, const struct ll_plan *plan, struct ll_buf *out, struct ll_error *err)
{
	_cleanup_free_ struct ll_envvar *vars = NULL;
	size_t n = 0;

	for (size_t i = 0; i < plan->n_settings; i++) {
		const struct ll_setting *s = &plan->settings[i];

		if (s->exported && s->value)
			*(struct ll_envvar *)ll_array_push(&vars, &n, sizeof(*vars)) =
				(struct ll_envvar){ s->name, s->value };
	}
	return ll_env_write(fmt, vars, n, out, err);
}
