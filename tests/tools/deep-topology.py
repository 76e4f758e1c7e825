#!/usr/bin/env python3
"""Write an hwloc 2 XML topology whose PU sits under N nested Group objects.

A valid file in every other respect (one NUMA node, one PU), so the only thing
wrong with it is its depth: 20,000 levels overflowed the stack inside
hwloc_topology_load before llmlaunch refused files nested deeper than a real
topology can be (probe/load.c, XML_MAX_DEPTH).

usage: deep-topology.py N OUT
"""
import sys

n, out = int(sys.argv[1]), sys.argv[2]
sets = 'cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001"'
parts = [
    '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n<topology version="2.0">\n',
    f'<object type="Machine" os_index="0" {sets} allowed_cpuset="0x00000001" allowed_nodeset="0x00000001" gp_index="1">\n',
    f'<object type="NUMANode" os_index="0" {sets} gp_index="2" local_memory="1073741824"/>\n',
]
parts += [f'<object type="Group" {sets} gp_index="{i + 3}">\n' for i in range(n)]
parts.append(f'<object type="PU" os_index="0" {sets} gp_index="{n + 3}"/>\n')
parts.append('</object>\n' * n)
parts.append('</object>\n</topology>\n')
with open(out, "w") as f:
    f.write("".join(parts))
