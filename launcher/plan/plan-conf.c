/* NCCL's own configuration files (NCCL_CONF_FILE or ~/.nccl.conf, then
 * /etc/nccl.conf) against the plan. NCCL sets each NAME=VALUE line with setenv(NAME,
 * VALUE, 0) (src/misc/param.cc setEnvFile, src/os/linux.cc ncclOsSetEnv): a value in
 * the environment wins, so what llmlaunch exports wins, and the first file to name a
 * variable wins over the later ones. Each line gets its fate; a line NCCL takes is
 * a setting of source nccl-conf (not exported: NCCL reads the file itself); a line
 * the environment overrides with another value is a warning that says which value
 * NCCL really uses. Pure: the files were read by the caller. */
#include <string.h>

#include "plan-internal.h"

static const char *const conf_rule =
	"the environment wins over NCCL's configuration files (NCCL src/misc/param.cc sets their lines "
	"with setenv(..., 0))";

static struct ll_conf_line *conf_line(struct ll_plan *p, const struct ll_assignment *a)
{
	struct ll_conf_line *l = ll_array_push(&p->conf, &p->n_conf, sizeof(*l));

	l->name = ll_strdup(a->name);
	l->value = ll_strdup(a->value);
	l->origin = ll_strdup(a->origin);
	return l;
}

/* The value NCCL sees in its environment for `name`, and who put it there. */
static const char *environment_value(const struct plan_state *s, const char *name, const char **ret_who)
{
	const struct ll_setting *st = plan_find(s->p, name);
	const char *e;

	if (st && st->value && st->exported && st->source != LL_SOURCE_NCCL_CONF) {
		*ret_who = ll_source_name(st->source);
		return st->value;
	}
	e = plan_environ_get(s->in, name);
	if (e) {
		*ret_who = "inherited environment";
		return e;
	}
	return NULL;
}

void plan_conf_apply(struct plan_state *s)
{
	const struct ll_plan_input *in = s->in;
	struct ll_plan *p = s->p;

	if (in->nccl_conf_unreadable && in->nccl_conf_blocks) {
		/* NCCL fopen()s and fgets() it until the end (src/misc/param.cc
		 * setEnvFile): a FIFO holds every rank's first NCCL call until someone
		 * writes, /dev/zero never ends, /dev/urandom sets random variables. */
		plan_lint(s, LL_LINT_ERROR, "NCCL_CONF_FILE",
			  "'%s' is %s, not a regular file: NCCL would read it as its configuration, where a FIFO "
			  "blocks every rank until someone writes to it and a device such as /dev/zero never ends; "
			  "point NCCL_CONF_FILE at a regular file or unset it",
			  in->nccl_conf_unreadable, in->nccl_conf_unreadable_why ? in->nccl_conf_unreadable_why : "something else");
		s->p->lints[s->p->n_lints - 1].blocking = true;
	} else if (in->nccl_conf_unreadable) {
		plan_lint(s, LL_LINT_WARNING, "NCCL_CONF_FILE",
			  "'%s' cannot be read (%s): NCCL ignores it, and reads no ~/.nccl.conf either",
			  in->nccl_conf_unreadable, in->nccl_conf_unreadable_why ? in->nccl_conf_unreadable_why : "unreadable");
	}
	for (size_t i = 0; i < in->n_nccl_conf; i++) {
		const struct ll_assignment *a = &in->nccl_conf[i];
		struct ll_conf_line *l = conf_line(p, a);
		const struct ll_assignment *first = NULL;
		const struct ll_setting *st;
		const char *env, *who = NULL;

		for (size_t k = 0; k < i && !first; k++)
			if (strcmp(in->nccl_conf[k].name, a->name) == 0)
				first = &in->nccl_conf[k];
		if (first) {
			l->note = ll_asprintf("shadowed by %s: NCCL keeps the first value it reads", first->origin);
			continue;
		}
		if (!plan_is_variable_name(a->name)) {
			/* NCCL takes everything before '=' verbatim: "export X", "X ". */
			l->note = ll_asprintf("NCCL reads the name '%s', not a variable anything looks up", a->name);
			plan_lint(s, LL_LINT_WARNING, NULL,
				  "%s: NCCL takes everything before '=' as the name, here '%s'; write NAME=VALUE with "
				  "nothing around the name",
				  a->origin, a->name);
			continue;
		}
		env = environment_value(s, a->name, &who);
		if (env) {
			bool same = strcmp(env, a->value) == 0;

			l->note = ll_asprintf("%s: NCCL uses '%s' (%s)", same ? "the same value is in the environment"
										: "the environment wins",
					      env, who);
			if (!same)
				plan_lint(s, LL_LINT_WARNING, a->name,
					  "%s sets %s=%s, but NCCL uses '%s' (%s): %s; remove the line, or keep its "
					  "value with --set %s=%s",
					  a->origin, a->name, a->value, env, who, conf_rule, a->name, a->value);
			continue;
		}
		l->used = true;
		l->note = ll_asprintf("NCCL uses it: nothing in the environment sets %s", a->name);
		st = plan_find(p, a->name);
		{
			_cleanup_free_ char *reason =
				st ? ll_asprintf("set in %s, which NCCL reads itself; %s left it unset (%s)", a->origin,
						 ll_source_name(st->source), st->reason)
				   : ll_asprintf("set in %s, which NCCL reads itself", a->origin);

			ll_plan_set(p, a->name, a->value, LL_SOURCE_NCCL_CONF, a->origin, reason, false);
		}
	}
}
