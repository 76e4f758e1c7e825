#!/bin/bash
# `llmlaunch probe` with the fake NVML (tests/fake-nvml) on a fake DGX H100 sysfs tree:
# names, UUIDs, NVLinks to 4 NVSwitches, an inactive link, the snapshot round trip of
# the NVLinkBandwidth matrix, and NVML failing or absent (a warning, never a failure).
set -euo pipefail

for v in LLMLAUNCH LL_FIXTURES LL_FAKE_NVML LL_FAKE_NVML_NOINIT; do
	if [ -z "${!v:-}" ]; then
		echo "nvml-probe: $v is not set (run through ctest)" >&2
		exit 77
	fi
done
command -v jq >/dev/null || { echo "nvml-probe: jq is not installed" >&2; exit 77; }

tmp=$(mktemp -d /tmp/ll-nvml-probe.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
bash "$LL_FIXTURES/gen-dgx-sysfs.sh" "$root"
unset LLMLAUNCH_NVML_LIBRARY FAKE_NVML_SCENARIO

fail() { echo "nvml-probe: FAIL: $*" >&2; exit 1; }

# expect_json FILE JQ-FILTER EXPECTED
expect_json() {
	local got
	got=$(jq -c "$2" "$1")
	[ "$got" = "$3" ] || fail "$1: $2 is $got, expected $3"
}

probe() { # probe SCENARIO LIBRARY OUT [extra args...]
	local scenario=$1 lib=$2 out=$3
	shift 3
	FAKE_NVML_SCENARIO=$scenario LLMLAUNCH_NVML_LIBRARY=$lib \
		"$LLMLAUNCH" probe --fsroot "$root" --json "$@" >"$out.json" 2>"$out.err" ||
		fail "probe ($scenario) exited $?: $(cat "$out.err")"
}

# --- 8 GPUs, 18 NVLinks each to 4 NVSwitches (5/4/4/5 links x 25000 MB/s).
probe dgx8 "$LL_FAKE_NVML" "$tmp/dgx8" --save "$tmp/dgx8.xml"
[ ! -s "$tmp/dgx8.err" ] || fail "unexpected stderr: $(cat "$tmp/dgx8.err")"
expect_json "$tmp/dgx8.json" '.gpus | length' 8
expect_json "$tmp/dgx8.json" '[.gpus[].model] | unique' '["NVIDIA H100 80GB HBM3"]'
expect_json "$tmp/dgx8.json" '.gpus[5].uuid' '"GPU-fa4e0000-0000-4000-8000-000000000005"'
expect_json "$tmp/dgx8.json" '[.gpus[].nvlinks_active] | unique' '[18]'
expect_json "$tmp/dgx8.json" '[.gpus[].nvlinks_inactive] | unique' '[0]'
expect_json "$tmp/dgx8.json" '[.gpus[].nvlinks[].remote] | unique' '["nvswitch"]'
expect_json "$tmp/dgx8.json" '.gpus[0].nvlinks | map([.remote_busid, .bandwidth_mbps])' \
	'[["0000:05:00.0",125000],["0000:06:00.0",100000],["0000:07:00.0",100000],["0000:08:00.0",125000]]'
expect_json "$tmp/dgx8.json" '.nvswitches' 4
expect_json "$tmp/dgx8.json" '.parallelism.nvlink_domain' 8

# The snapshot carries the matrix under hwloc's NVML backend's name (plain distances2:
# all ends are PCI devices here, where hwloc's own would use nvmlN OS devices).
grep -Eq '<distances2(hetero)? [^>]*nbobjs="12"[^>]* name="NVLinkBandwidth"' "$tmp/dgx8.xml" ||
	fail "no 12-object NVLinkBandwidth matrix in the saved snapshot"
[ "$(grep -c 'subtype="NVSwitch"' "$tmp/dgx8.xml")" = 4 ] || fail "NVSwitches not marked in the snapshot"

# --- Replay: no NVML is consulted, the facts are the same.
"$LLMLAUNCH" probe --topology "$tmp/dgx8.xml" --json >"$tmp/replay.json" 2>"$tmp/replay.err" ||
	fail "replay exited $?: $(cat "$tmp/replay.err")"
[ ! -s "$tmp/replay.err" ] || fail "unexpected stderr on replay: $(cat "$tmp/replay.err")"
diff <(jq -S 'del(.host.source)' "$tmp/dgx8.json") <(jq -S 'del(.host.source)' "$tmp/replay.json") >&2 ||
	fail "replayed facts differ from the live ones"

# --- One GPU with a link down: counted, and its bandwidth to that switch is one link less.
probe inactive-link "$LL_FAKE_NVML" "$tmp/inactive"
expect_json "$tmp/inactive.json" '[.gpus[].nvlinks_active]' '[18,18,18,17,18,18,18,18]'
expect_json "$tmp/inactive.json" '[.gpus[].nvlinks_inactive]' '[0,0,0,1,0,0,0,0]'
expect_json "$tmp/inactive.json" '.gpus[3].nvlinks | map(.bandwidth_mbps)' '[125000,100000,100000,100000]'
expect_json "$tmp/inactive.json" '.parallelism.nvlink_domain' 8

# --- PCIe boards: NVML answers, no link exists: "no NVLink" is a fact (domain 1).
probe no-nvlink "$LL_FAKE_NVML" "$tmp/nolink"
expect_json "$tmp/nolink.json" '[.gpus[].nvlinks_active] | unique' '[0]'
expect_json "$tmp/nolink.json" '.parallelism.nvlink_domain' 1
# --- Links up but of a version without a bandwidth: the peers, so the domain, are unknown.
probe unknown-version "$LL_FAKE_NVML" "$tmp/unkver"
expect_json "$tmp/unkver.json" '[.gpus[].nvlinks_active] | unique' '[18]'
expect_json "$tmp/unkver.json" '.parallelism.nvlink_domain' null

# --- NVML present but failing: exit 0, one warning line, no NVML facts at all.
nvml_unknown() { # the facts only NVML gives are all null
	expect_json "$1" '[.gpus[] | .uuid, .nvlinks_active, .nvlinks_inactive] | unique' '[null]'
	expect_json "$1" '[.gpus[].nvlinks | length] | unique' '[0]'
	expect_json "$1" '.gpus | length' 8
	# Without NVML's answer NVLink is unknown, never "no NVLink".
	expect_json "$1" '.parallelism.nvlink_domain' null
}
probe init-fails "$LL_FAKE_NVML" "$tmp/initfail"
nvml_unknown "$tmp/initfail.json"
[ "$(cat "$tmp/initfail.err")" = "llmlaunch: warning: NVML library '$LL_FAKE_NVML' is unusable: nvmlInit_v2 failed: Driver Not Loaded (9); GPU names, UUIDs and NVLink are unknown" ] ||
	fail "init failure warning: $(cat "$tmp/initfail.err")"

probe handle-fails "$LL_FAKE_NVML" "$tmp/midway"
nvml_unknown "$tmp/midway.json"
grep -q "nvmlDeviceGetHandleByIndex_v2 failed for GPU 5" "$tmp/midway.err" || fail "midway warning: $(cat "$tmp/midway.err")"

probe dgx8 "$LL_FAKE_NVML_NOINIT" "$tmp/nosym"
nvml_unknown "$tmp/nosym.json"
[ "$(cat "$tmp/nosym.err")" = "llmlaunch: warning: '$LL_FAKE_NVML_NOINIT' is not a usable NVML library: it lacks 'nvmlInit_v2'" ] ||
	fail "missing symbol warning: $(cat "$tmp/nosym.err")"

# --- NVML absent where it was asked for: a warning; not asked for under --fsroot: silence.
probe dgx8 /nonexistent/libnvidia-ml.so.1 "$tmp/absent"
nvml_unknown "$tmp/absent.json"
grep -q "^llmlaunch: warning: cannot load NVML library '/nonexistent/libnvidia-ml.so.1': " "$tmp/absent.err" ||
	fail "absent library warning: $(cat "$tmp/absent.err")"
[ "$(wc -l <"$tmp/absent.err")" = 1 ] || fail "more than one line on stderr: $(cat "$tmp/absent.err")"

"$LLMLAUNCH" probe --fsroot "$root" --json >"$tmp/none.json" 2>"$tmp/none.err" || fail "probe without NVML exited $?"
[ ! -s "$tmp/none.err" ] || fail "unexpected stderr without NVML: $(cat "$tmp/none.err")"
nvml_unknown "$tmp/none.json"

# --- GPU fabric (multi-node NVLink) and IMEX channels: shown where NVML and /dev tell,
#     absent (unknown) otherwise; the snapshot carries them.
expect_json "$tmp/dgx8.json" '[.gpus[].nvlink_fabric] | unique' '[null]'
expect_json "$tmp/dgx8.json" '.imex_channels' 'null'
mkdir -p "$root/dev/nvidia-caps-imex-channels"
: >"$root/dev/nvidia-caps-imex-channels/channel0"
FAKE_NVML_FABRIC_CLIQUE=3 FAKE_NVML_FABRIC_GPU=7 FAKE_NVML_FABRIC_STATE=1 \
	probe dgx8 "$LL_FAKE_NVML" "$tmp/fabric" --save "$tmp/fabric.xml"
expect_json "$tmp/fabric.json" '.gpus[0].nvlink_fabric' \
	'{"state":"completed","status":0,"cluster_uuid":"c1000000-0000-0000-0000-000000000001","clique_id":3,"health_mask":2}'
expect_json "$tmp/fabric.json" '.gpus[7].nvlink_fabric' \
	'{"state":"not-started","status":null,"cluster_uuid":null,"clique_id":null,"health_mask":null}'
expect_json "$tmp/fabric.json" '[.imex_channels, .imex_access]' '[1,true]'
"$LLMLAUNCH" probe --topology "$tmp/fabric.xml" --json >"$tmp/fabric-replay.json" || fail "fabric snapshot replay failed"
expect_json "$tmp/fabric-replay.json" '[.gpus[0].nvlink_fabric.clique_id, .gpus[7].nvlink_fabric.state, .imex_channels]' \
	'[3,"not-started",1]'
# IMEX's node list, from the config the service reads (addresses as inet_ntop writes
# them, comments skipped), kept by the snapshot; a list that does not exist says so;
# without a config nothing is known.
expect_json "$tmp/fabric.json" '[.imex_nodes_file, .imex_nodes]' '[null,null]'
mkdir -p "$root/etc/nvidia-imex"
printf '# the rack\nSERVER_PORT=50000\nIMEX_NODE_CONFIG_FILE = /etc/nvidia-imex/rack1.cfg  # per rack\n' \
	>"$root/etc/nvidia-imex/config.cfg"
printf '198.51.100.1\n  198.51.100.2 # tray 2\n\n# spare\nfd00:0:0::3\n' >"$root/etc/nvidia-imex/rack1.cfg"
probe dgx8 "$LL_FAKE_NVML" "$tmp/imex" --save "$tmp/imex.xml"
expect_json "$tmp/imex.json" '[.imex_nodes_file, .imex_nodes, .imex_bind]' \
	'["/etc/nvidia-imex/rack1.cfg","198.51.100.1,198.51.100.2,fd00::3",null]'
"$LLMLAUNCH" probe --topology "$tmp/imex.xml" --json >"$tmp/imex-replay.json" || fail "IMEX snapshot replay failed"
expect_json "$tmp/imex-replay.json" '.imex_nodes' '"198.51.100.1,198.51.100.2,fd00::3"'
rm "$root/etc/nvidia-imex/rack1.cfg"
printf 'BIND_INTERFACE_IP=198.51.100.9\n' >"$root/etc/nvidia-imex/config.cfg"
probe dgx8 "$LL_FAKE_NVML" "$tmp/imex-missing"
expect_json "$tmp/imex-missing.json" '[.imex_nodes_file, .imex_nodes, .imex_bind]' \
	'["/etc/nvidia-imex/nodes_config.cfg",null,"198.51.100.9"]'
FAKE_NVML_SCENARIO=dgx8 LLMLAUNCH_NVML_LIBRARY=$LL_FAKE_NVML "$LLMLAUNCH" probe --fsroot "$root" >"$tmp/imex-missing.txt" 2>&1
grep -q '^IMEX node list: /etc/nvidia-imex/nodes_config.cfg (missing), bound to 198.51.100.9$' "$tmp/imex-missing.txt" ||
	fail "probe's text does not show the missing list: $(grep IMEX "$tmp/imex-missing.txt")"
rm -r "$root/dev" "$root/etc/nvidia-imex"

# --- Out of descriptors: the probe fails, never "GPUs known, none" (under `ulimit -n 5`
# hwloc opened no PCI attribute and the probe said gpus_known true, gpus []).
for n in 5 20; do
	rc=0
	(ulimit -n $n; FAKE_NVML_SCENARIO=dgx8 LLMLAUNCH_NVML_LIBRARY=$LL_FAKE_NVML \
		"$LLMLAUNCH" probe --fsroot "$root" --json >"$tmp/fds.json" 2>"$tmp/fds.err") || rc=$?
	[ "$rc" = 1 ] || fail "ulimit -n $n: probe exited $rc: $(head -c 300 "$tmp/fds.json")"
	[ ! -s "$tmp/fds.json" ] || fail "ulimit -n $n: facts were printed: $(head -c 300 "$tmp/fds.json")"
	grep -qF "fewer than 32 file descriptors are free (ulimit -n $n)" "$tmp/fds.err" ||
		fail "ulimit -n $n: $(cat "$tmp/fds.err")"
done

echo "nvml-probe: ok"
