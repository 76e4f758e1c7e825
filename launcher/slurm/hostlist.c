/* Slurm hostlist expressions (see hostlist.h). Parsed into entries of literal
 * pieces and bracket groups, then expanded like an odometer. */
#include "llmlaunch/hostlist.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

struct hl_range {
	unsigned long long lo, hi;
	int width; /* digits of the lower bound: keeps "01" padded */
};

/* A piece of an entry: literal text followed by an optional bracket group. */
struct hl_piece {
	char *text;
	struct hl_range *ranges; /* NULL: no group after the text */
	size_t n_ranges;
};

struct hl_entry {
	struct hl_piece *pieces;
	size_t n_pieces;
};

static void entry_release(struct hl_entry *e)
{
	for (size_t i = 0; i < e->n_pieces; i++) {
		free(e->pieces[i].text);
		free(e->pieces[i].ranges);
	}
	free(e->pieces);
	e->pieces = NULL;
	e->n_pieces = 0;
}

static int syntax_error(struct ll_error *err, const char *list, size_t pos, const char *what)
{
	ll_error_set(err, -EINVAL, "invalid hostlist '%s' at character %zu: %s", list, pos + 1, what);
	ll_error_hint(err, "expected names like 'gpu[01-04,07],login1'");
	return -EINVAL;
}

static int parse_number(const char *list, size_t *pos, unsigned long long *ret, int *width,
			struct ll_error *err)
{
	size_t p = *pos, start = p;
	unsigned long long v = 0;

	if (!isdigit((unsigned char)list[p]))
		return syntax_error(err, list, p, "expected a number");
	while (isdigit((unsigned char)list[p])) {
		if (p - start >= 18)
			return syntax_error(err, list, start, "number too long");
		v = v * 10 + (unsigned)(list[p] - '0');
		p++;
	}
	*ret = v;
	*width = (int)(p - start);
	*pos = p;
	return 0;
}

/* Parse "[a-b,c]" starting after '['; leaves *pos after ']'. */
static int parse_group(const char *list, size_t *pos, struct hl_piece *piece, struct ll_error *err)
{
	size_t p = *pos;
	int r, hi_width;

	for (;;) {
		struct hl_range *rg = ll_array_push(&piece->ranges, &piece->n_ranges, sizeof(*rg));

		r = parse_number(list, &p, &rg->lo, &rg->width, err);
		if (r < 0)
			return r;
		rg->hi = rg->lo;
		if (list[p] == '-') {
			p++;
			r = parse_number(list, &p, &rg->hi, &hi_width, err);
			if (r < 0)
				return r;
			if (rg->hi < rg->lo)
				return syntax_error(err, list, p - 1, "range goes backwards");
		}
		if (list[p] == ',') {
			p++;
			continue;
		}
		if (list[p] == ']') {
			*pos = p + 1;
			return 0;
		}
		if (list[p] == '\0')
			return syntax_error(err, list, p, "missing ']'");
		return syntax_error(err, list, p, "unexpected character in brackets");
	}
}

static bool is_separator(char c)
{
	return c == ',' || isspace((unsigned char)c);
}

/* Parse one entry starting at *pos; stops at a top-level separator or the end. */
static int parse_entry(const char *list, size_t *pos, struct hl_entry *e, struct ll_error *err)
{
	size_t p = *pos;
	int r;

	while (list[p] && !is_separator(list[p])) {
		struct hl_piece *piece = ll_array_push(&e->pieces, &e->n_pieces, sizeof(*piece));
		size_t start = p;

		while (list[p] && !is_separator(list[p]) && list[p] != '[') {
			if (list[p] == ']')
				return syntax_error(err, list, p, "']' without '['");
			p++;
		}
		piece->text = ll_strndup(list + start, p - start);
		if (list[p] == '[') {
			p++;
			r = parse_group(list, &p, piece, err);
			if (r < 0)
				return r;
		}
	}
	*pos = p;
	return 0;
}

static unsigned long long sat_mul(unsigned long long a, unsigned long long b)
{
	if (a && b > ~0ULL / a)
		return ~0ULL;
	return a * b;
}

static unsigned long long sat_add(unsigned long long a, unsigned long long b)
{
	return a + b < a ? ~0ULL : a + b;
}

static unsigned long long group_size(const struct hl_piece *piece)
{
	unsigned long long n = 0;

	if (!piece->ranges)
		return 1;
	for (size_t i = 0; i < piece->n_ranges; i++)
		n = sat_add(n, piece->ranges[i].hi - piece->ranges[i].lo + 1);
	return n;
}

static unsigned long long entry_size(const struct hl_entry *e)
{
	unsigned long long n = 1;

	for (size_t i = 0; i < e->n_pieces; i++)
		n = sat_mul(n, group_size(&e->pieces[i]));
	return n;
}

/* The k-th value of a group, in written order. */
static void group_value(const struct hl_piece *piece, unsigned long long k, unsigned long long *v, int *width)
{
	for (size_t i = 0; i < piece->n_ranges; i++) {
		unsigned long long n = piece->ranges[i].hi - piece->ranges[i].lo + 1;
		if (k < n) {
			*v = piece->ranges[i].lo + k;
			*width = piece->ranges[i].width;
			return;
		}
		k -= n;
	}
}

/* Append up to `room` names of one entry. */
static void entry_expand(const struct hl_entry *e, size_t room, char ***hosts, size_t *n)
{
	unsigned long long *idx = ll_calloc(e->n_pieces, sizeof(*idx));
	struct ll_buf b;

	ll_buf_init(&b);
	while (room-- > 0) {
		ll_buf_reset(&b);
		for (size_t i = 0; i < e->n_pieces; i++) {
			ll_buf_add(&b, e->pieces[i].text);
			if (e->pieces[i].ranges) {
				unsigned long long v = 0;
				int width = 0;
				group_value(&e->pieces[i], idx[i], &v, &width);
				ll_buf_addf(&b, "%0*llu", width, v);
			}
		}
		*(char **)ll_array_push(hosts, n, sizeof(char *)) = ll_strdup(b.s);

		/* Odometer: the last group turns fastest. */
		size_t i = e->n_pieces;
		while (i-- > 0) {
			if (++idx[i] < group_size(&e->pieces[i]))
				break;
			idx[i] = 0;
		}
		if (i == (size_t)-1)
			break;
	}
	ll_buf_release(&b);
	free(idx);
}

/* Walk the entries of a list; `fn` gets each parsed entry. */
static int hostlist_walk(const char *list, int (*fn)(const struct hl_entry *e, void *data), void *data,
			 struct ll_error *err)
{
	size_t p = 0;
	int r = 0;

	if (!list)
		return ll_error_set(err, -EINVAL, "no hostlist given");
	while (list[p]) {
		struct hl_entry e = { 0 };

		if (is_separator(list[p])) {
			p++;
			continue;
		}
		r = parse_entry(list, &p, &e, err);
		if (r == 0)
			r = fn(&e, data);
		entry_release(&e);
		if (r != 0)
			return r;
	}
	return 0;
}

struct count_state {
	unsigned long long n;
};

static int count_entry(const struct hl_entry *e, void *data)
{
	struct count_state *s = data;

	s->n = sat_add(s->n, entry_size(e));
	return 0;
}

int ll_hostlist_count(const char *list, size_t *ret, struct ll_error *err)
{
	struct count_state s = { 0 };
	int r;

	r = hostlist_walk(list, count_entry, &s, err);
	if (r < 0)
		return r;
	*ret = s.n > (unsigned long long)SIZE_MAX ? SIZE_MAX : (size_t)s.n;
	return 0;
}

struct expand_state {
	size_t limit;
	char **hosts;
	size_t n;
};

static int expand_entry(const struct hl_entry *e, void *data)
{
	struct expand_state *s = data;

	if (s->n >= s->limit)
		return 1; /* stop early: enough names */
	entry_expand(e, s->limit - s->n, &s->hosts, &s->n);
	return 0;
}

int ll_hostlist_expand(const char *list, size_t limit, char ***ret, size_t *ret_n, struct ll_error *err)
{
	struct expand_state s = { .limit = limit ? limit : LL_HOSTLIST_MAX };
	size_t total;
	int r;

	if (limit == 0) {
		r = ll_hostlist_count(list, &total, err);
		if (r < 0)
			return r;
		if (total > LL_HOSTLIST_MAX)
			return ll_error_set(err, -E2BIG, "hostlist '%.64s' names %zu hosts, more than %d", list,
					    total, LL_HOSTLIST_MAX);
	}
	r = hostlist_walk(list, expand_entry, &s, err);
	if (r < 0) {
		ll_hostlist_free(s.hosts, s.n);
		return r;
	}
	*ret = s.hosts;
	*ret_n = s.n;
	return 0;
}

void ll_hostlist_free(char **hosts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(hosts[i]);
	free(hosts);
}

int ll_hostlist_first(const char *list, char **ret, struct ll_error *err)
{
	char **hosts = NULL;
	size_t n = 0;
	int r;

	r = ll_hostlist_expand(list, 1, &hosts, &n, err);
	if (r < 0)
		return r;
	if (n == 0) {
		ll_hostlist_free(hosts, n);
		return ll_error_set(err, -EINVAL, "hostlist '%s' names no host", list);
	}
	*ret = hosts[0];
	free(hosts);
	return 0;
}

/* ---- compressing: names -> "n[1-3,7],login1" ---- */

struct hl_name {
	size_t index;           /* first appearance among the input names */
	const char *name;
	size_t prefix_len;      /* the name without its trailing digits */
	int width;              /* number of trailing digits, 0: none */
	unsigned long long value;
};

/* Names of one group (same prefix, same digit count) sit together, in order of value;
 * groups in the order their first name appeared. */
static int name_cmp(const void *a, const void *b)
{
	const struct hl_name *x = a, *y = b;

	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return x->value < y->value ? -1 : x->value > y->value;
}

static bool same_group(const struct hl_name *a, const struct hl_name *b)
{
	return a->width && a->width == b->width && a->prefix_len == b->prefix_len &&
	       memcmp(a->name, b->name, a->prefix_len) == 0;
}

/* Brings the members of a group together: by prefix and digit count, then by
 * first appearance. A name without digits is a group of its own (its index). */
static int group_cmp(const void *a, const void *b)
{
	const struct hl_name *x = a, *y = b;
	int c;

	if (!x->width || !y->width) {
		if (x->width != y->width)
			return x->width ? 1 : -1;
		return x->index < y->index ? -1 : x->index > y->index;
	}
	if (x->prefix_len != y->prefix_len)
		return x->prefix_len < y->prefix_len ? -1 : 1;
	c = memcmp(x->name, y->name, x->prefix_len);
	if (c)
		return c;
	if (x->width != y->width)
		return x->width < y->width ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

char *ll_hostlist_compress(char *const *names, size_t n)
{
	_cleanup_free_ struct hl_name *v = ll_calloc(n ? n : 1, sizeof(*v));
	struct ll_buf b;

	for (size_t i = 0; i < n; i++) {
		const char *s = names[i];
		size_t len = strlen(s), p = len;

		while (p > 0 && isdigit((unsigned char)s[p - 1]) && len - p < 18)
			p--;
		v[i] = (struct hl_name){ .index = i, .name = s, .prefix_len = p, .width = (int)(len - p) };
		for (size_t k = p; k < len; k++)
			v[i].value = v[i].value * 10 + (unsigned)(s[k] - '0');
	}
	/* A group is known by its first member's index: sorted by group, the first of
	 * each run has it. Two sorts, O(n log n): comparing each name with every name
	 * before it took 43 s for 262,144 names (bench/hostlist-compress.c). */
	if (n)
		qsort(v, n, sizeof(*v), group_cmp);
	for (size_t i = 1; i < n; i++)
		if (same_group(&v[i - 1], &v[i]))
			v[i].index = v[i - 1].index;
	qsort(v, n, sizeof(*v), name_cmp);
	ll_buf_init(&b);
	for (size_t i = 0; i < n;) {
		size_t end = i + 1;

		while (end < n && v[end].index == v[i].index)
			end++;
		if (b.len)
			ll_buf_addc(&b, ',');
		if (end - i == 1 || !v[i].width || v[end - 1].value == v[i].value) {
			for (size_t k = i; k < end; k++) {
				if (k > i && v[k].value == v[k - 1].value && v[i].width)
					continue; /* a name given twice */
				ll_buf_addf(&b, "%s%s", k > i ? "," : "", v[k].name);
			}
		} else {
			bool first = true;

			ll_buf_addf(&b, "%.*s[", (int)v[i].prefix_len, v[i].name);
			for (size_t k = i; k < end;) {
				size_t last = k;

				while (last + 1 < end && v[last + 1].value <= v[last].value + 1)
					last++;
				ll_buf_addf(&b, "%s%0*llu", first ? "" : ",", v[i].width, v[k].value);
				if (v[last].value != v[k].value)
					ll_buf_addf(&b, "-%0*llu", v[i].width, v[last].value);
				first = false;
				k = last + 1;
			}
			ll_buf_addc(&b, ']');
		}
		i = end;
	}
	return ll_buf_detach(&b);
}
