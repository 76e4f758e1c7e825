#!/bin/bash
# The planner knows the NCCL it plans for (probe/nccl-lib.c, launcher/plan/plan-nccl.c):
# fake libnccl files with known versions (tests/fixtures/sysfs/fake-sysfs.sh, fake_nccl,
# fake_nccl_wheel) below a RoCE tree, one per version rule: before 2.21.5 the GID index
# is set, from 2.21.5 NCCL picks it; NCCL_IB_FIFO_TC before 2.22.3 is linted; an
# environment plugin with NCCL 2.28.3 is a warning; NCCL linked into libtorch_cuda.so is
# found; no NCCL keeps today's behaviour and says so; LD_LIBRARY_PATH comes first live.
set -euo pipefail
: "${LLMLAUNCH:?}" "${LL_FIXTURES:?}"
command -v jq >/dev/null || { echo "explain-nccl-version: jq is not installed" >&2; exit 77; }
tmp=$(mktemp -d /tmp/ll-nccl-version.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$LL_FIXTURES/sysfs/fake-sysfs.sh"
fail() { echo "explain-nccl-version: FAIL: $*" >&2; exit 1; }
is() { # FILE JQ EXPECTED
	local got
	got=$(jq -c "$2" "$1")
	[ "$got" = "$3" ] || fail "$(basename "$1"): $2 = $got, want $3"
}
setting() { echo "(.settings[] | select(.name == \"$1\") | $2)"; }
reason_has() { # FILE NAME TEXT
	jq -r "$(setting "$2" .reason)" "$1" | grep -qF "$3" || fail "$(basename "$1"): $2's reason lacks '$3': $(jq -r "$(setting "$2" .reason)" "$1")"
}
lint_has() { # FILE VARIABLE LEVEL TEXT
	jq -r ".lint[] | select(.variable == \"$2\" and .level == \"$3\") | .message" "$1" | grep -qF "$4" ||
		fail "$(basename "$1"): no $3 on $2 saying '$4': $(jq -c '.lint' "$1")"
}
unset NCCL_IB_TC NCCL_IB_FIFO_TC NCCL_IB_GID_INDEX NCCL_ENV_PLUGIN LD_LIBRARY_PATH LLMLAUNCH_PYTHON
venv=/opt/venv
site=$venv/lib/python3.11/site-packages
explain() { # ROOT OUT [ARGS...]
	local root=$1 out=$2
	shift 2
	LLMLAUNCH_PYTHON=$venv/bin/python3 "$LLMLAUNCH" explain --fsroot "$root" --json "$@" >"$out"
}

# 2.20.5 from the wheel's METADATA: the GID index is set; FIFO_TC is ignored.
root=$tmp/n2205
scenario_roce_qos "$root" dscp-pfc3
fake_nccl_wheel "$root" "$venv" 2.20.5
printf 'name: gib\nenv:\n  NCCL_IB_FIFO_TC: "84"\n' >"$tmp/fifo.yaml"
explain "$root" "$tmp/2205.json" --profile "$tmp/fifo.yaml"
e=$tmp/2205.json
is "$e" "$(setting nccl_version .value)" '"2.20.5"'
reason_has "$e" nccl_version "$site/nvidia/nccl/lib/libnccl.so.2, found through the nvidia-nccl wheel beside torch"
reason_has "$e" nccl_version "version from wheel metadata"
is "$e" "$(setting NCCL_IB_GID_INDEX .value)" '"3"'
reason_has "$e" NCCL_IB_GID_INDEX "this NCCL predates 2.21.5"
lint_has "$e" NCCL_IB_FIFO_TC warning "NCCL_IB_FIFO_TC=84 (profile $tmp/fifo.yaml:3) means nothing to NCCL 2.20.5"

# 2.21.5 from the file name (a system package's libnccl.so.2 -> libnccl.so.2.21.5):
# NCCL picks the GID itself.
root=$tmp/n2215
scenario_roce_qos "$root" dscp-pfc3
fake_nccl "$root" /usr/lib/libnccl.so.2.21.5 -
ln -s libnccl.so.2.21.5 "$root/usr/lib/libnccl.so.2"
explain "$root" "$tmp/2215.json"
e=$tmp/2215.json
is "$e" "[$(setting nccl_version .value), $(setting NCCL_IB_GID_INDEX .value)]" '["2.21.5",null]'
reason_has "$e" nccl_version "/usr/lib/libnccl.so.2, found through the dynamic linker's system directories; version from file name"
reason_has "$e" NCCL_IB_GID_INDEX "NCCL 2.21.5 picks the RoCE v2 GID with an IPv4 address on each port itself"
reason_has "$e" NCCL_IB_FIFO_TC "NCCL 2.21.5 has no NCCL_IB_FIFO_TC"
# Its FIFO_TC lint: 2.21.5 < 2.22.3.
explain "$root" "$tmp/2215f.json" --profile "$tmp/fifo.yaml"
lint_has "$tmp/2215f.json" NCCL_IB_FIFO_TC warning "means nothing to NCCL 2.21.5"

# 2.22.3 from the version string, in torch's own lib/: FIFO_TC exists, no lint.
root=$tmp/n2223
scenario_roce_qos "$root" dscp-pfc3
mkdir -p "$root$venv/bin" && : >"$root$venv/bin/python3"
fake_nccl "$root" "$site/torch/lib/libnccl.so.2" 2.22.3
explain "$root" "$tmp/2223.json" --profile "$tmp/fifo.yaml"
e=$tmp/2223.json
is "$e" "$(setting nccl_version .value)" '"2.22.3"'
reason_has "$e" nccl_version "torch's own lib/ directory; version from the library's version string"
if jq -r '.lint[].variable' "$e" | grep -qx NCCL_IB_FIFO_TC; then fail "2.22.3: FIFO_TC linted"; fi
is "$e" "$(setting NCCL_IB_FIFO_TC .value)" '"84"'

# 2.28.3 with an environment plugin on the library path: a warning.
root=$tmp/n2283
scenario_roce_qos "$root" dscp-pfc3
fake_nccl_wheel "$root" "$venv" 2.28.3
fake_nccl "$root" /usr/lib/libnccl-env-site.so -
explain "$root" "$tmp/2283.json"
e=$tmp/2283.json
reason_has "$e" nccl_version "NCCL plugins on its path: env /usr/lib/libnccl-env-site.so"
lint_has "$e" NCCL_ENV_PLUGIN warning "NCCL 2.28.3 loads the environment plugin /usr/lib/libnccl-env-site.so, which can override every NCCL variable llmlaunch exports"
# The same plugin with 2.22.3: no environment plugins in that NCCL, nothing said.
rm -rf "${root:?}$site/nvidia_nccl_cu12-2.28.3.dist-info" "$root$site/nvidia"
fake_nccl "$root" "$site/nvidia/nccl/lib/libnccl.so.2" 2.22.3
explain "$root" "$tmp/2223env.json"
if jq -r '.lint[].variable' "$tmp/2223env.json" | grep -qx NCCL_ENV_PLUGIN; then fail "2.22.3: env plugin linted"; fi

# NCCL linked into libtorch_cuda.so.
root=$tmp/static
scenario_roce_qos "$root" dscp-pfc3
mkdir -p "$root$venv/bin" && : >"$root$venv/bin/python3"
fake_nccl "$root" "$site/torch/lib/libtorch_cuda.so" 2.18.1
explain "$root" "$tmp/static.json"
is "$tmp/static.json" "$(setting nccl_version .value)" '"2.18.1"'
reason_has "$tmp/static.json" nccl_version "linked into libtorch_cuda.so"

# No NCCL anywhere: today's behaviour, said as such.
root=$tmp/none
scenario_roce_qos "$root" dscp-pfc3
explain "$root" "$tmp/none.json"
e=$tmp/none.json
is "$e" "[$(setting nccl_version .value), $(setting NCCL_IB_GID_INDEX .value)]" '[null,"3"]'
reason_has "$e" nccl_version "version rules as for any NCCL"
reason_has "$e" NCCL_IB_GID_INDEX "NCCL version unknown: set for NCCL older than 2.21.5 too"
reason_has "$e" NCCL_IB_FIFO_TC "NCCL version unknown"

# A snapshot holds no libraries: not searched.
"$LLMLAUNCH" probe --fsroot "$tmp/n2215" --save "$tmp/snap.xml" >/dev/null
"$LLMLAUNCH" explain --topology "$tmp/snap.xml" --json >"$tmp/snap.json"
reason_has "$tmp/snap.json" nccl_version "not searched"

# Live: LD_LIBRARY_PATH comes before everything else.
fake_nccl "$tmp" lib/libnccl.so.2 2.19.3
LD_LIBRARY_PATH=$tmp/lib "$LLMLAUNCH" explain --json >"$tmp/live.json"
is "$tmp/live.json" "$(setting nccl_version .value)" '"2.19.3"'
reason_has "$tmp/live.json" nccl_version "$tmp/lib/libnccl.so.2, found through LD_LIBRARY_PATH"
echo "explain-nccl-version: ok"
