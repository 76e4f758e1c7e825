/* Internal to the profile loader: a YAML tree with positions (profile-yaml.c). */
#ifndef LLMLAUNCH_PROFILE_YAML_H
#define LLMLAUNCH_PROFILE_YAML_H

#include <stdbool.h>
#include <stddef.h>
#include "llmlaunch/util.h"

enum ll_ynode_type { LL_YNODE_SCALAR, LL_YNODE_SEQUENCE, LL_YNODE_MAPPING };

struct ll_ynode {
	enum ll_ynode_type type;
	unsigned line, column;  /* 1-based */
	char *s;                /* scalars: the value (may hold NUL: see len) */
	size_t len;
	bool plain;             /* unquoted scalar (so `~` and empty mean null) */
	struct ll_ynode **items; /* sequences: elements; mappings: key, value, key, value ... */
	size_t n;
};

/* Parse one YAML document. *ret is NULL for an empty stream. Errors carry ORIGIN:LINE:COL. */
int ll_yaml_parse(const char *origin, const char *text, size_t len, struct ll_ynode **ret, struct ll_error *err);
void ll_ynode_free(struct ll_ynode *n);
bool ll_ynode_is_null(const struct ll_ynode *n);
const char *ll_ynode_type_name(const struct ll_ynode *n);

#endif
