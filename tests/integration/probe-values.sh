#!/bin/bash
# Values a topology claims that no machine has are unknown, not facts: a port rate of
# 1e23 Gb/s, a GID table entry 300 (NCCL_IB_GID_INDEX is -1..255), Cores on two
# levels (the count was -1 in the JSON, and the host's 0). Each made its way into the
# probe's JSON and the plan. Built from the project's own fixture, so it always runs.
set -u
: "${LLMLAUNCH:?}" "${LL_FIXTURES:?}"
if ! command -v jq >/dev/null; then
	echo "skipped: jq not installed" >&2
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
is() { # FILE JQ EXPECTED
	local got
	got=$(jq -c "$2" "$1" 2>&1)
	[ "$got" = "$3" ] || { echo "FAIL $(basename "$1"): $2 = $got, want $3"; fail=1; }
}

src=$LL_FIXTURES/hwloc/two-socket-4gpu-2hca.xml
# mlx5_0's port: a rate of 1e23 Gb/s and a GID at index 300 beside the real one;
# mlx5_1's a real 200 Gb/s, so that the plan adds the two up.
sed -e 's|<info name="Port1GID0" value="fe80:0000:0000:0000:0c42:a103:00a1:b2c3"/>|&\n<info name="Port1Rate" value="1e23 Gb/sec (4X HDR)"/>\n<info name="Port1GID300" value="0000:0000:0000:0000:0000:ffff:0a00:0001"/>\n<info name="Port1GID300Type" value="RoCE v2"/>|' \
	-e 's|<info name="Port1GID0" value="fe80:0000:0000:0000:0c42:a103:00a1:b2d4"/>|&\n<info name="Port1Rate" value="200 Gb/sec (4X HDR)"/>|' \
	"$src" >"$tmp/odd.xml"
grep -q 'Port1GID300' "$tmp/odd.xml" || { echo "FAIL: the fixture changed, the sed did not apply"; exit 1; }
"$LLMLAUNCH" probe --json --topology "$tmp/odd.xml" >"$tmp/odd.json" || { echo "FAIL probe odd.xml"; exit 1; }
is "$tmp/odd.json" '.rdma_devices[0].ports[0] | [.rate, .rate_gbps]' '["1e23 Gb/sec (4X HDR)",null]'
is "$tmp/odd.json" '[.rdma_devices[0].ports[0].gids[] | .index]' '[0]'
"$LLMLAUNCH" explain --json --topology "$tmp/odd.xml" >"$tmp/odd-plan.json" || { echo "FAIL explain odd.xml"; exit 1; }
is "$tmp/odd-plan.json" '[.settings[] | select(.name == "LLMLAUNCH_NET_GBPS") | .value]' '[null]'
is "$tmp/odd-plan.json" '[.settings[] | select(.name == "NCCL_IB_GID_INDEX") | .value] | map(select(. == "300"))' '[]'
# inf is no rate either.
sed 's|1e23 Gb/sec (4X HDR)|inf Gb/sec|' "$tmp/odd.xml" >"$tmp/inf.xml"
"$LLMLAUNCH" probe --json --topology "$tmp/inf.xml" >"$tmp/inf.json"
is "$tmp/inf.json" '.rdma_devices[0].ports[0].rate_gbps' 'null'

# A Core inside a Core: hwloc has Cores on two levels and cannot count them.
cat >"$tmp/cores.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
 <object type="Machine" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" allowed_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" allowed_nodeset="0x00000001" gp_index="1">
  <object type="NUMANode" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="2" local_memory="1073741824"/>
  <object type="Package" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="3">
   <object type="Core" os_index="9" cpuset="0x00000003" complete_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="4">
    <object type="Core" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="5">
     <object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="6"/>
    </object>
    <object type="Core" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="7">
     <object type="PU" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="8"/>
    </object>
   </object>
  </object>
 </object>
</topology>
XML
"$LLMLAUNCH" probe --json --topology "$tmp/cores.xml" >"$tmp/cores.json" || { echo "FAIL probe cores.xml"; exit 1; }
is "$tmp/cores.json" '[.host.cores, .host.pus, [.host.numa_nodes[] | .cores]]' '[null,2,[null]]'
"$LLMLAUNCH" probe --topology "$tmp/cores.xml" >"$tmp/cores.txt"
grep -q 'unknown cores, 2 PUs' "$tmp/cores.txt" || { echo "FAIL text: $(grep PUs "$tmp/cores.txt")"; fail=1; }

[ $fail = 0 ] && echo "ok: implausible rates, GID indexes and core counts are unknown"
exit $fail
