#!/usr/bin/env bash
# Benchmark of stage 3 (agreement), issue 4:
#   1. the pure decision (launcher/agree/agree.c) on 10,000 synthetic nodes   target < 50 ms
#   2. the agreement step alone (ll_agree under srun --mpi=pmix) over 4 and 16 emulated
#      Slurm nodes, against a bare PMIx exchange of the same size (bench/pmix-fence.c:
#      init, put, commit, one fence collecting data, finalize)          target <= 1.5x
# Times in 2 are measured inside each process (PMIx_Init to PMIx_Finalize for the bare
# program, the whole ll_agree() call for llmlaunch); a run counts its slowest node, and
# the median of REPEAT runs is reported, with srun's wall time beside it.
#
# usage: bench/agree.sh [BUILD_DIR]     (default build-agree-bench, configured Release if new)
# env:   REPEAT (default 7), NODES (default "4 16"); needs root, slurmd/slurmctld/munge.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-agree-bench}
repeat=${REPEAT:-7}
node_counts=${NODES:-4 16}

if [ ! -f "$build/CMakeCache.txt" ]; then
	cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON >/dev/null
else
	cmake -S "$src" -B "$build" -DBUILD_TESTING=ON >/dev/null # the programs are test targets
fi
cmake --build "$build" -j 2 --target ll-agree-tool pmix-fence agree-logic >/dev/null
tool=$build/tests/ll-agree-tool
fence=$build/tests/pmix-fence
logic=$build/tests/agree-logic

echo "== pure agreement logic (launcher/agree/agree.c)"
"$logic" 10000 21 >"${TMPDIR:-/tmp}/ll-agree-logic.$$"
python3 - "${TMPDIR:-/tmp}/ll-agree-logic.$$" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
verdict = "ok" if r["median_ms"] < 50 else "MISSED"
print(f"10,000 nodes: median {r['median_ms']:.2f} ms, worst {r['max_ms']:.2f} ms, "
      f"{r['fetched']} summaries fetched (target < 50 ms: {verdict})")
PY
rm -f "${TMPDIR:-/tmp}/ll-agree-logic.$$"

. "$src/tests/lib/slurm-cluster.sh"
why=$(slurm_cluster_missing)
if [ -n "$why" ]; then
	echo "== agreement over Slurm skipped: $why"
	exit 0
fi
trap slurm_cluster_stop EXIT
tmp=$(mktemp -d /tmp/ll-agree-bench.XXXXXX)
trap 'slurm_cluster_stop; rm -rf "$tmp"' EXIT

# run_one N LABEL CMD...: one srun; appends "slowest-node-seconds wall-seconds" to $tmp/LABEL
run_one() {
	local n=$1 label=$2 t0 t1
	shift 2
	t0=$(date +%s.%N)
	timeout 120 srun -N "$n" --ntasks-per-node=1 --mpi=pmix "$@" >"$tmp/out" 2>"$tmp/err" || {
		cat "$tmp/err" >&2
		return 1
	}
	t1=$(date +%s.%N)
	python3 - "$tmp/out" "$t0" "$t1" >>"$tmp/$label" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print(max(l["seconds"] for l in lines), float(sys.argv[3]) - float(sys.argv[2]), len(lines))
PY
}

for n in $node_counts; do
	SLURM_CLUSTER_DIR=
	slurm_cluster_start "$n" || { slurm_cluster_dump_logs; exit 1; }
	rm -f "$tmp/fence-$n" "$tmp/agree-$n"
	run_one "$n" "warm" "$fence" # first step pays for cold caches
	for _ in $(seq 1 "$repeat"); do
		run_one "$n" "fence-$n" "$fence"
		run_one "$n" "agree-$n" "$tool" --agree-timeout 60
	done
	slurm_cluster_stop
	python3 - "$n" "$tmp/fence-$n" "$tmp/agree-$n" <<'PY'
import statistics, sys
n = int(sys.argv[1])
def load(p):
    rows = [list(map(float, l.split())) for l in open(p)]
    assert all(int(r[2]) == n for r in rows), f"a run lost nodes: {rows}"
    return statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
f, fw = load(sys.argv[2])
a, aw = load(sys.argv[3])
ratio = a / f
print(f"== {n} nodes: bare PMIx fence {f*1e3:.1f} ms (srun {fw:.2f} s), "
      f"llmlaunch agreement {a*1e3:.1f} ms (srun {aw:.2f} s): ratio {ratio:.2f}x "
      f"(target <= 1.5x: {'ok' if ratio <= 1.5 else 'MISSED'})")
PY
done
