#!/usr/bin/env bash
# Launch overhead of llmlaunch, in one run:
#   1. whole-process wall time of `llmlaunch --dry-run examples/train.py` (median of
#      many runs; target < 10 ms), warm (the per-boot probe cache hit, the usual case)
#      and cold (--no-cache: a full probe), next to the same from a saved snapshot (no
#      live probe), `llmlaunch probe` alone, warm and cold, and `llmlaunch --version`
#      (the process floor: exec + dynamic linking), so the live probe's share shows;
#   2. with --against BIN (another llmlaunch, e.g. a Release build of the previous
#      commit): --version and the warm dry run of both, runs interleaved, and the
#      ratio this one / BIN (a change must not make start-up slower);
#   3. a full launch of examples/train.py (2 workers) through llmlaunch against bare
#      torchrun with equivalent arguments (target: ratio <= 1.03), runs interleaved;
#      --launch-runs 0 skips it.
#
# usage: bench/launch.sh [--runs N] [--launch-runs M] [--steps S] [--against BIN]
# env:   LLMLAUNCH (default: a Release build in build-launch-release, rebuilt first),
#        LLMLAUNCH_PYTHON (default /usr/bin/python3: Debian's python3-torch)
#
# Both full launches pass --monitor_interval 0.1: torchrun polls its workers every
# 5 s by default, which rounds a few-second job's wall time to 5 s steps and would
# hide any overhead (or invent some) at this scale.
set -euo pipefail

runs=50
launch_runs=5
steps=5
against=
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift 2 ;;
	--launch-runs) launch_runs=$2; shift 2 ;;
	--steps) steps=$2; shift 2 ;;
	--against) against=$2; shift 2 ;;
	-h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench/launch.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done

src=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${LLMLAUNCH:-}" ]; then
	LLMLAUNCH="$src/build-launch-release/llmlaunch"
	# Always (re)build: an old binary would time an old llmlaunch.
	cmake -S "$src" -B "$src/build-launch-release" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
	cmake --build "$src/build-launch-release" -j2 >/dev/null
fi
PY=${LLMLAUNCH_PYTHON:-/usr/bin/python3}
example="$src/examples/train.py"
work=$(mktemp -d "${TMPDIR:-/tmp}/ll-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A probe cache of our own, written by the warm-up run below.
export LLMLAUNCH_CACHE_DIR=$work/cache
unset LLMLAUNCH_CACHE_DEBUG

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# wall_ms N CMD...: N runs, one wall time in ms per line
wall_ms() {
	local n=$1 s e
	shift
	for _ in $(seq 1 "$n"); do
		s=$EPOCHREALTIME
		"$@" >/dev/null 2>&1 || true
		e=$EPOCHREALTIME
		awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f\n", (e - s) * 1000 }'
	done
}

echo "llmlaunch: $LLMLAUNCH"
echo "machine:   $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo

"$LLMLAUNCH" probe --save "$work/node.xml" >/dev/null 2>&1
"$LLMLAUNCH" --dry-run --python /bin/true "$example" >/dev/null  # warm the caches
floor_true=$(wall_ms "$runs" /bin/true | median)
floor=$(wall_ms "$runs" "$LLMLAUNCH" --version | median)
probe=$(wall_ms "$runs" "$LLMLAUNCH" probe | median)
probe_cold=$(wall_ms "$runs" "$LLMLAUNCH" probe --no-cache | median)
dry_xml=$(wall_ms "$runs" "$LLMLAUNCH" --dry-run --topology "$work/node.xml" --python /bin/true "$example" | median)
dry=$(wall_ms "$runs" "$LLMLAUNCH" --dry-run --python /bin/true "$example" | median)
dry_cold=$(wall_ms "$runs" "$LLMLAUNCH" --dry-run --no-cache --python /bin/true "$example" | median)
share=$(awk -v d="$dry" -v x="$dry_xml" 'BEGIN { printf "%.0f", (d > 0 ? (d - x) / d * 100 : 0) }')
share_cold=$(awk -v d="$dry_cold" -v x="$dry_xml" 'BEGIN { printf "%.0f", (d > 0 ? (d - x) / d * 100 : 0) }')

printf '1. dry run, median of %d runs (wall, whole process)\n' "$runs"
printf '   %-56s %8.2f ms\n' "/bin/true (the shell's fork+exec)" "$floor_true"
printf '   %-56s %8.2f ms\n' "llmlaunch --version (exec + dynamic linking)" "$floor"
printf '   %-56s %8.2f ms\n' "llmlaunch probe (live, warm: cache hit)" "$probe"
printf '   %-56s %8.2f ms\n' "llmlaunch probe --no-cache (live, cold)" "$probe_cold"
printf '   %-56s %8.2f ms\n' "llmlaunch --dry-run --topology node.xml" "$dry_xml"
printf '   %-56s %8.2f ms   (target < 10 ms)\n' "llmlaunch --dry-run examples/train.py (warm)" "$dry"
printf '   %-56s %8.2f ms\n' "llmlaunch --dry-run --no-cache examples/train.py (cold)" "$dry_cold"
printf '   live probe share of the dry run: %s%% warm, %s%% cold\n\n' "$share" "$share_cold"

if [ -n "$against" ]; then
	"$against" --dry-run --python /bin/true "$example" >/dev/null # its cache entry (another build: another key)
	for kind in version dry; do : >"$work/a.$kind"; : >"$work/b.$kind"; done
	for _ in $(seq 1 "$runs"); do
		wall_ms 1 "$against" --version >>"$work/a.version"
		wall_ms 1 "$LLMLAUNCH" --version >>"$work/b.version"
		wall_ms 1 "$against" --dry-run --python /bin/true "$example" >>"$work/a.dry"
		wall_ms 1 "$LLMLAUNCH" --dry-run --python /bin/true "$example" >>"$work/b.dry"
	done
	printf '2. against %s, median of %d interleaved runs\n' "$against" "$runs"
	for kind in version dry; do
		a=$(median <"$work/a.$kind")
		b=$(median <"$work/b.$kind")
		printf '   %-10s %8.2f ms against %8.2f ms   ratio %s\n' "$kind" "$b" "$a" \
			"$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')"
	done
	echo
fi

[ "$launch_runs" -gt 0 ] || exit 0
if ! "$PY" -c 'import torch.distributed.run' 2>/dev/null; then
	echo "3. full launch: skipped, torch is not importable by $PY"
	exit 0
fi

omp=$("$LLMLAUNCH" explain --json --nproc-per-node 2 2>/dev/null |
	"$PY" -c 'import json,sys; print(next(s["value"] for s in json.load(sys.stdin)["settings"] if s["name"] == "OMP_NUM_THREADS"))')
free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

one_llmlaunch() {
	local s e
	s=$EPOCHREALTIME
	"$LLMLAUNCH" --python "$PY" --nproc-per-node 2 --monitor-interval 0.1 "$example" --steps "$steps" \
		>"$work/out" 2>&1 || { cat "$work/out" >&2; return 1; }
	e=$EPOCHREALTIME
	awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f\n", e - s }'
}
one_bare() {
	local s e port
	port=$(free_port)
	mkdir -p "$work/logs"
	s=$EPOCHREALTIME
	OMP_NUM_THREADS=$omp "$PY" -m torch.distributed.run --nnodes 1 --node_rank 0 --nproc_per_node 2 \
		--master_addr 127.0.0.1 --master_port "$port" --redirects 2:0 --tee 2:0 \
		--log_dir "$work/logs" --monitor_interval 0.1 "$example" --steps "$steps" \
		>"$work/out" 2>&1 || { cat "$work/out" >&2; return 1; }
	e=$EPOCHREALTIME
	awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f\n", e - s }'
}

: >"$work/ll"
: >"$work/bare"
for i in $(seq 1 "$launch_runs"); do
	# Alternate the order so drift in the machine's load hits both alike.
	if [ $((i % 2)) = 1 ]; then
		one_llmlaunch >>"$work/ll"; one_bare >>"$work/bare"
	else
		one_bare >>"$work/bare"; one_llmlaunch >>"$work/ll"
	fi
done
ll=$(median <"$work/ll")
bare=$(median <"$work/bare")
printf '3. full launch, 2 workers, %d steps, median of %d runs each (wall)\n' "$steps" "$launch_runs"
printf '   %-44s %8.3f s   (%s)\n' "bare torchrun" "$bare" "$(tr '\n' ' ' <"$work/bare" | sed 's/ $//')"
printf '   %-44s %8.3f s   (%s)\n' "llmlaunch" "$ll" "$(tr '\n' ' ' <"$work/ll" | sed 's/ $//')"
printf '   ratio llmlaunch / torchrun: %s   (target <= 1.03)\n' "$(awk -v a="$ll" -v b="$bare" 'BEGIN { printf "%.3f", a / b }')"
