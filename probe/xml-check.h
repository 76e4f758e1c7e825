/* What llmlaunch checks of a hwloc XML file before hwloc reads it (load.c): hwloc
 * 2.9's own reader crashes, asserts or stalls on inputs a snapshot can hold (a file
 * cut short, nesting 10,000 deep, attributes its reader silently stops at, huge OS
 * indexes), each found by fuzz-topology and listed in docs/security.md. Pure: text in,
 * verdict out. */
#ifndef LLMLAUNCH_PROBE_XML_CHECK_H
#define LLMLAUNCH_PROBE_XML_CHECK_H

/* hwloc's XML import recurses once per nesting level: some 10,000-20,000 levels
 * overflow an 8 MiB stack (SIGSEGV inside hwloc_topology_load). A real topology is
 * far flatter: Machine, Package, Die, Groups, caches, Core, PU, or a chain of PCIe
 * bridges down to an OS device, with its info children; the deepest of 64 real
 * exports (DGX-2, many-VF hosts) nests 12 elements. 128 is ten times that. */
#define XML_MAX_DEPTH 128

/* Major version of the hwloc XML format: 1 when <topology> has no version (1.x
 * files), -1 when there is no <topology> element at all, 0 when the file ends
 * inside that tag. */
int probe_xml_format_major(const char *buf);

/* Is buf well-formed XML (balanced elements, closed quotes, comments and
 * declarations), and no deeper than XML_MAX_DEPTH? 0, -EINVAL (not well-formed),
 * -E2BIG (too deep) or -EBADR with *why: an object whose attributes hwloc would
 * crash or stall on. */
int probe_xml_check(const char *buf, int major, const char **why);

#endif
