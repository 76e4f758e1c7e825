#include "llmlaunch/output.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "llmlaunch/quote.h"

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

/* A JSON string of any bytes: jansson refuses text that is not UTF-8 (and the field
 * would be lost); its bytes that are not are then written as \xNN text. */
static json_t *json_text(const char *s)
{
	size_t n = strlen(s), len;
	struct ll_buf b;
	json_t *v;

	if ((v = json_stringn(s, n)))
		return v;
	ll_buf_init(&b);
	for (size_t i = 0; i < n; i += len) {
		len = ll_utf8_len(s + i, n - i);
		if (len && s[i]) {
			for (size_t k = 0; k < len; k++)
				ll_buf_addc(&b, s[i + k]);
		} else {
			ll_buf_addf(&b, "\\x%02x", (unsigned char)s[i]);
			len = 1;
		}
	}
	v = json_stringn(b.s, b.len);
	ll_buf_release(&b);
	return v ? v : json_null();
}

void ll_out_string(struct ll_out *o, const char *key, const char *fmt, const char *value)
{
	if (o->json) {
		out_attach(o, key, value ? json_text(value) : json_null());
	} else if (fmt && value) {
		/* Text from a file reaches a terminal escaped (quote.h). */
		_cleanup_free_ char *safe = ll_text_escaped(value, 0);

		text_print(o, fmt, safe);
	} else {
		text_print(o, fmt, "unknown");
	}
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
	struct ll_buf b, safe;
	va_list ap;

	if (o->json)
		return;
	ll_buf_init(&b);
	va_start(ap, fmt);
	ll_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	/* The layout (newlines, tabs) is the format's; anything else a terminal would
	 * act on came from an argument. */
	ll_buf_init(&safe);
	ll_text_escape(b.s, b.len, LL_ESCAPE_KEEP_NEWLINE, &safe);
	fputs(safe.s, o->f);
	ll_buf_release(&safe);
	ll_buf_release(&b);
}

/* jansson writes U+0080-U+009F as UTF-8, which some terminals read as C1 controls
 * (CSI is U+009B): those as \u escapes, which every JSON reader takes the same. They
 * are always inside strings, where the escape means the same character. */
static void put_json(FILE *f, const char *text)
{
	for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
		if (c[0] == 0xc2 && c[1] >= 0x80 && c[1] <= 0x9f) {
			fprintf(f, "\\u%04x", c[1]);
			c++;
		} else {
			fputc(*c, f);
		}
	}
}

int ll_out_finish(struct ll_out *o)
{
	int r = 0;

	if (o->json && o->root) {
		char *text = json_dumps(o->root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

		if (!text)
			r = -EIO;
		else
			put_json(o->f, text);
		free(text);
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
