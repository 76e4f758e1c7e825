#include "llmlaunch/quote.h"

#include <errno.h>
#include <string.h>

/* The length of the UTF-8 sequence at s (at most n bytes), 0 when it is not one
 * (overlong forms, surrogates and values above U+10FFFF are not). */
size_t ll_utf8_len(const char *text, size_t n)
{
	const unsigned char *s = (const unsigned char *)text;
	unsigned c = s[0];
	size_t len;
	unsigned min;
	unsigned long v;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, min = 0x80, v = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, min = 0x800, v = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, min = 0x10000, v = c & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	return len;
}

/* 0: plain; else the number of bytes at s that must be escaped as one unit. */
static size_t unplain(const unsigned char *s, size_t n, unsigned flags, size_t *ret_seq)
{
	size_t len = ll_utf8_len((const char *)s, n);

	*ret_seq = len ? len : 1;
	if (len == 0)
		return 1;
	if (len == 1)
		return (s[0] < 0x20 && !((flags & LL_ESCAPE_KEEP_NEWLINE) && (s[0] == '\n' || s[0] == '\t'))) ||
		       s[0] == 0x7f;
	/* U+0080-U+009F: C2 80 - C2 9F */
	return len == 2 && s[0] == 0xc2 && s[1] <= 0x9f ? 2 : 0;
}

bool ll_text_is_plain(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t seq;

	for (size_t i = 0; i < len; i += seq)
		if (unplain(p + i, len - i, LL_ESCAPE_KEEP_NEWLINE, &seq))
			return false;
	return true;
}

void ll_text_escape(const char *s, size_t len, unsigned flags, struct ll_buf *out)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t seq, bad;

	for (size_t i = 0; i < len; i += seq) {
		bad = unplain(p + i, len - i, flags, &seq);
		if (!bad) {
			for (size_t k = 0; k < seq; k++)
				ll_buf_addc(out, (char)p[i + k]);
			continue;
		}
		if (bad == 2) {
			ll_buf_addf(out, "\\u%04x", p[i + 1]);
			continue;
		}
		switch (p[i]) {
		case '\n': ll_buf_add(out, "\\n"); break;
		case '\r': ll_buf_add(out, "\\r"); break;
		case '\t': ll_buf_add(out, "\\t"); break;
		case 0x1b: ll_buf_add(out, "\\e"); break;
		default: ll_buf_addf(out, "\\x%02x", p[i]); break;
		}
		seq = 1;
	}
}

char *ll_text_escaped(const char *s, unsigned flags)
{
	struct ll_buf b;

	if (!s)
		return NULL;
	ll_buf_init(&b);
	ll_text_escape(s, strlen(s), flags, &b);
	return ll_buf_detach(&b);
}

bool ll_sh_safe(const char *s)
{
	if (!s || !*s)
		return false;
	for (const char *c = s; *c; c++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-", *c))
			return false;
	return true;
}

int ll_sh_quote(const char *s, bool if_needed, struct ll_buf *out)
{
	size_t n = strlen(s);

	if (if_needed && ll_sh_safe(s)) {
		ll_buf_add(out, s);
		return 0;
	}
	if (ll_text_is_plain(s, n)) {
		ll_buf_addc(out, '\'');
		for (const char *c = s; *c; c++) {
			if (*c == '\'')
				ll_buf_add(out, "'\\''");
			else
				ll_buf_addc(out, *c);
		}
		ll_buf_addc(out, '\'');
		return 0;
	}
	/* printf's format reads \NNN as one byte; % and \ are its own. */
	if (n && s[n - 1] == '\n')
		return -EINVAL;
	ll_buf_add(out, "\"$(printf '");
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '\'')
			ll_buf_add(out, "'\\''");
		else if (*c == '%')
			ll_buf_add(out, "%%");
		else if (*c == '\\')
			ll_buf_add(out, "\\\\");
		else if (*c < 0x20 || *c >= 0x7f)
			ll_buf_addf(out, "\\%03o", *c);
		else
			ll_buf_addc(out, (char)*c);
	}
	ll_buf_add(out, "')\"");
	return 0;
}

void ll_fish_quote(const char *s, struct ll_buf *out)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), seq;
	bool open = false;

	for (size_t i = 0; i < n; i += seq) {
		if (unplain(p + i, n - i, LL_ESCAPE_KEEP_NEWLINE, &seq)) {
			if (open)
				ll_buf_addc(out, '\'');
			open = false;
			for (size_t k = 0; k < seq; k++)
				ll_buf_addf(out, "\\x%02x", p[i + k]);
			continue;
		}
		if (!open)
			ll_buf_addc(out, '\'');
		open = true;
		for (size_t k = 0; k < seq; k++) {
			if (p[i + k] == '\'' || p[i + k] == '\\')
				ll_buf_addc(out, '\\');
			ll_buf_addc(out, (char)p[i + k]);
		}
	}
	if (open || n == 0)
		ll_buf_add(out, n == 0 ? "''" : "'");
}
