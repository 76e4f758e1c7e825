/* libFuzzer harness for the snapshot loader (probe/load.c, probe/xml-check.c) and the fact extraction
 * behind --topology, the probe cache and the Prolog's snapshot. Structure-aware: most
 * inputs are read as a program that writes a well-formed hwloc 2 XML topology, so the
 * fuzzer spends its time inside hwloc's import and our facts rather than on XML
 * syntax: nesting of every object type (deep enough to cross the 128-level limit),
 * attributes with odd and huge values (cpusets, indexes, sizes, PCI ids), llmlaunch's
 * info annotations (port rates, GIDs, interface flags, GPU models), and NVLink
 * distance matrices of any size. An input that starts with '<' (a real file) or whose
 * first byte is odd goes to the loader as it is, for the well-formedness check itself. Any crash, hang, leak or sanitizer
 * report is a bug; every refusal must say why. Seeds: tests/fuzz/corpus/topology/
 * (tests/fuzz/seed-topology.sh) and the fixtures named in tests/fuzz/run.sh. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmlaunch/probe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
const char *__lsan_default_suppressions(void);

/* hwloc 2.9's built-in ("minimalistic") XML parser leaks the objects it has built
 * whenever it refuses a file (a text node, a tab between attributes, a space in a
 * closing tag: there are many ways to be well-formed XML and not its dialect).
 * Those leaks are hwloc's and happen at most once per process in llmlaunch, so they
 * are suppressed here; a leak allocated by llmlaunch's own code is still a bug. */
const char *__lsan_default_suppressions(void)
{
	return "leak:libhwloc.so\n";
}

/* Twice the depth limit: both sides of it. */
#define GEN_MAX_DEPTH 256
#define GEN_MAX_BYTES (1u << 20) /* raw inputs; the generator stops at a quarter */

struct gen {
	const uint8_t *d;
	size_t n, i;
	struct ll_buf b;
	unsigned gp;
	int depth;
	const char *open[GEN_MAX_DEPTH]; /* element names to close */
};

static unsigned next(struct gen *g)
{
	return g->i < g->n ? g->d[g->i++] : 0;
}

static uint64_t next64(struct gen *g)
{
	uint64_t v = 0;

	for (int k = 0; k < 8; k++)
		v = v << 8 | next(g);
	return v;
}

static const char *pick(struct gen *g, const char *const *v, size_t n)
{
	return v[next(g) % n];
}

/* A number as hwloc might see one: small, an edge, or anything. */
static void add_number(struct gen *g)
{
	static const char *const edges[] = { "0", "1", "-1", "255", "256", "300", "65535", "4294967295",
					     "4294967296", "18446744073709551615", "1e23", "inf", "nan", "",
					     "0x10", "99999999999999999999999" };
	unsigned k = next(g) % 4;

	if (k == 0)
		ll_buf_add(&g->b, pick(g, edges, LL_ARRAY_SIZE(edges)));
	else if (k == 1)
		ll_buf_addf(&g->b, "%u", next(g));
	else
		ll_buf_addf(&g->b, "%llu", (unsigned long long)next64(g));
}

/* hwloc's bitmap syntax: "0x0000000f", "0x1,0x00000000" (several words), or junk. */
static void add_cpuset(struct gen *g)
{
	unsigned k = next(g) % 6, words = 1 + next(g) % 4;

	if (k == 0) {
		ll_buf_add(&g->b, "0x0000000f");
	} else if (k == 1) {
		ll_buf_add(&g->b, "0xffffffff");
	} else if (k == 2) {
		for (unsigned w = 0; w < words; w++)
			ll_buf_addf(&g->b, "%s0x%08x", w ? "," : "", (unsigned)next64(g));
	} else if (k == 3) {
		ll_buf_add(&g->b, "0xf...f");
	} else if (k == 4) {
		ll_buf_addf(&g->b, "0x%x", next(g));
	} else {
		add_number(g);
	}
}

/* Text for an attribute value: printable bytes, with XML's specials escaped. */
static void add_text(struct gen *g, unsigned max)
{
	unsigned n = next(g) % (max + 1);

	for (unsigned k = 0; k < n; k++) {
		unsigned c = next(g);

		if (c == '<')
			ll_buf_add(&g->b, "&lt;");
		else if (c == '&')
			ll_buf_add(&g->b, "&amp;");
		else if (c == '"')
			ll_buf_add(&g->b, "&quot;");
		else if (c >= 0x20 && c < 0x7f)
			ll_buf_addc(&g->b, (char)c);
		else
			ll_buf_addc(&g->b, (char)('a' + c % 26));
	}
}

static void add_info(struct gen *g)
{
	static const char *const names[] = {
		"Port1Rate", "Port1GID0", "Port1GID300", "Port1GID0Type", "Port1State", "Port1LinkLayer",
		"Port2LID", "Port1Netdev", "Port4294967296Rate", "NodeGUID", "GPUModel", "NVIDIAUUID",
		"NVLinksActive", "NetKind", "NetVirtual", "NetOperState", "NetFlags", "NetMTU", "NetSpeed",
		"NetAddrsKnown", "NetAddr", "Address", "HostName", "DMIProductName", "GPUDirectRDMAModule",
		"LLMLaunchSnapshot", "LLMLaunchStandIn", "PCIVendor", "PCIDevice", "CPUModel",
	};
	static const char *const values[] = {
		"200 Gb/sec (4X HDR)", "1e23 Gb/sec", "RoCE v2", "IB/RoCE v1", "InfiniBand", "Ethernet", "4",
		"fe80:0000:0000:0000:0c42:a103:00a1:b2c3", "0000:0000:0000:0000:0000:ffff:0a00:0001",
		"UP,RUNNING,LOOPBACK", "10.0.0.1/24", "fe80::1/64", "NVIDIA H100 80GB HBM3", "1", "0", "up",
		"infiniband", "veth", "nvidia_peermem",
	};

	ll_buf_addf(&g->b, "<info name=\"%s\" value=\"", pick(g, names, LL_ARRAY_SIZE(names)));
	if (next(g) % 2)
		ll_buf_add(&g->b, pick(g, values, LL_ARRAY_SIZE(values)));
	else
		add_text(g, 64);
	ll_buf_add(&g->b, "\"/>\n");
}

static void open_object(struct gen *g, bool leaf)
{
	static const char *const types[] = {
		"Package", "Group", "L3Cache", "L2Cache", "L1Cache", "Core", "PU", "NUMANode", "Die",
		"Bridge", "PCIDev", "OSDev", "Misc", "MemCache", "L1iCache", "Machine",
	};
	const char *type = pick(g, types, LL_ARRAY_SIZE(types));
	unsigned extras = next(g) % 4;

	ll_buf_addf(&g->b, "<object type=\"%s\"", type);
	if (strcmp(type, "Bridge") && strcmp(type, "PCIDev") && strcmp(type, "OSDev") && strcmp(type, "Misc")) {
		ll_buf_add(&g->b, " cpuset=\"");
		add_cpuset(g);
		ll_buf_add(&g->b, "\" complete_cpuset=\"");
		add_cpuset(g);
		ll_buf_add(&g->b, "\" nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\"");
	}
	ll_buf_add(&g->b, " os_index=\"");
	add_number(g);
	ll_buf_addf(&g->b, "\" gp_index=\"%u\"", next(g) % 8 ? ++g->gp : next(g));
	if (strstr(type, "Cache")) {
		ll_buf_add(&g->b, " cache_size=\"");
		add_number(g);
		ll_buf_addf(&g->b, "\" depth=\"%u\" cache_linesize=\"64\" cache_type=\"%u\"", next(g) % 6, next(g) % 4);
	} else if (!strcmp(type, "NUMANode")) {
		ll_buf_add(&g->b, " local_memory=\"");
		add_number(g);
		ll_buf_add(&g->b, "\"");
	} else if (!strcmp(type, "PCIDev") || !strcmp(type, "Bridge")) {
		static const char *const classes[] = { "0302", "0300", "0207", "0200", "0680", "0604", "0380" };
		static const char *const vendors[] = { "10de", "15b3", "8086", "1002", "1a03", "ffff" };

		ll_buf_addf(&g->b, " pci_busid=\"%04x:%02x:%02x.%u\" pci_type=\"%s [%s:%04x] [0000:0000] 00\"",
			    next(g), next(g), next(g) % 32, next(g) % 8, pick(g, classes, LL_ARRAY_SIZE(classes)),
			    pick(g, vendors, LL_ARRAY_SIZE(vendors)), next(g) << 8 | next(g));
		ll_buf_add(&g->b, " pci_link_speed=\"");
		add_number(g);
		ll_buf_add(&g->b, "\"");
		if (!strcmp(type, "Bridge"))
			ll_buf_addf(&g->b, " bridge_type=\"%u-1\" depth=\"%u\" bridge_pci=\"%04x:[%02x-%02x]\"", next(g) % 2,
				    next(g) % 8, next(g), next(g), next(g));
	} else if (!strcmp(type, "OSDev")) {
		static const char *const names[] = { "mlx5_0", "mlx5_10", "ib0", "eth0", "lo", "nvml0", "cuda0",
						     "efa_0", "docker0", "sda" };

		ll_buf_addf(&g->b, " name=\"%s\" osdev_type=\"%u\"", pick(g, names, LL_ARRAY_SIZE(names)), next(g) % 8);
	}
	for (unsigned k = 0; k < extras; k++) {
		static const char *const attrs[] = { "subtype", "name", "kind", "subkind", "dont_merge", "allowed_cpuset" };

		ll_buf_addf(&g->b, " %s=\"", pick(g, attrs, LL_ARRAY_SIZE(attrs)));
		add_text(g, 16);
		ll_buf_add(&g->b, "\"");
	}
	if (leaf) {
		ll_buf_add(&g->b, "/>\n");
		return;
	}
	ll_buf_add(&g->b, ">\n");
	g->open[g->depth++] = "object";
}

/* NVLinkBandwidth as hwloc writes it: N objects by gp index, N*N values. */
static void add_distances(struct gen *g)
{
	unsigned n = next(g) % 10;

	ll_buf_addf(&g->b, "<distances2 type=\"PCIDev\" nbobjs=\"%u\" kind=\"%u\" indexing=\"gp\" name=\"NVLinkBandwidth\">\n",
		    n, next(g) % 32);
	ll_buf_addf(&g->b, "<indexes length=\"%u\">", next(g) % 4 ? n : next(g));
	for (unsigned k = 0; k < n; k++)
		ll_buf_addf(&g->b, "%u ", next(g) % (g->gp + 2));
	ll_buf_add(&g->b, "</indexes>\n");
	ll_buf_addf(&g->b, "<u64values length=\"%u\">", next(g) % 4 ? n * n : next(g));
	for (unsigned k = 0; k < n * n; k++)
		ll_buf_addf(&g->b, "%llu ", next(g) % 4 ? (unsigned long long)next(g) * 1000 : (unsigned long long)next64(g));
	ll_buf_add(&g->b, "</u64values>\n</distances2>\n");
}

static char *generate(const uint8_t *data, size_t size)
{
	struct gen g = { .d = data, .n = size, .gp = 10 };
	bool distances = false;

	ll_buf_init(&g.b);
	ll_buf_add(&g.b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
			  "<topology version=\"2.0\">\n"
			  "<object type=\"Machine\" os_index=\"0\" cpuset=\"0x0000ffff\" complete_cpuset=\"0x0000ffff\" "
			  "allowed_cpuset=\"0x0000ffff\" nodeset=\"0x00000003\" complete_nodeset=\"0x00000003\" "
			  "allowed_nodeset=\"0x00000003\" gp_index=\"1\">\n"
			  "<object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x0000ffff\" complete_cpuset=\"0x0000ffff\" "
			  "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"2\" local_memory=\"1073741824\"/>\n");
	g.open[g.depth++] = "object";
	while (g.i < g.n && g.b.len < GEN_MAX_BYTES / 4) {
		switch (next(&g) % 12) {
		case 0:
		case 1:
		case 2:
		case 3:
			if (g.depth < GEN_MAX_DEPTH)
				open_object(&g, false);
			break;
		case 4:
		case 5:
			if (g.depth > 1)
				ll_buf_addf(&g.b, "</%s>\n", g.open[--g.depth]);
			break;
		case 6:
		case 7:
			add_info(&g);
			break;
		case 8:
			open_object(&g, true);
			break;
		case 9:
			distances = true;
			break;
		case 10:
			/* A run of the same nesting: depth comes cheap to the fuzzer. */
			for (unsigned k = next(&g) % 64; k > 0 && g.depth < GEN_MAX_DEPTH; k--) {
				ll_buf_addf(&g.b, "<object type=\"Group\" cpuset=\"0x0000ffff\" complete_cpuset=\"0x0000ffff\" "
						  "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"%u\">\n",
					    ++g.gp);
				g.open[g.depth++] = "object";
			}
			break;
		default:
			ll_buf_add(&g.b, "<!-- ");
			add_text(&g, 32);
			ll_buf_add(&g.b, " -->\n");
			break;
		}
	}
	while (g.depth > 0)
		ll_buf_addf(&g.b, "</%s>\n", g.open[--g.depth]);
	if (distances)
		add_distances(&g);
	ll_buf_add(&g.b, "</topology>\n");
	return ll_buf_detach(&g.b);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	/* hwloc prints its own complaints about bad files on stderr. */
	setenv("HWLOC_HIDE_ERRORS", "2", 1);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	hwloc_topology_t topo = NULL;
	struct ll_error err = { 0 };
	struct ll_facts *f = NULL;
	char *text;

	if (size == 0 || size > GEN_MAX_BYTES)
		return 0;
	if (data[0] == '<') {
		/* A real file as a seed: the whole of it, as it is. */
		text = ll_strndup((const char *)data, size);
	} else if (data[0] & 1) {
		/* As it is, a string: the loader reads NUL-terminated text. */
		text = ll_strndup((const char *)data + 1, size - 1);
	} else {
		text = generate(data + 1, size - 1);
	}
	if (ll_probe_load_xml_text("fuzz.xml", text, &topo, &err) == 0) {
		if (ll_probe_facts(topo, "snapshot:fuzz.xml", &f, &err) == 0)
			ll_facts_free(f);
		else if (!err.message)
			__builtin_trap(); /* every failure must say why */
		hwloc_topology_destroy(topo);
	} else if (!err.message) {
		__builtin_trap();
	}
	ll_error_clear(&err);
	free(text);
	return 0;
}
