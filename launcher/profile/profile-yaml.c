/* A small YAML tree built from libyaml's event stream. Events rather than
 * yaml_parser_load() because we want our own limits: aliases are refused where
 * they appear (no "billion laughs" expansion), nesting is capped (no deep
 * recursion on hostile input), and only one document is allowed. */
#include <errno.h>
#include <string.h>
#include <yaml.h>

#include "profile-yaml.h"

#define MAX_DEPTH 32
#define MAX_NODES 100000

void ll_ynode_free(struct ll_ynode *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++)
		ll_ynode_free(n->items[i]);
	free(n->items);
	free(n->s);
	free(n);
}

static struct ll_ynode *node_new(enum ll_ynode_type type, const yaml_mark_t *m)
{
	struct ll_ynode *n = ll_calloc(1, sizeof(*n));

	n->type = type;
	n->line = (unsigned)m->line + 1;
	n->column = (unsigned)m->column + 1;
	return n;
}

static int syntax_error(const yaml_parser_t *parser, const char *origin, struct ll_error *err)
{
	const yaml_mark_t *m = parser->problem ? &parser->problem_mark : &parser->mark;

	if (parser->error == YAML_MEMORY_ERROR)
		return ll_error_set(err, -ENOMEM, "%s: out of memory while parsing", origin);
	if (parser->context)
		return ll_error_set(err, -EINVAL, "%s:%zu:%zu: syntax error: %s (%s at line %zu)", origin,
				    m->line + 1, m->column + 1, parser->problem ? parser->problem : "invalid YAML",
				    parser->context, parser->context_mark.line + 1);
	return ll_error_set(err, -EINVAL, "%s:%zu:%zu: syntax error: %s", origin, m->line + 1, m->column + 1,
			    parser->problem ? parser->problem : "invalid YAML");
}

int ll_yaml_parse(const char *origin, const char *text, size_t len, struct ll_ynode **ret, struct ll_error *err)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	struct ll_ynode *stack[MAX_DEPTH + 1];
	struct ll_ynode *root = NULL;
	size_t depth = 0, n_nodes = 0;
	int n_docs = 0, r = 0;
	bool done = false;

	if (memchr(text, '\0', len))
		return ll_error_set(err, -EINVAL, "%s: contains a NUL byte: not a YAML text file", origin);
	if (!yaml_parser_initialize(&parser))
		return ll_error_set(err, -ENOMEM, "%s: cannot initialise the YAML parser", origin);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);

	while (!done) {
		struct ll_ynode *n = NULL;

		if (!yaml_parser_parse(&parser, &ev)) {
			r = syntax_error(&parser, origin, err);
			break;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++n_docs > 1)
				r = ll_error_set(err, -EINVAL,
						 "%s:%zu:%zu: a profile is one YAML document, found a second one", origin,
						 ev.start_mark.line + 1, ev.start_mark.column + 1);
			break;
		case YAML_ALIAS_EVENT:
			r = ll_error_set(err, -EINVAL, "%s:%zu:%zu: aliases ('*%s') are not supported in profiles", origin,
					 ev.start_mark.line + 1, ev.start_mark.column + 1,
					 (const char *)ev.data.alias.anchor);
			break;
		case YAML_SCALAR_EVENT:
			n = node_new(LL_YNODE_SCALAR, &ev.start_mark);
			n->s = ll_strndup((const char *)ev.data.scalar.value, ev.data.scalar.length);
			n->len = ev.data.scalar.length;
			n->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
			break;
		case YAML_SEQUENCE_START_EVENT:
			n = node_new(LL_YNODE_SEQUENCE, &ev.start_mark);
			break;
		case YAML_MAPPING_START_EVENT:
			n = node_new(LL_YNODE_MAPPING, &ev.start_mark);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		default:
			break;
		}
		if (n) {
			if (++n_nodes > MAX_NODES) {
				ll_ynode_free(n);
				r = ll_error_set(err, -E2BIG, "%s: too many YAML nodes for a profile", origin);
			} else if (depth == 0) {
				root = n;
			} else {
				struct ll_ynode *parent = stack[depth - 1];
				*(struct ll_ynode **)ll_array_push(&parent->items, &parent->n, sizeof(n)) = n;
			}
			if (r == 0 && n->type != LL_YNODE_SCALAR) {
				if (depth >= MAX_DEPTH)
					r = ll_error_set(err, -EINVAL, "%s:%u:%u: nested deeper than %d levels", origin,
							 n->line, n->column, MAX_DEPTH);
				else
					stack[depth++] = n;
			}
		}
		yaml_event_delete(&ev);
		if (r < 0)
			break;
	}
	yaml_parser_delete(&parser);
	if (r < 0) {
		ll_ynode_free(root);
		return r;
	}
	*ret = root; /* NULL for an empty stream */
	return 0;
}

bool ll_ynode_is_null(const struct ll_ynode *n)
{
	if (!n)
		return true;
	if (n->type != LL_YNODE_SCALAR || !n->plain)
		return false;
	return n->len == 0 || strcmp(n->s, "~") == 0 || strcmp(n->s, "null") == 0 || strcmp(n->s, "Null") == 0 ||
	       strcmp(n->s, "NULL") == 0;
}

const char *ll_ynode_type_name(const struct ll_ynode *n)
{
	if (ll_ynode_is_null(n))
		return "nothing";
	switch (n->type) {
	case LL_YNODE_SCALAR:
		return "a scalar";
	case LL_YNODE_SEQUENCE:
		return "a list";
	case LL_YNODE_MAPPING:
		return "a mapping";
	}
	return "?";
}
