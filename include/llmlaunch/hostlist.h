/* Slurm hostlist expressions: "gpu[01-04,07],login1", "rack[1-2]-n[001-003]".
 * Commas at the top level separate entries; inside brackets they separate ranges.
 * A range keeps the zero padding of its lower bound ("01-04" -> 01 02 03 04).
 * Several bracket groups in one entry expand as a cartesian product, the last
 * group varying fastest (as Slurm prints them). */
#ifndef LLMLAUNCH_HOSTLIST_H
#define LLMLAUNCH_HOSTLIST_H

#include <stddef.h>
#include "llmlaunch/util.h"

/* Refuse to expand more names than this (a typo like n[0-99999999] must not eat memory). */
#define LL_HOSTLIST_MAX 1048576

/* Expand `list` into at most `limit` names (0: LL_HOSTLIST_MAX). Expansion stops at
 * `limit` without error, so ll_hostlist_expand(l, 1, ...) is cheap.
 * Returns 0 and a malloc'ed array of malloc'ed strings (free with ll_hostlist_free),
 * -EINVAL on a syntax error (the message quotes the list and the position),
 * -E2BIG when the full list would exceed LL_HOSTLIST_MAX and limit is 0. */
int ll_hostlist_expand(const char *list, size_t limit, char ***ret, size_t *ret_n, struct ll_error *err);
void ll_hostlist_free(char **hosts, size_t n);

/* The first host of the list, as Slurm's `scontrol show hostnames | head -1`. */
int ll_hostlist_first(const char *list, char **ret, struct ll_error *err);

/* Number of names the list stands for, without expanding it; -EINVAL on syntax errors. */
int ll_hostlist_count(const char *list, size_t *ret, struct ll_error *err);

/* The names as one hostlist expression, as `scontrol show hostlist` writes them and
 * `sbatch --exclude` reads them: names of one prefix and one digit count share a
 * bracket group of ranges ("n[1-3,7]"), groups in the order their first name came,
 * names without trailing digits as they are. ll_hostlist_expand() gives the names back
 * (each group sorted). Never NULL; "" for no names. Malloc'ed. */
char *ll_hostlist_compress(char *const *names, size_t n);

#endif
