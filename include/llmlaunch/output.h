/* One printer for text and JSON, so the two never drift (in the manner of iproute2's
 * print_string(PRINT_ANY, ...)). In text mode each call prints its `fmt` with the
 * value; in JSON mode it adds `key: value` to the current object (or appends the
 * value when the current container is an array), and the document is written by
 * ll_out_finish(). Text-only and JSON-only calls exist for layout. */
#ifndef LLMLAUNCH_OUTPUT_H
#define LLMLAUNCH_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>
#include "llmlaunch/util.h"

struct ll_out;

struct ll_out *ll_out_new(FILE *f, bool json);
bool ll_out_is_json(const struct ll_out *o);
/* Write the JSON document (no-op in text mode) and check the stream's error flag;
 * main() flushes standard output and reports a failed write once. Returns 0 or
 * -EIO; frees `o`. */
int ll_out_finish(struct ll_out *o);

void ll_out_open_object(struct ll_out *o, const char *key); /* key NULL inside arrays / at top */
void ll_out_close_object(struct ll_out *o);
void ll_out_open_array(struct ll_out *o, const char *key);
void ll_out_close_array(struct ll_out *o);

/* NULL value: JSON null; in text mode the value prints as `unknown`. */
void ll_out_string(struct ll_out *o, const char *key, const char *fmt, const char *value);
/* known == false: JSON null; text prints `unknown` through a %s in place of the number,
 * so fmt for ints uses %s. */
void ll_out_int(struct ll_out *o, const char *key, const char *fmt, long long value, bool known);
void ll_out_double(struct ll_out *o, const char *key, const char *fmt, double value, bool known);
void ll_out_bool(struct ll_out *o, const char *key, const char *fmt, int value /* -1 unknown */);

/* Text-mode only (headers, separators, tables). */
void ll_out_text(struct ll_out *o, const char *fmt, ...) LL_PRINTF(2, 3);

#endif
