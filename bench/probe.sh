#!/bin/bash
# Time whole-process runs, in one go on this machine:
#   llmlaunch probe --json --no-cache (live, cold: the full probe)
#     vs  lstopo-no-graphics --of xml (the hwloc floor)
#   llmlaunch probe --json (live, warm: the per-boot cache hit, in a private cache dir)
#   llmlaunch probe --topology FILE --json (replay)
# Prints the median of N runs of each and the cold/lstopo ratio. lstopo and the
# cold probe run in turns, so that a load that comes and goes on a shared
# machine weighs on both alike; their minimum is printed too.
# Targets: cold at most 0.5x lstopo (median of the turns); warm and replay under 5 ms.
#
# usage: bench/probe.sh [-n N] [-b LLMLAUNCH] [FILE...]
#   FILEs to replay default to a snapshot of this machine plus JURECA-DC (real data).
#   Build without sanitizers first, e.g.:
#     cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release && cmake --build build-release
set -eu
n=21
bin=${LLMLAUNCH:-}
while getopts "n:b:h" opt; do
	case $opt in
	n) n=$OPTARG ;;
	b) bin=$OPTARG ;;
	h) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$bin" ]; then
	for b in "$here/build-release/llmlaunch" "$here/build/llmlaunch"; do
		[ -x "$b" ] && { bin=$b; break; }
	done
fi
[ -n "$bin" ] && [ -x "$bin" ] || { echo "bench/probe.sh: no llmlaunch binary (use -b PATH)" >&2; exit 2; }
command -v lstopo-no-graphics >/dev/null || { echo "bench/probe.sh: lstopo-no-graphics not found" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A cache of our own: the numbers must not depend on what another run left.
export LLMLAUNCH_CACHE_DIR=$tmp/cache
unset LLMLAUNCH_CACHE_DEBUG
"$bin" probe --save "$tmp/self.xml" >/dev/null
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
	files=("$tmp/self.xml")
	jrc="$here/../shared/realdata/hwloc_xml/psmgmt/topo.jrc0323.xml"
	[ -f "$jrc" ] && files+=("$jrc")
	dgx="$here/../shared/realdata/hwloc_xml/hwloc-v2x-nvidiaDGX2.xml"
	[ -f "$dgx" ] && files+=("$dgx")
fi

# Median wall time of n runs of a command, in microseconds ($EPOCHREALTIME: no fork for the clock).
median_us() {
	local -a t=()
	local i s e
	"$@" >/dev/null 2>&1 # warm the page cache
	for ((i = 0; i < n; i++)); do
		s=${EPOCHREALTIME/./}
		"$@" >/dev/null 2>&1
		e=${EPOCHREALTIME/./}
		t+=($((e - s)))
	done
	printf '%s\n' "${t[@]}" | sort -n | sed -n "$(((n + 1) / 2))p"
}
ms() { awk -v u="$1" 'BEGIN { printf "%.2f ms", u / 1000 }'; }

# Two commands run in turns, n times each: "median_a min_a median_b min_b" in microseconds.
paired_us() {
	local -a a=() b=()
	local i s e
	local -a ca=("${@:2:$1}") cb=("${@:$(($1 + 2))}")
	"${ca[@]}" >/dev/null 2>&1
	"${cb[@]}" >/dev/null 2>&1
	for ((i = 0; i < n; i++)); do
		s=${EPOCHREALTIME/./}
		"${ca[@]}" >/dev/null 2>&1
		e=${EPOCHREALTIME/./}
		a+=($((e - s)))
		s=${EPOCHREALTIME/./}
		"${cb[@]}" >/dev/null 2>&1
		e=${EPOCHREALTIME/./}
		b+=($((e - s)))
	done
	local mid=$(((n + 1) / 2))
	printf '%s %s %s %s\n' \
		"$(printf '%s\n' "${a[@]}" | sort -n | sed -n "${mid}p")" "$(printf '%s\n' "${a[@]}" | sort -n | head -1)" \
		"$(printf '%s\n' "${b[@]}" | sort -n | sed -n "${mid}p")" "$(printf '%s\n' "${b[@]}" | sort -n | head -1)"
}

echo "binary: $bin ($n runs each, median wall time per whole process)"
# What any llmlaunch command pays before doing anything (dynamic linking and the
# libraries' constructors): the floor under both probe numbers.
floor_us=$(median_us "$bin" --version)
printf '  %-44s %s\n' "llmlaunch --version (process start floor)" "$(ms "$floor_us")"
read -r lstopo_us lstopo_min cold_us cold_min < <(paired_us 3 lstopo-no-graphics --of xml "$bin" probe --json --no-cache)
# median_us runs the command once before timing: that run writes the cache.
warm_us=$(median_us "$bin" probe --json)
printf '  %-44s %s (min %s)\n' "lstopo-no-graphics --of xml" "$(ms "$lstopo_us")" "$(ms "$lstopo_min")"
printf '  %-44s %s (min %s)\n' "probe --json --no-cache (live, cold)" "$(ms "$cold_us")" "$(ms "$cold_min")"
printf '  %-44s %s (target < 5 ms)\n' "probe --json (live, warm: cache hit)" "$(ms "$warm_us")"
ratio=$(awk -v a="$cold_us" -v b="$lstopo_us" 'BEGIN { printf "%.2f", a / b }')
ratio_min=$(awk -v a="$cold_min" -v b="$lstopo_min" 'BEGIN { printf "%.2f", a / b }')
printf '  %-44s %sx, of the minima %sx (target <= 0.5x)\n' "ratio cold / lstopo" "$ratio" "$ratio_min"
status=0
awk -v r="$ratio" 'BEGIN { exit !(r <= 0.5) }' || status=1
[ "$warm_us" -lt 5000 ] || status=1
# The target is for this machine's own snapshot; other files show how the cost
# grows with the file (hwloc's XML parser dominates).
first=1
for f in "${files[@]}"; do
	us=$(median_us "$bin" probe --topology "$f" --json)
	kb=$(( $(wc -c <"$f") / 1024 ))
	if [ $first = 1 ]; then
		printf '  %-44s %s (%s KB, target < 5 ms)\n' "replay $(basename "$f")" "$(ms "$us")" "$kb"
		[ "$us" -lt 5000 ] || status=1
	else
		printf '  %-44s %s (%s KB)\n' "replay $(basename "$f")" "$(ms "$us")" "$kb"
	fi
	first=0
done
exit $status
