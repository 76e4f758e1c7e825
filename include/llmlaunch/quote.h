/* Quoting for POSIX shells, shared by every place that writes a shell line
 * (`env --format sh`, the dry run's script). */
#ifndef LLMLAUNCH_QUOTE_H
#define LLMLAUNCH_QUOTE_H

#include <stdbool.h>
#include "llmlaunch/util.h"

/* True when `s` reads as itself in any POSIX shell without quotes (non-empty, only
 * letters, digits and _@%+=:,./-). */
bool ll_sh_safe(const char *s);

/* Append `s` for a POSIX shell: in single quotes, a quote inside as '\'' (the only
 * character single quotes cannot hold). With `if_needed`, a safe word stays bare. */
void ll_sh_quote(const char *s, bool if_needed, struct ll_buf *out);

#endif
