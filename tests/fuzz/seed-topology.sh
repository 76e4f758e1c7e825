#!/bin/bash
# Seed corpus for fuzz-topology: small programs for its generator (first byte even)
# and a few hand-written files given as they are (first byte '<' or odd).
# usage: seed-topology.sh OUTDIR
set -euo pipefail
out=${1:?usage: seed-topology.sh OUTDIR}
mkdir -p "$out"
# Generator programs: each byte after the first picks the next step (open, close,
# info, leaf, distances, a run of nesting, a comment) and its values.
printf '\000\000\001\006\006\010\004\000\012\040\011\003' >"$out/gen-small"
printf '\000\012\377\012\377\012\377\004' >"$out/gen-deep"
printf '\000\000\012\000\010\012\011\011\006\006\006' >"$out/gen-pci"
printf '\002\011\011\011\011\011\011\011\011\011' >"$out/gen-distances"
# Raw: a minimal valid topology, a truncated one, and an NCCL file.
cat >"$out/raw-minimal.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<topology version="2.0">
 <object type="Machine" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" allowed_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" allowed_nodeset="0x00000001" gp_index="1">
  <object type="NUMANode" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="2" local_memory="1073741824"/>
  <object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="3"/>
 </object>
</topology>
XML
head -c 300 "$out/raw-minimal.xml" >"$out/raw-truncated.xml"
printf '<system version="1"><cpu numaid="0"><pci busid="0000:01:00.0"/></cpu></system>\n' >"$out/raw-nccl.xml"
