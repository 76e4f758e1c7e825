#!/usr/bin/env bash
# Build the `fuzz` preset (clang, libFuzzer, ASan+UBSan) and run every harness
# tests/fuzz/fuzz-NAME.c for a bounded time. Seeds: tests/fuzz/corpus/NAME/ when it
# exists, plus files named by seeds_for() below, copied into a temporary corpus so
# the repository is never written. Exits non-zero when a harness crashes (the crash
# input is kept in build-fuzz/fuzz-artifacts/).
#   FUZZ_SECONDS=45 (per harness)   FUZZ_JOBS=1
set -euo pipefail
cd "$(dirname "$0")/../.."
SRC=$PWD
SECONDS_EACH=${FUZZ_SECONDS:-45}

if ! command -v clang >/dev/null; then
	echo "fuzz: clang not installed, skipping" >&2
	exit 0
fi
shopt -s nullglob
targets=()
for harness_src in tests/fuzz/fuzz-*.c; do targets+=("$(basename "$harness_src" .c)"); done
[ ${#targets[@]} -gt 0 ] || { echo "fuzz: no harnesses" >&2; exit 0; }
cmake --preset fuzz >/dev/null
# Only the harnesses (and the core they link): the fuzz build needs nothing else.
cmake --build --preset fuzz -j "${FUZZ_JOBS:-$(nproc)}" --target "${targets[@]}" >/dev/null

# Extra seed files for a harness, by name (globs relative to the source tree).
seeds_for() {
	case $1 in
	fuzz-nccl-scan) echo "tests/fixtures/nccl ../shared/realdata/nccl_logs" ;;
	fuzz-profile) echo "profiles tests/fixtures/profiles" ;;
	fuzz-topology) echo "tests/fixtures/hwloc ../shared/realdata/hwloc_xml" ;;
	*) echo "" ;;
	esac
}

ART=$SRC/build-fuzz/fuzz-artifacts
mkdir -p "$ART"
status=0
for harness_src in tests/fuzz/fuzz-*.c; do
	name=$(basename "$harness_src" .c)
	bin=$SRC/build-fuzz/tests/$name
	[ -x "$bin" ] || { echo "fuzz: $name was not built" >&2; status=1; continue; }
	corpus=$(mktemp -d)
	for dir in "tests/fuzz/corpus/$name" "tests/fuzz/corpus/${name#fuzz-}"; do
		[ -d "$dir" ] && cp -rL "$dir/." "$corpus/"
	done
	for s in $(seeds_for "$name"); do
		[ -e "$s" ] || continue
		find "$s" -type f -size -1024k -exec cp -t "$corpus" {} + 2>/dev/null || true
	done
	echo "fuzz: $name for ${SECONDS_EACH}s ($(ls "$corpus" | wc -l) seeds)"
	if ! "$bin" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$ART/$name-" -print_final_stats=1 "$corpus" >"$ART/$name.log" 2>&1; then
		echo "fuzz: $name FAILED; see $ART/$name.log" >&2
		tail -40 "$ART/$name.log" >&2
		status=1
	else
		grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$ART/$name.log" | sed "s/^/fuzz: $name /"
	fi
	rm -rf "$corpus"
done
exit $status
