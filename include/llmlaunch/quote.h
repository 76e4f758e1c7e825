/* Writing text that came from files (profiles, logs, topologies, check results) where a
 * reader or a shell takes it: escaped for a terminal, quoted for a shell. Every place
 * that prints or quotes such text goes through here. */
#ifndef LLMLAUNCH_QUOTE_H
#define LLMLAUNCH_QUOTE_H

#include <stdbool.h>
#include <stddef.h>
#include "llmlaunch/util.h"

/* The length of the UTF-8 sequence starting `s` (at most n bytes), 0 when none does
 * (a stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF). */
size_t ll_utf8_len(const char *s, size_t n);

/* Bytes a terminal would act on rather than show: C0 controls but tab and newline,
 * DEL, the C1 controls (U+0080-U+009F, and those bytes alone where they are not
 * UTF-8), and bytes that are not UTF-8 (a terminal may read them as C1). */
bool ll_text_is_plain(const char *s, size_t len);

enum {
	LL_ESCAPE_KEEP_NEWLINE = 1 << 0, /* '\n' and '\t' pass (text whose layout is ours) */
};
/* Append `s` (len bytes) with every byte ll_text_is_plain() refuses written as an
 * escape a reader can see: \n \r \t \e, \xNN for other single bytes, \u0080-\u009f
 * for UTF-8 C1 controls. Everything else, valid UTF-8 included, stays as it is. */
void ll_text_escape(const char *s, size_t len, unsigned flags, struct ll_buf *out);
/* The same into a new string (malloc'ed); NULL stays NULL. */
char *ll_text_escaped(const char *s, unsigned flags);

/* True when `s` reads as itself in any POSIX shell without quotes (non-empty, only
 * letters, digits and _@%+=:,./-). */
bool ll_sh_safe(const char *s);

/* Append `s` for a POSIX shell, exactly and without a byte a terminal acts on: in
 * single quotes, a quote inside as '\'' (the only character they cannot hold); with
 * `if_needed`, a safe word stays bare. A value holding such bytes is written as
 * "$(printf '...')" with them in octal, which every POSIX shell reads back exactly,
 * unless the value ends in a newline (command substitution drops it): then -EINVAL. */
int ll_sh_quote(const char *s, bool if_needed, struct ll_buf *out);

/* Append `s` for fish: single quotes, where only \' and \\ are escapes, and the bytes
 * a terminal acts on as \xHH outside them (fish reads them back exactly). */
void ll_fish_quote(const char *s, struct ll_buf *out);

#endif
