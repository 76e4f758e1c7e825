#!/bin/bash
# AMD GPUs on a live-like tree (tests/fixtures/gen-amd-sysfs.sh): the kernel's KFD
# topology alone (no ROCm installed) gives the GPUs' XGMI links and partitions; the
# fake ROCm SMI library (tests/fake-rsmi) through the same dlopen path as the real
# librocm_smi64 adds names, unique ids and links; ROCm SMI failing is a warning, never
# a failure; and the plan of such a node uses ROCm's variables and the XGMI domain.
set -euo pipefail
for v in LLMLAUNCH LL_FIXTURES LL_FAKE_RSMI LL_FAKE_RSMI_NOINIT; do
	[ -n "${!v:-}" ] || { echo "probe-amd: $v is not set (run through ctest)" >&2; exit 77; }
done
command -v jq >/dev/null || { echo "probe-amd: jq is not installed" >&2; exit 77; }
tmp=$(mktemp -d /tmp/ll-probe-amd.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LLMLAUNCH_ROCM_SMI_LIBRARY FAKE_RSMI_SCENARIO ROCR_VISIBLE_DEVICES HIP_VISIBLE_DEVICES CUDA_VISIBLE_DEVICES
fail() { echo "probe-amd: FAIL: $*" >&2; exit 1; }
is() { local got; got=$(jq -c "$2" "$1"); [ "$got" = "$3" ] || fail "$(basename "$1"): $2 = $got, want $3"; }
gen() { bash "$LL_FIXTURES/gen-amd-sysfs.sh" "$tmp/$1" "$2"; }
probe() { # probe NAME [ENV...]: the JSON facts of tree NAME, stderr kept
	local name=$1; shift
	env "$@" "$LLMLAUNCH" probe --fsroot "$tmp/$name" --json >"$tmp/$name.json" 2>"$tmp/$name.err" ||
		fail "probe $name exited $?: $(cat "$tmp/$name.err")"
}
setting() { jq -c --arg n "$2" '.settings[] | select(.name == $n) | .value' "$1"; }

# --- KFD alone: links from io_links of type 11, MB/s from max_bandwidth.
gen kfd xgmi
probe kfd
j=$tmp/kfd.json
[ ! -s "$tmp/kfd.err" ] || fail "stderr without ROCm SMI: $(cat "$tmp/kfd.err")"
is "$j" '[.gpus[] | [.busid, .vendor, .numa_node]]' \
	'[["0000:83:00.0","amd",0],["0000:86:00.0","amd",0],["0000:c3:00.0","amd",1],["0000:c6:00.0","amd",1]]'
is "$j" '.gpus[0].nvlinks | map([.fabric, .remote_gpu, .bandwidth_mbps])' \
	'[["XGMI",1,200000],["XGMI",2,50000],["XGMI",3,50000]]'
is "$j" '[.gpus[].model] | unique' '[null]'
is "$j" '.parallelism.nvlink_domain' 'null'
"$LLMLAUNCH" explain --fsroot "$tmp/kfd" --json >"$tmp/kfd-plan.json"
e=$tmp/kfd-plan.json
[ "$(setting "$e" LLMLAUNCH_GPU_FABRIC)$(setting "$e" LLMLAUNCH_GPU_DOMAIN)" = '"xgmi""4"' ] || fail "fabric: $(jq -c .settings "$e")"
[ "$(setting "$e" ROCR_VISIBLE_DEVICES)$(setting "$e" CUDA_DEVICE_ORDER)" = 'nullnull' ] || fail "ROCm variables"
is "$e" '[.ranks[] | [.gpu_busid, .numa_node, .cpuset]]' \
	'[["0000:83:00.0",0,"0-1"],["0000:86:00.0",0,"2-3"],["0000:c3:00.0",1,"4-5"],["0000:c6:00.0",1,"6-7"]]'
# The matrix survives the snapshot.
"$LLMLAUNCH" probe --fsroot "$tmp/kfd" --save "$tmp/kfd.xml" >/dev/null
grep -q 'name="XGMIBandwidth"' "$tmp/kfd.xml" || fail "no XGMIBandwidth in the snapshot"
"$LLMLAUNCH" probe --topology "$tmp/kfd.xml" --json >"$tmp/replay.json"
diff <(jq -S 'del(.host.source)' "$j") <(jq -S 'del(.host.source)' "$tmp/replay.json") >&2 || fail "replay differs"

# --- KFD with no XGMI link: "no link" is a fact (PCIe), not unknown.
gen pcie pcie
"$LLMLAUNCH" explain --fsroot "$tmp/pcie" --json >"$tmp/pcie-plan.json"
[ "$(setting "$tmp/pcie-plan.json" LLMLAUNCH_GPU_FABRIC)$(setting "$tmp/pcie-plan.json" LLMLAUNCH_GPU_DOMAIN)" = '"pcie""1"' ] ||
	fail "pcie: $(jq -c .settings "$tmp/pcie-plan.json")"

# --- No KFD (amdgpu not loaded): GPUs from PCI, links unknown.
gen nokfd nokfd
"$LLMLAUNCH" explain --fsroot "$tmp/nokfd" --json >"$tmp/nokfd-plan.json"
[ "$(setting "$tmp/nokfd-plan.json" LLMLAUNCH_GPU_FABRIC)" = null ] || fail "nokfd fabric"
jq -r '.summary' "$tmp/nokfd-plan.json" | grep -qF "XGMI unknown" || fail "nokfd summary: $(jq -r .summary "$tmp/nokfd-plan.json")"

# --- The fake ROCm SMI library (named on purpose, as under --fsroot it must be).
FAKE_RSMI_LOG=$tmp/rsmi.log probe nokfd LLMLAUNCH_ROCM_SMI_LIBRARY="$LL_FAKE_RSMI" FAKE_RSMI_LOG="$tmp/rsmi.log"
j=$tmp/nokfd.json
[ ! -s "$tmp/nokfd.err" ] || fail "stderr with ROCm SMI: $(cat "$tmp/nokfd.err")"
is "$j" '[.gpus[].model] | unique' '["AMD Instinct MI250X"]'
is "$j" '[.gpus[].uuid]' '["6b3c1a0000000000","6b3c1a0000000001","6b3c1a0000000002","6b3c1a0000000003"]'
is "$j" '[.gpus[].nvlinks | length] | unique' '[3]'
[ "$(sort "$tmp/rsmi.log" | uniq -c | awk '{print $1 $2}' | tr '\n' ' ')" = "1init 1shut_down " ] ||
	fail "init and shut-down not balanced: $(cat "$tmp/rsmi.log")"
# Selection by unique id, as ROCR_VISIBLE_DEVICES takes it.
ROCR_VISIBLE_DEVICES=GPU-6b3c1a0000000003 LLMLAUNCH_ROCM_SMI_LIBRARY="$LL_FAKE_RSMI" \
	"$LLMLAUNCH" explain --fsroot "$tmp/nokfd" --json >"$tmp/sel.json"
is "$tmp/sel.json" '[.ranks[] | .gpu_busid]' '["0000:c6:00.0"]'

# --- CPX: partitions are GPUs of their own, from KFD and from ROCm SMI.
gen cpx cpx
probe cpx
is "$tmp/cpx.json" '[.gpus[] | [.busid, .partition]]' \
	'[["0000:83:00.0",1],["0000:83:00.0",2],["0000:c3:00.0",1],["0000:c3:00.0",2]]'
gen cpxrsmi cpx
rm -rf "$tmp/cpxrsmi/sys/class/kfd"
probe cpxrsmi LLMLAUNCH_ROCM_SMI_LIBRARY="$LL_FAKE_RSMI" FAKE_RSMI_SCENARIO=cpx
is "$tmp/cpxrsmi.json" '[.gpus[] | [.busid, .partition, .model, .uuid]]' \
	'[["0000:83:00.0",1,"AMD Instinct MI300X",null],["0000:83:00.0",2,"AMD Instinct MI300X",null],["0000:c3:00.0",1,"AMD Instinct MI300X",null],["0000:c3:00.0",2,"AMD Instinct MI300X",null]]'
"$LLMLAUNCH" explain --fsroot "$tmp/cpx" --json >"$tmp/cpx-plan.json"
[ "$(setting "$tmp/cpx-plan.json" LLMLAUNCH_GPU_DOMAIN)$(setting "$tmp/cpx-plan.json" torchrun.nproc_per_node)" = '"4""4"' ] ||
	fail "cpx plan: $(jq -c .settings "$tmp/cpx-plan.json")"

# --- ROCm SMI present but failing: one warning, exit 0, nothing of it recorded.
probe nokfd LLMLAUNCH_ROCM_SMI_LIBRARY="$LL_FAKE_RSMI" FAKE_RSMI_SCENARIO=init-fails
[ "$(cat "$tmp/nokfd.err")" = "llmlaunch: warning: ROCm SMI library '$LL_FAKE_RSMI' is unusable: rsmi_init failed: RSMI_STATUS_INIT_ERROR: an error occurred during initialization (8); AMD GPU names, ids and XGMI links come from KFD alone" ] ||
	fail "init failure warning: $(cat "$tmp/nokfd.err")"
is "$tmp/nokfd.json" '[.gpus[] | .model, .uuid] | unique' '[null]'
probe nokfd LLMLAUNCH_ROCM_SMI_LIBRARY="$LL_FAKE_RSMI" FAKE_RSMI_SCENARIO=pci-fails
grep -qF "rsmi_dev_pci_id_get failed for GPU 2" "$tmp/nokfd.err" || fail "midway warning: $(cat "$tmp/nokfd.err")"
probe nokfd LLMLAUNCH_ROCM_SMI_LIBRARY="$LL_FAKE_RSMI_NOINIT"
[ "$(cat "$tmp/nokfd.err")" = "llmlaunch: warning: '$LL_FAKE_RSMI_NOINIT' is not a usable ROCm SMI library: it lacks 'rsmi_init'" ] ||
	fail "missing symbol warning: $(cat "$tmp/nokfd.err")"
probe nokfd LLMLAUNCH_ROCM_SMI_LIBRARY=/nonexistent/librocm_smi64.so
grep -q "^llmlaunch: warning: cannot load ROCm SMI library '/nonexistent/librocm_smi64.so': " "$tmp/nokfd.err" ||
	fail "absent library warning: $(cat "$tmp/nokfd.err")"
echo "probe-amd: ok"
