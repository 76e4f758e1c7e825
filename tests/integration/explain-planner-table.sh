#!/bin/bash
# The table of docs/planner.md ("Machines: expected and planned"): for every machine in
# it, the key values llmlaunch plans (llmlaunch env --format json and explain --json)
# must equal both the "expected" column (written from vendor and NCCL documents before
# the planner was made to agree) and the "llmlaunch" column. Real exports come from
# $LL_REALDATA and skip row by row when absent; the project's fixtures and the fake
# /sys trees it builds always run.
#   explain-planner-table.sh --print ROW...   print the rendered values of rows
set -euo pipefail
for v in LLMLAUNCH LL_SRCDIR LL_FIXTURES LL_FAKE_NVML LL_FAKE_RSMI; do
	[ -n "${!v:-}" ] || { echo "explain-planner-table: $v is not set (run through ctest)" >&2; exit 77; }
done
tmp=$(mktemp -d /tmp/ll-planner-table.XXXXXX)
unpack=$tmp
[ -w /dev/shm ] && unpack=$(mktemp -d /dev/shm/ll-planner-table.XXXXXX)
trap 'rm -rf "$tmp" "$unpack"' EXIT
# A clean slate: nothing from the caller's environment or home reaches the plans.
unset CUDA_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES HIP_VISIBLE_DEVICES NCCL_CONF_FILE NCCL_IB_HCA \
	NCCL_SOCKET_IFNAME NCCL_IB_DISABLE NCCL_NET_PLUGIN NCCL_NET SLURM_JOB_ID SLURM_STEP_GPUS \
	SLURM_JOB_GPUS LLMLAUNCH_NVML_LIBRARY LLMLAUNCH_ROCM_SMI_LIBRARY FAKE_NVML_SCENARIO FAKE_RSMI_SCENARIO
export HOME=$tmp/home
mkdir -p "$HOME"

. "$LL_FIXTURES/sysfs/fake-sysfs.sh"

# input NAME: the arguments that make llmlaunch read machine NAME (a realdata: or
# fixture: path, or fsroot:SCENARIO, built here); exit 77 from the row when absent.
input_args() {
	local spec=$1 dir
	case $spec in
	realdata:*)
		[ -r "${LL_REALDATA:-}/hwloc_xml/${spec#realdata:}" ] || return 77
		echo "--topology ${LL_REALDATA}/hwloc_xml/${spec#realdata:}" ;;
	fixture:*)
		echo "--topology $LL_FIXTURES/${spec#fixture:}" ;;
	tarball:*)
		# hwloc's gathered /sys trees; about 9000 small files, so in tmpfs when there is one.
		local name=${spec#tarball:}
		[ -r "${LL_REALDATA:-}/sysfs_tarballs/$name.tar.bz2" ] || return 77
		dir=$unpack/$name
		if [ ! -d "$dir" ]; then
			mkdir -p "$dir"
			tar -xjf "$LL_REALDATA/sysfs_tarballs/$name.tar.bz2" -C "$dir"
		fi
		echo "--fsroot $(echo "$dir"/*)" ;;
	fsroot:*)
		dir=$tmp/${spec#fsroot:}
		if [ ! -d "$dir" ]; then
			case ${spec#fsroot:} in
			gpu_ib) scenario_gpu_ib "$dir" ;;
			roce) scenario_roce "$dir" ;;
			efa) scenario_efa "$dir" ;;
			hns) scenario_hns "$dir" ;;
			imbue_h100) scenario_imbue_h100 "$dir" ;;
			efa+plugin) scenario_efa "$dir"; fake_ld_conf "$dir" efa /opt/amazon/ofi-nccl/lib ;;
			dgx+nvml) bash "$LL_FIXTURES/gen-dgx-sysfs.sh" "$dir" >/dev/null ;;
			amd-kfd) bash "$LL_FIXTURES/gen-amd-sysfs.sh" "$dir" xgmi >/dev/null ;;
			amd-nokfd) bash "$LL_FIXTURES/gen-amd-sysfs.sh" "$dir" nokfd >/dev/null ;;
			display-novendor)
				# A VGA function whose vendor id reads 0000, as in hwloc's trimmed
				# nvidiagpunumanodes tarball: any vendor's GPU, so GPUs unknown.
				fake_machine "$dir" 1
				fake_pci "$dir" 0000:00:05.0 0x0000 0x0000 0x030000
				fake_net "$dir" lo virtual 772 unknown 0x9 65536 "" "" 00:00:00:00:00:00 ;;
			*) echo "unknown scenario $spec" >&2; return 1 ;;
			esac
		fi
		echo "--fsroot $dir" ;;
	*) echo "unknown input $spec" >&2; return 1 ;;
	esac
}

# render SPEC: the key values of the plan, as the table writes them.
render() {
	local spec=$1 args envs=()
	args=$(input_args "$spec") || return $?
	case $spec in
	fsroot:dgx+nvml) envs=(LLMLAUNCH_NVML_LIBRARY="$LL_FAKE_NVML" FAKE_NVML_SCENARIO=dgx8) ;;
	tarball:*)
		# The environment hwloc's own test gives the tree (its .test file, "env:" lines).
		local t=$LL_REALDATA/sysfs_tarballs/${spec#tarball:}.test line
		while IFS= read -r line; do
			line=${line#env:}
			line=${line#"${line%%[! ]*}"}
			case $line in
			HWLOC_*=*) v=${line#*=}; v=${v#\"}; v=${v%\"}; envs+=("${line%%=*}=$v") ;;
			esac
		done < <(grep '^env:' "$t" 2>/dev/null || true) ;;
	esac
	# shellcheck disable=SC2086
	env "${envs[@]}" "$LLMLAUNCH" explain --json --no-cache $args >"$tmp/plan.json" 2>"$tmp/plan.err" || {
		echo "explain $spec failed: $(cat "$tmp/plan.err")" >&2; return 1; }
	python3 - "$tmp/plan.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
s = {x["name"]: x["value"] for x in d["settings"]}
names = {x["name"] for x in d["settings"]}
def v(name):
    x = s.get(name)
    return "unset" if x is None else x
n = s.get("LLMLAUNCH_GPUS_PER_NODE")
if n is None:
    gpus = "unknown"
elif n == "0":
    gpus = "0"
else:
    gpus = n + (" AMD" if "ROCR_VISIBLE_DEVICES" in names else " NVIDIA")
out = ["gpus " + gpus]
if n not in (None, "0"):
    fab, dom = s.get("LLMLAUNCH_GPU_FABRIC"), s.get("LLMLAUNCH_GPU_DOMAIN")
    out.append("fabric " + ("unknown" if fab is None else f"{fab} {dom}"))
    out.append("numa " + ",".join(str(r["numa_node"]) for r in d["ranks"]))
out.append("HCA " + v("NCCL_IB_HCA"))
out.append("IB_DISABLE " + v("NCCL_IB_DISABLE"))
out.append("IF " + v("NCCL_SOCKET_IFNAME"))
out.append("NET " + v("LLMLAUNCH_NET"))
for extra in ("NCCL_IB_GID_INDEX", "NCCL_NET_PLUGIN", "FI_PROVIDER"):
    if s.get(extra) is not None:
        out.append(extra.replace("NCCL_", "") + " " + s[extra])
print("; ".join(out))
EOF
}

if [ "${1:-}" = --print ]; then
	shift
	for spec in "$@"; do printf '%s\t' "$spec"; render "$spec" || echo "(skipped: $?)"; done
	exit 0
fi

# The table: rows between the markers; columns | machine | input | expected | source | llmlaunch |.
doc=$LL_SRCDIR/docs/planner.md
rows=$(sed -n '/<!-- planner-table:begin -->/,/<!-- planner-table:end -->/p' "$doc" | grep '^| .*`' || true)
[ -n "$rows" ] || { echo "explain-planner-table: FAIL: no table rows in $doc" >&2; exit 1; }
fails=0 ran=0 skipped=0
while IFS= read -r row; do
	IFS='|' read -r _ machine spec expected _source shown _ <<<"$row"
	trim() { local x=$1; x=${x#"${x%%[! ]*}"}; x=${x%"${x##*[! ]}"}; x=${x#\`}; x=${x%\`}; printf '%s' "$x"; }
	machine=$(trim "$machine"); spec=$(trim "$spec"); expected=$(trim "$expected"); shown=$(trim "$shown")
	rc=0
	got=$(render "$spec") || rc=$?
	if [ "$rc" = 77 ]; then
		skipped=$((skipped + 1)); echo "skipped (no real data): $machine" >&2; continue
	fi
	[ "$rc" = 0 ] || { echo "FAIL: $machine: render failed" >&2; fails=$((fails + 1)); continue; }
	ran=$((ran + 1))
	if [ "$got" != "$expected" ] || [ "$got" != "$shown" ]; then
		echo "FAIL: $machine ($spec)" >&2
		echo "  expected: $expected" >&2
		echo "  table:    $shown" >&2
		echo "  planned:  $got" >&2
		fails=$((fails + 1))
	fi
done <<<"$rows"
echo "explain-planner-table: $ran rows checked, $skipped skipped, $fails failed" >&2
[ "$fails" = 0 ] || exit 1
[ "$ran" -gt 0 ] || exit 77
