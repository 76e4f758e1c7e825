#!/bin/bash
# `llmlaunch explain` on a fake sysfs node (RoCE mlx5_0, DOWN mlx5_1, ACTIVE mlx5_10):
# values with source and reason in text and JSON, the lint of an inherited
# environment (the mlx5_1 prefix trap, IB disabled while IB is up, debug leftovers),
# and the real jrc0323 topology when the real data is present.
set -uo pipefail
: "${LLMLAUNCH:?}" "${LL_FIXTURES:?}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
. "$LL_FIXTURES/sysfs/fake-sysfs.sh"
scenario_roce "$T/root"

# The locked-memory limit is this process's and the workers' (explain-plumbing.sh
# tests it): lifted where the shell may, and its lints not counted here.
run() { (ulimit -l unlimited 2>/dev/null; env -i PATH="$PATH" ASAN_OPTIONS="${ASAN_OPTIONS:-}" "$@"); }

# Clean environment: the probe decides.
run "$LLMLAUNCH" explain --fsroot "$T/root" --json >"$T/clean.json" 2>"$T/clean.err" || bad "explain failed: $(cat "$T/clean.err")"
python3 - "$T/clean.json" <<'PY' || bad "clean plan"
import json, sys
d = json.load(open(sys.argv[1]))
s = {x["name"]: x for x in d["settings"]}
def eq(name, value, source):
    got = s[name]
    assert got["value"] == value and got["source"] == source, (name, got)
# One ACTIVE IB port and one ACTIVE RoCE port: a tie goes to InfiniBand.
eq("NCCL_IB_HCA", "=mlx5_10:1", "probe")
assert "mlx5_1:1 (DOWN)" in s["NCCL_IB_HCA"]["reason"], s["NCCL_IB_HCA"]
assert "mlx5_0:1 (minority link layer Ethernet: 1 InfiniBand port chosen)" in s["NCCL_IB_HCA"]["reason"], s["NCCL_IB_HCA"]
eq("NCCL_IB_DISABLE", None, "probe")
eq("LLMLAUNCH_NET", "ib", "probe")
eq("LLMLAUNCH_NET_GBPS", "200", "probe")
eq("torchrun.nproc_per_node", "1", "default")
assert s["torchrun.nproc_per_node"]["exported"] is False
assert d["bind"] == "numa" and len(d["ranks"]) == 1, d["ranks"]
assert d["ranks"][0]["cpuset"] == "0-1" and d["ranks"][0]["cores"] == 2, d["ranks"]
assert [l for l in d["lint"] if l["variable"] != "RLIMIT_MEMLOCK"] == [], d["lint"]
assert "network between nodes: InfiniBand (200 Gb/s per node)" in d["summary"], d["summary"]
PY

# An inherited environment with classic mistakes.
run NCCL_IB_HCA=mlx5_1 NCCL_IB_DISABLE=1 NCCL_DEBUG=TRACE NCCL_DEBUG_FILE=/tmp/nccl.log \
	"$LLMLAUNCH" explain --fsroot "$T/root" --json --set NCCL_IB_TIMEOUT=22 >"$T/env.json" 2>"$T/env.err" ||
	bad "explain failed: $(cat "$T/env.err")"
python3 - "$T/env.json" <<'PY' || bad "linted plan"
import json, sys
d = json.load(open(sys.argv[1]))
s = {x["name"]: x for x in d["settings"]}
assert s["NCCL_IB_HCA"]["value"] == "mlx5_1" and s["NCCL_IB_HCA"]["source"] == "environment", s["NCCL_IB_HCA"]
assert "probe chose '=mlx5_10:1'" in s["NCCL_IB_HCA"]["reason"], s["NCCL_IB_HCA"]
assert s["NCCL_IB_TIMEOUT"] == {"name": "NCCL_IB_TIMEOUT", "value": "22", "source": "cli", "origin": "--set",
    "reason": "set on the command line (--set)", "exported": True}, s["NCCL_IB_TIMEOUT"]
d["lint"] = [l for l in d["lint"] if l["variable"] != "RLIMIT_MEMLOCK"]
lint = {(l["level"], l["variable"], l["message"]) for l in d["lint"]}
want = [
    ("warning", "NCCL_IB_HCA", "'mlx5_1' also selects mlx5_10: without '=' NCCL reads names as prefixes; write '=mlx5_1'"),
    ("warning", "NCCL_IB_DISABLE", "InfiniBand is disabled while 1 InfiniBand port is ACTIVE: NCCL falls back to TCP sockets"),
    ("warning", "NCCL_DEBUG", "TRACE is for debugging NCCL itself: very verbose and slow; use WARN or INFO"),
    ("warning", "NCCL_DEBUG_FILE", "'/tmp/nccl.log' lacks %h and %p: NCCL truncates the file, so ranks overwrite each other's log"),
]
for w in want:
    assert w in lint, (w, lint)
assert len(d["lint"]) == len(want), d["lint"]
PY

# The same in text.
run NCCL_IB_HCA=mlx5_1 "$LLMLAUNCH" explain --fsroot "$T/root" >"$T/text" 2>&1 || bad "text explain failed"
grep -qx "  NCCL_IB_HCA=mlx5_1  \[environment\]" "$T/text" || bad "text: NCCL_IB_HCA line: $(cat "$T/text")"
grep -q "^  warning: NCCL_IB_HCA: 'mlx5_1' also selects mlx5_10" "$T/text" || bad "text: lint line"
grep -q "^Rank placement (bind numa):" "$T/text" || bad "text: placement table"

# env prints the lint as warnings on stderr, the variables on stdout.
run NCCL_IB_HCA=mlx5_1 "$LLMLAUNCH" env --fsroot "$T/root" >"$T/env.out" 2>"$T/env.stderr" || bad "env failed"
grep -qx "export NCCL_IB_HCA='mlx5_1'" "$T/env.out" || bad "env: inherited value: $(cat "$T/env.out")"
grep -q "^llmlaunch: warning: NCCL_IB_HCA: 'mlx5_1' also selects mlx5_10" "$T/env.stderr" || bad "env: warning: $(cat "$T/env.stderr")"

# Options.
run "$LLMLAUNCH" explain --fsroot "$T/root" --bind core --nproc-per-node 2 --json >"$T/opts.json" || bad "explain with options"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["bind"] == "core" and [r["cpuset"] for r in d["ranks"]] == ["0", "1"], d
' "$T/opts.json" || bad "--bind core --nproc-per-node 2"
run "$LLMLAUNCH" explain --bind sideways >/dev/null 2>&1; [ $? = 2 ] || bad "bad --bind must exit 2"
"$LLMLAUNCH" explain --help | grep -q "^usage: llmlaunch explain" || bad "explain --help"

# Real topology, when present.
X=${LL_REALDATA:-}/hwloc_xml/psmgmt/topo.jrc0323.xml
if [ -r "$X" ]; then
	run "$LLMLAUNCH" env --topology "$X" --format json >"$T/jrc.json" || bad "env on jrc0323"
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1", d
assert d["NCCL_SOCKET_IFNAME"] == "=ib0" and d["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID", d
assert "NCCL_NET_GDR_LEVEL" not in d and d["OMP_NUM_THREADS"] == "16", d
' "$T/jrc.json" || bad "jrc0323 env"
else
	echo "real data absent: jrc0323 check skipped" >&2
fi
exit $fail
