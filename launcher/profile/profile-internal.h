/* Internal to the profile loader (profile.c, profile-rules.c). */
#ifndef LLMLAUNCH_PROFILE_INTERNAL_H
#define LLMLAUNCH_PROFILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

/* Variables the planner decides: the only keys of a profile's `nccl`. */
extern const char *const ll_planner_vars[];
extern const size_t ll_n_planner_vars;

/* Is `v` a value the planner accepts for planner variable `name`? If not, *expected
 * describes what would be. */
bool ll_profile_nccl_value_valid(const char *name, const char *v, const char **expected);
/* strtol of the whole string within [min, max]. */
bool ll_profile_parse_long(const char *s, long min, long max, long *ret);

#endif
