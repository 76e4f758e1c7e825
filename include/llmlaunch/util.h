/* Small shared helpers: cleanup attributes, growable strings, error records.
 * Every module returns 0 or -errno and fills a caller-owned struct ll_error;
 * only the command layer prints. */
#ifndef LLMLAUNCH_UTIL_H
#define LLMLAUNCH_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define LL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define LL_PRINTF(f, a) __attribute__((format(printf, f, a)))

static inline void ll_freep(void *p) { free(*(void **)p); }
static inline void ll_fclosep(FILE **f) { if (*f) fclose(*f); }
#define _cleanup_(fn) __attribute__((cleanup(fn)))
#define _cleanup_free_ _cleanup_(ll_freep)
#define _cleanup_fclose_ _cleanup_(ll_fclosep)

/* Take ownership out of a cleanup variable: returns the pointer and NULLs the variable. */
#define LL_TAKE(p) ({ __typeof__(p) _t = (p); (p) = NULL; _t; })

/* Error record: a message that names the object and the cause, and an optional
 * hint that tells the user what to do. Both are owned by the record. */
struct ll_error {
	char *message;
	char *hint;
	bool usage;     /* the user asked for what cannot be: the command exits 2, not 1 */
};

/* Set the message (replacing any earlier one) and return `code` (a negative errno),
 * so callers can write `return ll_error_set(err, -ENOENT, "cannot open '%s'", p);`.
 * `err` may be NULL. */
int ll_error_set(struct ll_error *err, int code, const char *fmt, ...) LL_PRINTF(3, 4);
/* Attach a hint to the current error; returns nothing so it can follow ll_error_set. */
void ll_error_hint(struct ll_error *err, const char *fmt, ...) LL_PRINTF(2, 3);
/* Prefix the current message: "CONTEXT: old message". */
void ll_error_prefix(struct ll_error *err, const char *fmt, ...) LL_PRINTF(2, 3);
void ll_error_clear(struct ll_error *err);

/* Growable NUL-terminated string; `s` is never NULL after ll_buf_init. */
struct ll_buf {
	char *s;
	size_t len, cap;
};
void ll_buf_init(struct ll_buf *b);
void ll_buf_add(struct ll_buf *b, const char *s);
void ll_buf_addn(struct ll_buf *b, const char *s, size_t n);
void ll_buf_addc(struct ll_buf *b, char c);
void ll_buf_addf(struct ll_buf *b, const char *fmt, ...) LL_PRINTF(2, 3);
void ll_buf_vaddf(struct ll_buf *b, const char *fmt, va_list ap);
void ll_buf_reset(struct ll_buf *b);
/* Hand the string to the caller; the buffer is left empty and valid. */
char *ll_buf_detach(struct ll_buf *b);
void ll_buf_release(struct ll_buf *b);

/* Allocation that aborts on failure: out-of-memory is not a recoverable state here. */
void *ll_malloc(size_t n);
void *ll_calloc(size_t n, size_t size);
void *ll_realloc(void *p, size_t n);
char *ll_strdup(const char *s); /* NULL in, NULL out */
char *ll_strndup(const char *s, size_t n);
char *ll_asprintf(const char *fmt, ...) LL_PRINTF(1, 2);
char *ll_vasprintf(const char *fmt, va_list ap);

/* Append one element to a growable array of `elem` bytes; returns the new slot, zeroed. */
void *ll_array_push(void *arrayp, size_t *count, size_t elem);

/* Free the first n strings of v, then v. */
void ll_strv_free(char **v, size_t n);
/* Free a NULL-terminated vector of strings and the vector. NULL is fine. */
void ll_strv_free_null(char **v);

/* All of s is a decimal number from min to max (leading blanks and a sign as strtol
 * takes them). 0, or -EINVAL with *ret untouched. */
int ll_parse_long(const char *s, long min, long max, long *ret);
/* Optimal string alignment distance (Levenshtein plus adjacent transpositions),
 * case-insensitive; SIZE_MAX for strings over 256 characters. */
size_t ll_edit_distance(const char *a, const char *b);
/* The one "did you mean": the name of `names` nearest to `word`, when it is within
 * `limit` edits (0: one edit per four characters of `word`, at least one), else NULL. */
const char *ll_did_you_mean(const char *word, const char *const *names, size_t n, size_t limit);
/* The one duration parser of every option and variable that takes seconds: a number,
 * optionally followed by s, m or h, within [min, max] seconds. -EINVAL with a message
 * naming `what` ("--grace") and the value. */
int ll_parse_seconds(const char *what, const char *s, double min, double max, double *ret, struct ll_error *err);
/* The first n characters of s are 1 to 9 decimal digits and nothing else. */
int ll_parse_digits(const char *s, size_t n, int *ret);

bool ll_streq(const char *a, const char *b); /* NULL-safe */
bool ll_startswith(const char *s, const char *prefix);
/* Strip trailing whitespace in place; returns s. */
char *ll_strstrip_end(char *s);

#endif
