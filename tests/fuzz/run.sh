#!/usr/bin/env bash
# Build the `fuzz` preset (clang, libFuzzer, ASan+UBSan) and run every harness
# tests/fuzz/fuzz-NAME.c for a bounded time. Seeds: tests/fuzz/corpus/NAME/ when it
# exists, plus files named by seeds_for() below, copied into a temporary corpus so
# the repository is never written. Exits non-zero when a harness crashes (the crash
# input is kept in build-fuzz/fuzz-artifacts/).
#
# By default a run is the same every time: libFuzzer's seed is fixed and each harness
# runs a fixed number of inputs (FUZZ_RUNS), within FUZZ_SECONDS at most. A landing
# must not pass or fail by luck, and a slower machine then runs a prefix of the same
# inputs. Exploring is a separate thing: FUZZ_SEED=random with a large FUZZ_SECONDS
# and FUZZ_RUNS=0 (no limit) looks further each time; add what it finds to
# probe-bad-input.sh (or the harness's unit test) with its fix, and the fixed run
# keeps it fixed.
#   FUZZ_SEED=1   FUZZ_RUNS=N (every harness; default runs_for() below)
#   FUZZ_SECONDS=120 (per harness)
#   FUZZ_JOBS=$(nproc) (build)   FUZZ_ONLY=fuzz-topology (one harness)
set -euo pipefail
cd "$(dirname "$0")/../.."
SRC=$PWD
SECONDS_EACH=${FUZZ_SECONDS:-120}
SEED=${FUZZ_SEED:-1}
case $SEED in
random) SEED=0 ;; # libFuzzer: 0 picks one from the clock
*[!0-9]* | '') echo "fuzz: FUZZ_SEED must be a number or 'random'" >&2; exit 2 ;;
esac

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

# Inputs per harness: about 45 s each under ASan on a 2-core CI machine.
runs_for() {
	case $1 in
	fuzz-topology) echo 10000 ;;
	*) echo 60000 ;;
	esac
}

# Addresses reach libFuzzer's comparison tables, so the same seed runs the same
# inputs only without address randomisation (measured: with setarch -R two runs of
# fuzz-topology were identical, without it they parted after a few hundred inputs).
norandom=()
if setarch "$(uname -m)" -R true 2>/dev/null; then
	norandom=(setarch "$(uname -m)" -R)
else
	echo "fuzz: cannot turn address randomisation off here (setarch -R); runs may differ from another machine's" >&2
fi

ART=$SRC/build-fuzz/fuzz-artifacts
mkdir -p "$ART"
status=0
for harness_src in tests/fuzz/fuzz-*.c; do
	name=$(basename "$harness_src" .c)
	[ -z "${FUZZ_ONLY:-}" ] || [ "$FUZZ_ONLY" = "$name" ] || continue
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
	RUNS_EACH=${FUZZ_RUNS:-$(runs_for "$name")}
	echo "fuzz: $name, seed $SEED, $RUNS_EACH inputs within ${SECONDS_EACH}s ($(ls "$corpus" | wc -l) seeds)"
	# -reload=0: the corpus directory is not read again mid-run, so the run is the
	# same wherever it happens.
	if ! "${norandom[@]}" "$bin" -seed="$SEED" -runs="$( [ "$RUNS_EACH" = 0 ] && echo -1 || echo "$RUNS_EACH")" \
		-max_total_time="$SECONDS_EACH" -reload=0 -timeout=10 -rss_limit_mb=2048 \
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
