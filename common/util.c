#include "llmlaunch/util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

void *ll_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		abort();
	return p;
}

void *ll_calloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		abort();
	return p;
}

void *ll_realloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		abort();
	return p;
}

char *ll_strdup(const char *s)
{
	return s ? ll_strndup(s, strlen(s)) : NULL;
}

char *ll_strndup(const char *s, size_t n)
{
	char *d = ll_malloc(n + 1);
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

char *ll_vasprintf(const char *fmt, va_list ap)
{
	struct ll_buf b;

	ll_buf_init(&b);
	ll_buf_vaddf(&b, fmt, ap);
	return ll_buf_detach(&b);
}

char *ll_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = ll_vasprintf(fmt, ap);
	va_end(ap);
	return s;
}

void *ll_array_push(void *arrayp, size_t *count, size_t elem)
{
	char **array = arrayp;
	size_t n = *count;

	/* Grow by doubling: capacity is implied by the count's next power of two. */
	if ((n & (n - 1)) == 0) {
		size_t cap = n ? n * 2 : 1;
		*array = ll_realloc(*array, cap * elem);
	}
	memset(*array + n * elem, 0, elem);
	(*count)++;
	return *array + n * elem;
}

static int error_vset(struct ll_error *err, const char *fmt, va_list ap)
{
	if (!err)
		return 0;
	free(err->message);
	free(err->hint);
	err->hint = NULL;
	err->message = ll_vasprintf(fmt, ap);
	return 0;
}

int ll_error_set(struct ll_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	error_vset(err, fmt, ap);
	va_end(ap);
	return code;
}

void ll_error_hint(struct ll_error *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	free(err->hint);
	va_start(ap, fmt);
	err->hint = ll_vasprintf(fmt, ap);
	va_end(ap);
}

void ll_error_prefix(struct ll_error *err, const char *fmt, ...)
{
	char *context;
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	context = ll_vasprintf(fmt, ap);
	va_end(ap);
	if (err->message) {
		char *m = ll_asprintf("%s: %s", context, err->message);
		free(context);
		context = m;
		free(err->message);
	}
	err->message = context;
}

void ll_error_clear(struct ll_error *err)
{
	if (!err)
		return;
	free(err->message);
	free(err->hint);
	err->message = err->hint = NULL;
	err->usage = false;
}

void ll_buf_init(struct ll_buf *b)
{
	b->cap = 64;
	b->len = 0;
	b->s = ll_malloc(b->cap);
	b->s[0] = '\0';
}

/* What a detached buffer points at: valid and empty, owning no memory, so
 * detaching does not allocate (and leak) a fresh buffer nobody releases. */
static char buf_empty[1];

static void buf_grow(struct ll_buf *b, size_t extra)
{
	if (b->len + extra + 1 <= b->cap)
		return;
	if (b->cap == 0) {
		b->cap = 64;
		while (b->len + extra + 1 > b->cap)
			b->cap *= 2;
		b->s = ll_malloc(b->cap);
		b->s[0] = '\0';
		return;
	}
	while (b->len + extra + 1 > b->cap)
		b->cap *= 2;
	b->s = ll_realloc(b->s, b->cap);
}

void ll_buf_addn(struct ll_buf *b, const char *s, size_t n)
{
	buf_grow(b, n);
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void ll_buf_add(struct ll_buf *b, const char *s)
{
	ll_buf_addn(b, s, strlen(s));
}

void ll_buf_addc(struct ll_buf *b, char c)
{
	ll_buf_addn(b, &c, 1);
}

void ll_buf_vaddf(struct ll_buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;

	va_copy(ap2, ap);
	n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return;
	if ((size_t)n >= b->cap - b->len) {
		buf_grow(b, (size_t)n);
		vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	}
	b->len += (size_t)n;
}

void ll_buf_addf(struct ll_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ll_buf_vaddf(b, fmt, ap);
	va_end(ap);
}

void ll_buf_reset(struct ll_buf *b)
{
	b->len = 0;
	b->s[0] = '\0';
}

char *ll_buf_detach(struct ll_buf *b)
{
	char *s = b->cap ? b->s : ll_strdup("");

	b->s = buf_empty;
	b->len = b->cap = 0;
	return s;
}

void ll_buf_release(struct ll_buf *b)
{
	if (b->cap)
		free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

void ll_strv_free(char **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void ll_strv_free_null(char **v)
{
	if (!v)
		return;
	for (char **s = v; *s; s++)
		free(*s);
	free(v);
}

int ll_parse_seconds(const char *what, const char *s, double min, double max, double *ret, struct ll_error *err)
{
	static const struct { char suffix; double scale; } units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 } };
	char *end = NULL;
	double v;

	errno = 0;
	v = s && *s && !isspace((unsigned char)*s) ? strtod(s, &end) : NAN;
	if (s && *s && end != s && !errno && isfinite(v)) {
		for (size_t i = 0; i < LL_ARRAY_SIZE(units) && *end; i++)
			if (end[0] == units[i].suffix && !end[1]) {
				v *= units[i].scale;
				end++;
			}
		if (!*end && v >= min && v <= max) {
			*ret = v;
			return 0;
		}
	}
	return ll_error_set(err, -EINVAL, "%s '%s': expected a duration from %g to %g seconds (30, 30s, 5m, 1h)", what,
			    s ? s : "", min, max);
}

int ll_parse_long(const char *s, long min, long max, long *ret)
{
	char *end;
	long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

int ll_parse_digits(const char *s, size_t n, int *ret)
{
	long v = 0;

	if (!s || n == 0 || n > 9)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*ret = (int)v;
	return 0;
}

bool ll_streq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

bool ll_startswith(const char *s, const char *prefix)
{
	return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

char *ll_strstrip_end(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

size_t ll_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), r;
	size_t *d;

	/* Optimal string alignment: Levenshtein plus adjacent transpositions ("bnid" is one
	 * edit from "bind"), case-insensitive because case slips are typos too. */
	if (la > 256 || lb > 256)
		return SIZE_MAX;
	d = ll_malloc((la + 1) * (lb + 1) * sizeof(*d));
#define D(i, j) d[(i) * (lb + 1) + (j)]
	for (size_t i = 0; i <= la; i++)
		D(i, 0) = i;
	for (size_t j = 0; j <= lb; j++)
		D(0, j) = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			int ai = tolower((unsigned char)a[i - 1]), bj = tolower((unsigned char)b[j - 1]);
			size_t best = D(i - 1, j - 1) + (ai != bj);
			if (D(i - 1, j) + 1 < best)
				best = D(i - 1, j) + 1;
			if (D(i, j - 1) + 1 < best)
				best = D(i, j - 1) + 1;
			if (i > 1 && j > 1 && ai == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == bj && D(i - 2, j - 2) + 1 < best)
				best = D(i - 2, j - 2) + 1;
			D(i, j) = best;
		}
	}
	r = D(la, lb);
#undef D
	free(d);
	return r;
}

const char *ll_did_you_mean(const char *word, const char *const *names, size_t n, size_t limit)
{
	size_t best = SIZE_MAX;
	const char *pick = NULL;

	if (!limit)
		limit = strlen(word) / 4 ? strlen(word) / 4 : 1;
	for (size_t i = 0; i < n; i++) {
		size_t d = ll_edit_distance(word, names[i]);

		if (d < best) {
			best = d;
			pick = names[i];
		}
	}
	return best <= limit ? pick : NULL;
}
