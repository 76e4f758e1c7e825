#!/bin/bash
# `llmlaunch probe` output on real data: the JSON keys other tools rely on, with
# exact values, and the text matrix. JURECA-DC (lstopo export, hwloc 2.2), and
# the QLogic and mlx4 machines' real sysfs trees through --fsroot.
set -u
: "${LLMLAUNCH:?}" "${LL_REALDATA:?}"
if ! command -v jq >/dev/null; then
	echo "skipped: jq not installed" >&2
	exit 77
fi
if [ ! -d "$LL_REALDATA/hwloc_xml" ]; then
	echo "skipped: real data not found in '$LL_REALDATA'" >&2
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# $1 JSON file, $2 jq expression whose value must be the JSON $3: printed exactly so,
# or equal as a value (jq 1.7 prints a number as the file spells it, 40.0; 1.6 as 40).
is() {
	local got
	got=$(jq -c "$2" "$1" 2>&1)
	if [ "$got" != "$3" ] && ! jq -e --argjson want "$3" "($2) == \$want" "$1" >/dev/null 2>&1; then
		echo "FAIL $(basename "$1"): $2 = $got, want $3"
		fail=1
	fi
}

jrc="$LL_REALDATA/hwloc_xml/psmgmt/topo.jrc0323.xml"
"$LLMLAUNCH" probe --json --topology "$jrc" >"$tmp/jrc.json" || { echo "FAIL probe jrc0323"; exit 1; }
j="$tmp/jrc.json"
is "$j" '.host.hostname' '"jrc0323"'
is "$j" '[.host.packages, .host.cores, .host.pus, (.host.numa_nodes | length)]' '[2,128,256,8]'
is "$j" '[.gpus[] | .busid]' '["0000:03:00.0","0000:44:00.0","0000:84:00.0","0000:c4:00.0"]'
is "$j" '[.gpus[] | .pci_id] | unique' '["10de:20b0"]'
is "$j" '[.gpus[] | .nearest_rdma]' '["mlx5_0","mlx5_1","mlx5_2","mlx5_3"]'
is "$j" '[.gpus[] | .nearest_rdma_path] | unique' '["PIX"]'
is "$j" '.gpus[0] | [.numa_node, .cpuset, .uuid, .nvlinks]' '[3,"48-63,176-191",null,[]]'
is "$j" '[.rdma_devices[] | .name]' '["mlx5_0","mlx5_1","mlx5_2","mlx5_3"]'
is "$j" '[.rdma_devices[] | .netdevs[0]]' '["ib0","ib1","ib2","ib3"]'
is "$j" '.rdma_devices[0].ports[0] | [.number, .state, .link_layer, .lid, .rate]' '[1,"ACTIVE","InfiniBand",340,null]'
is "$j" '[.interfaces[] | has("name") and has("virtual")] | unique' '[true]'
is "$j" '[.interfaces[] | select(.name == "ib2") | .kind, .virtual, .rdma_device, .addresses]' \
	'["infiniband",false,"mlx5_2",null]'
is "$j" '.gpu_nic_distance.matrix' \
	'[["PIX","SYS","SYS","SYS"],["SYS","PIX","SYS","SYS"],["SYS","SYS","PIX","SYS"],["SYS","SYS","SYS","PIX"]]'
is "$j" '.gpu_nic_distance.nics' '["mlx5_0","mlx5_1","mlx5_2","mlx5_3"]'
is "$j" '.gdr' '{"ready":null,"module":null,"dmabuf":null,"kernel":null,"nvidia_open_module":null}'
# PCI devices only: NVLink unknown (null), not "no NVLink".
is "$j" '.parallelism | [.nvlink_domain, .network]' '[null,"infiniband"]'
is "$j" '[.gpus_known, .netdevs_known]' '[true,true]'

"$LLMLAUNCH" probe --topology "$jrc" >"$tmp/jrc.txt"
for line in '  GPU0   PIX      SYS      SYS      SYS      mlx5_0' \
	    '  GPU3   SYS      SYS      SYS      PIX      mlx5_3' \
	    '         mlx5_0   mlx5_1   mlx5_2   mlx5_3   nearest' \
	    '  PIX  = at most one PCIe switch between GPU and NIC (best for GPUDirect RDMA)'; do
	grep -qxF -- "$line" "$tmp/jrc.txt" || { echo "FAIL text: no line '$line'"; fail=1; }
done

dgx="$LL_REALDATA/hwloc_xml/hwloc-v2x-nvidiaDGX2.xml"
"$LLMLAUNCH" probe --json --topology "$dgx" >"$tmp/dgx2.json" || { echo "FAIL probe dgx2"; exit 1; }
is "$tmp/dgx2.json" '[(.gpus | length), .nvswitches, .parallelism.nvlink_domain]' '[16,12,16]'
is "$tmp/dgx2.json" '.gpus[0].nvlinks | map(.remote) | unique' '["nvswitch"]'
is "$tmp/dgx2.json" '.gpus[0].nvlinks | map(.bandwidth_mbps) | add' '150000'
is "$tmp/dgx2.json" '.gpus[15] | [.model, .uuid, .busid]' '["Tesla V100-SXM3-32GB-H","GPU-bb4648d3-e72b-4bac-a32f-4c9f3e4eb547","0000:e7:00.0"]'
is "$tmp/dgx2.json" '.rdma_devices' '[]'
# No network OS device in the export: the network is unknown, not "sockets".
is "$tmp/dgx2.json" '[.netdevs_known, .parallelism.network]' '[false,"unknown"]'
is "$tmp/dgx2.json" '.gpu_nic_distance.matrix' '[]'

# Real sysfs trees through --fsroot.
qib="$LL_REALDATA/sysfs_tarballs/40intel64-2g2n4c+pcilocality.tar.bz2"
if [ -f "$qib" ]; then
	mkdir "$tmp/qib" && tar -xjf "$qib" -C "$tmp/qib"
	"$LLMLAUNCH" probe --json --fsroot "$tmp"/qib/* >"$tmp/qib.json" 2>"$tmp/qib.err" ||
		{ echo "FAIL probe qib: $(cat "$tmp/qib.err")"; fail=1; }
	is "$tmp/qib.json" '[.rdma_devices[] | .name, .pci_id, .netdevs]' '["qib0","1077:7322",["ib0"]]'
	is "$tmp/qib.json" '.rdma_devices[0].ports[0] | [.state, .link_layer, .rate_gbps, .netdev]' \
		'["ACTIVE","InfiniBand",40,"ib0"]'
	# A foreign tree says nothing about this host.
	is "$tmp/qib.json" '.host.hostname' 'null'
	is "$tmp/qib.json" '[.interfaces[] | .addresses] | unique' '[null]'
fi
mlx4="$LL_REALDATA/sysfs_tarballs/32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2"
if [ -f "$mlx4" ]; then
	mkdir "$tmp/mlx4" && tar -xjf "$mlx4" -C "$tmp/mlx4"
	"$LLMLAUNCH" probe --json --fsroot "$tmp"/mlx4/* >"$tmp/mlx4.json" 2>"$tmp/mlx4.err" ||
		{ echo "FAIL probe mlx4: $(cat "$tmp/mlx4.err")"; fail=1; }
	is "$tmp/mlx4.json" '.rdma_devices[0].ports[0] | [.state, .link_layer, .rate, .netdev]' \
		'["ACTIVE","InfiniBand","56 Gb/sec (4X FDR)","ib0"]'
	is "$tmp/mlx4.json" '[.interfaces[] | select(.virtual) | .name]' '["br0","eth0.1015","lo","mic0"]'
	is "$tmp/mlx4.json" '.parallelism.network' '"infiniband"'
fi
# No I/O objects at all: GPUs and network unknown, said in the text too.
noio="$LL_REALDATA/hwloc_xml/mpibind-2/cascade-lake-ap-snl-hwloc1.xml"
if [ -f "$noio" ]; then
	"$LLMLAUNCH" probe --json --topology "$noio" >"$tmp/noio.json" || { echo "FAIL probe noio"; fail=1; }
	is "$tmp/noio.json" '[.gpus_known, .netdevs_known, .parallelism.nvlink_domain, .parallelism.network]' \
		'[false,false,null,"unknown"]'
	"$LLMLAUNCH" probe --topology "$noio" | grep -qxF 'GPUs: unknown (the topology has no PCI objects)' ||
		{ echo "FAIL noio text: no 'GPUs: unknown' line"; fail=1; }
fi
[ $fail = 0 ] && echo "ok: all JSON and text checks passed"
exit $fail
