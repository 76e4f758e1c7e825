/* The checks of a hwloc XML file before hwloc reads it (xml-check.h): hwloc's own
 * reader's grammar (hwloc-2.9.0 topology-xml.c and topology-xml-nolibxml.c), held
 * strictly, and the bounds that keep it from crashing. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "llmlaunch/util.h"
#include "xml-check.h"


/* Major version of the hwloc XML format: 1 when <topology> has no version (1.x
 * files), -1 when there is no <topology> element at all, 0 when the file ends
 * inside that tag. */
int probe_xml_format_major(const char *buf)
{
	const char *t = strstr(buf, "<topology");
	const char *end, *v;

	if (!t)
		return -1;
	end = strchr(t, '>');
	if (!end)
		return 0;
	v = strstr(t, "version=\"");
	if (!v || v > end)
		return 1;
	return atoi(v + strlen("version=\""));
}

/* hwloc sizes CPU and NUMA bitmaps by the PUs' and NUMA nodes' OS indexes: a PU
 * numbered 4294967000 costs 1 GB and a second, 2^64 - 160 with an infinite cpuset
 * 3.6 GB and 9 s, in every command that loads the file. Linux numbers CPUs below
 * NR_CPUS (8192 in distribution kernels); a thousand times more is still no machine. */
#define XML_MAX_OS_INDEX (1u << 20)
#define XML_MAX_OS_INDEX_TEXT "1048576"

/* hwloc's bitmap syntax, as it writes it: "0xf...f" (everything) or a first word
 * "0x" + 1-8 hex digits, then ",word" or "," (an empty word) any number of times. Its
 * parser asserts (abort) on a first word that is empty (",0"). */
static bool bitmap_ok(const char *v, const char *end)
{
	bool first = true;

	if (end - v >= 7 && strncmp(v, "0xf...f", 7) == 0)
		v += 7, first = false;
	for (;;) {
		const char *d;

		if (!first) {
			if (v == end)
				return true;
			if (*v++ != ',')
				return false;
			if (v == end || *v == ',')
				continue;
		}
		if (end - v < 3 || v[0] != '0' || v[1] != 'x')
			return false;
		for (d = v + 2; d < end && d - v < 18 && isxdigit((unsigned char)*d); d++)
			;
		if (d == v + 2 || (d < end && *d != ','))
			return false;
		v = d;
		first = false;
	}
}

/* hwloc_type_sscanf() takes any case-insensitive prefix of a type name of at least
 * `min` letters ("nu", "Node" and "numa" are all NUMANode): match types as it does,
 * or a rule below is dodged by spelling the type another way. */
static bool hwloc_type_is(const char *type, size_t len, const char *name, size_t min)
{
	return len >= min && len <= strlen(name) && strncasecmp(type, name, len) == 0;
}

/* The only escapes hwloc's reader decodes in an attribute value (after the '&');
 * at any other '&' it stops reading the object's attributes. */
static bool hwloc_escape_ok(const char *p, const char *end)
{
	static const char *const escapes[] = { "#10;", "#13;", "#9;", "quot;", "lt;", "gt;", "amp;" };

	for (size_t k = 0; k < LL_ARRAY_SIZE(escapes); k++) {
		size_t len = strlen(escapes[k]);

		if ((size_t)(end - p) >= len && strncmp(p, escapes[k], len) == 0)
			return true;
	}
	return false;
}

#define ATTRS_NOT_HWLOCS "an object's attributes are not name=\"value\" pairs"

/* What hwloc 2.9 would crash or stall on in an <object ...> start tag, from just
 * after its name to its '>' (or "/>"); NULL when nothing. `root`: the first object,
 * `major`: the file's format.
 *
 * The reader that loads it is hwloc's own (libxml2's plugin is kept out, and
 * HWLOC_LIBXML=0 is set for the load). It takes attributes as [a-z_]+="value",
 * apart by spaces, tabs or newlines, a value with only the escapes it writes, and
 * at the first thing it cannot read it stops reading that object's attributes
 * without a word: everything after is lost, and a set lost that way made it
 * dereference NULL (a root with nodeset but, for hwloc, no complete_nodeset). A
 * raw '>' in a value ends the element for it. So the grammar here is that reader's
 * exactly, and the rules after it see the attributes hwloc will see.
 *
 * hwloc writes every set with its complete_ counterpart, both on every NUMA node
 * and all four on the root (it checks the root's cpuset, and in 2.x its nodeset,
 * only after loading the children, which use them), and sizes its bitmaps by PU
 * and NUMA node numbers. */
static const char *object_attrs_why(const char *p, const char *end, bool root, int major)
{
	static const char *const names[] = { "cpuset", "complete_cpuset", "nodeset", "complete_nodeset" };
	const char *type = NULL, *index = NULL;
	size_t type_len = 0;
	unsigned have = 0;

	if (p < end && *p == ' ')
		p++;
	else if (p < end && !(*p == '/' && p + 1 == end))
		return ATTRS_NOT_HWLOCS;
	for (;;) {
		const char *name, *value, *q;
		size_t len;
		bool escaped = false;

		while (p < end && strchr(" \t\n", *p))
			p++;
		if (p >= end || (*p == '/' && p + 1 == end))
			break;
		for (name = p; p < end && ((*p >= 'a' && *p <= 'z') || *p == '_'); p++)
			;
		len = (size_t)(p - name);
		if (len == 0 || end - p < 2 || p[0] != '=' || p[1] != '"')
			return ATTRS_NOT_HWLOCS;
		value = p + 2;
		for (q = value; q < end && *q != '"'; q++) {
			if (*q == '<' || *q == '>')
				return "an object's attribute value holds a raw '<' or '>' (hwloc's reader ends the element there)";
			if (*q == '&') {
				if (!hwloc_escape_ok(q + 1, end))
					return "an object's attribute value holds an '&' that starts none of the escapes hwloc writes";
				escaped = true;
			}
		}
		if (q >= end)
			return ATTRS_NOT_HWLOCS;
		for (size_t k = 0; k < LL_ARRAY_SIZE(names); k++)
			if (strlen(names[k]) == len && strncmp(name, names[k], len) == 0)
				have |= 1u << k;
		if ((len >= 6 && strncmp(name + len - 6, "cpuset", 6) == 0) ||
		    (len >= 7 && strncmp(name + len - 7, "nodeset", 7) == 0)) {
			if (!bitmap_ok(value, q))
				return "an object's CPU or NUMA set is not hwloc's 0x... words";
		}
		if ((len == 4 && strncmp(name, "type", 4) == 0) || (len == 8 && strncmp(name, "os_index", 8) == 0)) {
			/* hwloc writes no escape in either; decoding them here is not worth it. */
			if (escaped)
				return "an object's type or os_index holds an escape, which hwloc never writes there";
			if (len == 4)
				type = value, type_len = (size_t)(q - value);
			else
				index = value;
		}
		p = q + 1;
	}
	bool numa = type && (hwloc_type_is(type, type_len, "numanode", 2) || hwloc_type_is(type, type_len, "node", 2));

	if (!(have & 1) != !(have & 2) || !(have & 4) != !(have & 8))
		return "an object has a cpuset or nodeset without its complete_ counterpart";
	if (root && (!(have & 1) || (major >= 2 && !(have & 4))))
		return major >= 2 ? "the root object lacks its cpuset or nodeset" : "the root object has no cpuset";
	/* hwloc writes both on every NUMA node (all 240 of the project's real exports
	 * have them); a NUMA node under the root with neither makes it dereference NULL. */
	if (numa && (!(have & 1) || !(have & 4)))
		return "a NUMA node without its cpuset and nodeset";
	if (index && type && (numa || hwloc_type_is(type, type_len, "pu", 2))) {
		unsigned long long v;

		errno = 0;
		v = strtoull(index, NULL, 10);
		if (errno || v > XML_MAX_OS_INDEX)
			return "a PU or NUMA node numbered above " XML_MAX_OS_INDEX_TEXT ", beyond any machine's";
	}
	return NULL;
}

/* Is buf well-formed XML (balanced elements, closed quotes, comments and
 * declarations), and no deeper than XML_MAX_DEPTH? hwloc's built-in parser leaks
 * its half-built tree on a truncated file, and truncation is the usual way a
 * snapshot goes bad (a copy cut short, an excerpt pasted into an issue), so catch
 * it before hwloc sees it. 0, -EINVAL (not well-formed), -E2BIG (too deep) or
 * -EBADR with *why: an object whose attributes hwloc would crash or stall on. */
int probe_xml_check(const char *buf, int major, const char **why)
{
	struct tag {
		const char *name;
		size_t len;
	} *stack = NULL;
	size_t depth = 0, roots = 0, objects = 0;
	int r = -EINVAL;
	const char *p = buf;

	for (;;) {
		const char *lt = strchr(p, '<'), *e;

		if (!lt) {
			if (depth == 0 && roots > 0)
				r = 0;
			break;
		}
		p = lt + 1;
		if (*p == '?') {
			e = strstr(p, "?>");
			if (!e)
				break;
			p = e + 2;
		} else if (strncmp(p, "!--", 3) == 0) {
			e = strstr(p + 3, "-->");
			if (!e)
				break;
			p = e + 3;
		} else if (*p == '!') {
			const char *br = strchr(p, '['), *gt = strchr(p, '>');

			if (!gt)
				break;
			if (br && br < gt) {
				e = strstr(br, "]>");
				if (!e)
					break;
				gt = e + 1;
			}
			p = gt + 1;
		} else if (*p == '/') {
			size_t len = strcspn(p + 1, " \t\r\n>");

			if (depth == 0 || p[1 + len] == '\0' || stack[depth - 1].len != len ||
			    strncmp(stack[depth - 1].name, p + 1, len) != 0)
				break;
			e = strchr(p + 1 + len, '>');
			if (!e)
				break;
			depth--;
			p = e + 1;
		} else {
			const char *name = p;
			size_t len = strcspn(p, " \t\r\n/>");
			char quote = 0;

			if (len == 0)
				break;
			for (p += len; *p && (quote || *p != '>'); p++)
				if (quote && *p == quote)
					quote = 0;
				else if (!quote && (*p == '"' || *p == '\''))
					quote = *p;
			if (!*p)
				break;
			if (len == 6 && strncmp(name, "object", 6) == 0 &&
			    (*why = object_attrs_why(name + len, p, objects++ == 0, major))) {
				r = -EBADR;
				break;
			}
			if (p[-1] != '/') {
				struct tag *t;

				if (depth >= XML_MAX_DEPTH) {
					r = -E2BIG;
					break;
				}
				t = ll_array_push(&stack, &depth, sizeof(*t));
				t->name = name;
				t->len = len;
			}
			if (depth <= 1)
				roots++;
			p++;
		}
	}
	free(stack);
	return r;
}

