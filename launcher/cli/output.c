#include "llmlaunch/output.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>

#define OUT_MAX_DEPTH 32

struct ll_out {
	FILE *f;
	bool json;
	json_t *stack[OUT_MAX_DEPTH];
	const char *keys[OUT_MAX_DEPTH];
	int depth;
	json_t *root;
};

struct ll_out *ll_out_new(FILE *f, bool json)
{
	struct ll_out *o = ll_calloc(1, sizeof(*o));

	o->f = f;
	o->json = json;
	return o;
}

bool ll_out_is_json(const struct ll_out *o)
{
	return o->json;
}

/* Attach `v` (reference stolen) to the current container. */
static void out_attach(struct ll_out *o, const char *key, json_t *v)
{
	json_t *top;

	if (o->depth == 0) {
		if (!o->root)
			o->root = v;
		else
			json_decref(v);
		return;
	}
	top = o->stack[o->depth - 1];
	if (json_is_array(top))
		json_array_append_new(top, v);
	else
		json_object_set_new(top, key ? key : "", v);
}

static void out_open(struct ll_out *o, const char *key, json_t *container)
{
	if (!o->json) {
		json_decref(container); /* text mode: nothing to hold it */
		return;
	}
	if (o->depth >= OUT_MAX_DEPTH)
		abort();
	json_incref(container);
	out_attach(o, key, container);
	o->stack[o->depth++] = container;
	json_decref(container);
}

void ll_out_open_object(struct ll_out *o, const char *key)
{
	out_open(o, key, json_object());
}

void ll_out_open_array(struct ll_out *o, const char *key)
{
	out_open(o, key, json_array());
}

void ll_out_close_object(struct ll_out *o)
{
	if (o->json && o->depth > 0)
		o->depth--;
}

void ll_out_close_array(struct ll_out *o)
{
	ll_out_close_object(o);
}

static void text_print(struct ll_out *o, const char *fmt, const char *value)
{
	if (fmt)
		fprintf(o->f, fmt, value);
}

void ll_out_string(struct ll_out *o, const char *key, const char *fmt, const char *value)
{
	if (o->json)
		out_attach(o, key, value ? json_string(value) : json_null());
	else
		text_print(o, fmt, value ? value : "unknown");
}

void ll_out_int(struct ll_out *o, const char *key, const char *fmt, long long value, bool known)
{
	char num[32];

	if (o->json) {
		out_attach(o, key, known ? json_integer(value) : json_null());
		return;
	}
	snprintf(num, sizeof(num), "%lld", value);
	text_print(o, fmt, known ? num : "unknown");
}

void ll_out_double(struct ll_out *o, const char *key, const char *fmt, double value, bool known)
{
	char num[64];

	if (o->json) {
		out_attach(o, key, known ? json_real(value) : json_null());
		return;
	}
	snprintf(num, sizeof(num), "%g", value);
	text_print(o, fmt, known ? num : "unknown");
}

void ll_out_bool(struct ll_out *o, const char *key, const char *fmt, int value)
{
	if (o->json) {
		out_attach(o, key, value < 0 ? json_null() : json_boolean(value));
		return;
	}
	text_print(o, fmt, value < 0 ? "unknown" : value ? "yes" : "no");
}

void ll_out_text(struct ll_out *o, const char *fmt, ...)
{
	va_list ap;

	if (o->json)
		return;
	va_start(ap, fmt);
	vfprintf(o->f, fmt, ap);
	va_end(ap);
}

int ll_out_finish(struct ll_out *o)
{
	int r = 0;

	if (o->json && o->root) {
		if (json_dumpf(o->root, o->f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0)
			r = -EIO;
		fputc('\n', o->f);
	}
	json_decref(o->root);
	/* Not flushed here: main() flushes standard output once and reports a failed
	 * write with its cause (llmlaunch/cli.h). */
	if (ferror(o->f))
		r = -EIO;
	free(o);
	return r;
}
