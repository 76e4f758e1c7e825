/* Stage 1: learn the facts of one node. Everything learned is stored in the hwloc
 * topology (infos and distances, names in docs/snapshot-format.md), then extracted
 * into struct ll_facts, so a saved snapshot replays to the same facts. */
#ifndef LLMLAUNCH_PROBE_H
#define LLMLAUNCH_PROBE_H

#include <hwloc.h>
#include "llmlaunch/facts.h"
#include "llmlaunch/util.h"

/* What one load has to say besides its facts, for the command layer to print. Owned
 * by the caller; a load first releases what an earlier one left in it. */
struct ll_probe_report {
	/* Why NVML gave nothing (or less than it should), one line for a warning:
	 * "cannot load NVML library 'X': ...", "NVML library 'X' is unusable: nvmlInit_v2
	 * failed: ...". NULL when NVML worked or is simply not installed (a CPU node). */
	char *nvml_warning;
	/* The same for ROCm SMI ("ROCm SMI library 'X' is unusable: rsmi_init failed: ..."):
	 * NULL when it worked or is not installed (a node without AMD GPUs). */
	char *rsmi_warning;
	/* What a live load did with the probe cache, one line for a debug message:
	 * "hit '/run/llmlaunch/cache/topology.xml'", "miss (...); written", "off
	 * (--no-cache)" ... NULL when the load was not a live one. */
	char *cache_status;
};
void ll_probe_report_release(struct ll_probe_report *r);

struct ll_probe_options {
	const char *topology_file;  /* replay this snapshot (hwloc XML); no live reads at all */
	const char *fsroot;         /* read /sys and /proc under this directory */
	const char *nvml_library;   /* NULL: $LLMLAUNCH_NVML_LIBRARY, else "libnvidia-ml.so.1" */
	bool skip_nvml;             /* do not try NVML at all */
	bool no_cache;              /* live probe: neither read nor write the probe cache */
	struct ll_probe_report *report; /* optional: filled by the load */
};

/* Load the topology: from the snapshot when topology_file is set, else the live
 * machine (or fsroot) with every annotator applied. *ret is owned by the caller
 * (hwloc_topology_destroy). A live probe (neither topology_file nor fsroot) takes
 * the static part of the topology from the per-boot cache when it is valid, and
 * writes the cache when it is not (unless no_cache); the dynamic facts are read
 * fresh either way (docs/snapshot-format.md, "The probe cache"). */
int ll_probe_load(const struct ll_probe_options *opts, hwloc_topology_t *ret, struct ll_error *err);

/* Load snapshot text (hwloc XML, NUL-terminated) the way --topology loads a file:
 * the same checks (format version, well-formed, at most 128 levels deep) before
 * hwloc sees it. `name` names it in messages. The fuzzer's entry point. */
int ll_probe_load_xml_text(const char *name, const char *text, hwloc_topology_t *ret, struct ll_error *err);

/* Extract the facts from a loaded (annotated or plain lstopo) topology. */
int ll_probe_facts(hwloc_topology_t topo, const char *source, struct ll_facts **ret, struct ll_error *err);

/* Convenience: load + facts. *ret_topo may be NULL when the caller needs only facts. */
int ll_probe(const struct ll_probe_options *opts, hwloc_topology_t *ret_topo, struct ll_facts **ret,
	     struct ll_error *err);

/* Write the annotated topology as hwloc XML (lstopo-readable). */
int ll_probe_save(hwloc_topology_t topo, const char *path, struct ll_error *err);
/* The same as NAME inside the directory `dirfd` (ll_file_replace_at); `shown` names
 * it in messages. */
int ll_probe_save_at(hwloc_topology_t topo, int dirfd, const char *name, const char *shown, struct ll_error *err);

#endif
