# --hang-timeout: a rank that sleeps between two all-reduces hangs the job (its peer
# waits in the second all-reduce); llmlaunch takes every rank's Python stack through
# the bootstrap's stacks feature (and native ones through gdb or py-spy), names the
# sleeping rank and its time.sleep frame, and stops the job. --on-hang dump takes the stacks and lets the job run. A job that
# prints every second is never stopped by a shorter timeout.
. "$(dirname "$0")/launch-common.bash"
require_torch
WORKER="$LL_SRCDIR/tests/integration/launch-failure-worker.py"

run() { # run NAME ARGS...: sets rc
	local name=$1
	shift
	set +e
	"$LLMLAUNCH" --python "$PY" --nproc-per-node 2 "$@" >"$WORK/out.$name" 2>"$WORK/err.$name"
	rc=$?
	set -e
}

# The watch starts at the job's first line: torch's import before it is not a hang.
run stop --hang-timeout 4 "$WORKER" sleep 1 120
end=$(date +%s.%N)
[ "$rc" = 1 ] || fail "stop: llmlaunch exited $rc, expected 1 for a job stopped for a hang"
verdict=$(grep '^llmlaunch: the job hangs' "$WORK/err.stop") || fail "stop: no hang verdict"
case $verdict in
*"no rank has printed anything for "*" s; rank 1 waits in time.sleep in launch-failure-worker.py:"*", while rank 0 waits in all_reduce in "*) ;;
*) fail "stop: the verdict does not name rank 1 and its time.sleep: $verdict" ;;
esac
grep -q 'failed first' "$WORK/err.stop" && fail "stop: the ranks stopped for the hang were reported as failures"
t0=$(grep -o 'failure-worker rank=1 t=[0-9.]*' "$WORK/out.stop" | sed 's/.*t=//')
dir=$(sed -n "s/^llmlaunch: the job's record is kept in '\([^']*\)'.*/\1/p" "$WORK/err.stop")
[ -s "$dir/stacks/rank-0.txt" ] && [ -s "$dir/stacks/rank-1.txt" ] || fail "stop: the stacks were not kept"
grep -q 'line [0-9]* in main' "$dir/stacks/rank-1.txt" || fail "stop: rank 1's stack has no frame of the script"
# Native frames where py-spy or gdb is installed (gdb is in the test packages): rank 1
# sleeps in the C library, rank 0 waits below its all_reduce.
if command -v py-spy >/dev/null || command -v gdb >/dev/null; then
	case $verdict in
	*"(native frames from "*": 2 of 2 ranks in rank-R.native.txt)") ;;
	*) fail "stop: the verdict does not count the native stacks: $verdict" ;;
	esac
	grep -qE 'nanosleep|select' "$dir/stacks/rank-1.native.txt" ||
		fail "stop: rank 1's native stack has no sleep: $(head -c 2000 "$dir/stacks/rank-1.native.txt")"
	grep -qE '^#1 |Thread ' "$dir/stacks/rank-0.native.txt" || fail "stop: rank 0's native stack is empty"
else
	case $verdict in
	*"(no native frames: neither py-spy nor gdb is installed)") ;;
	*) fail "stop: without py-spy or gdb the verdict should say so: $verdict" ;;
	esac
fi
echo "stop: llmlaunch ended $(awk -v a="$t0" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s after rank 1's last line (timeout 4 s)"
rm -rf "$dir"

# dump: the stacks, and the job goes on to its end (the sleep is short).
run dump --hang-timeout 3 --on-hang dump "$WORKER" sleep 1 7
[ "$rc" = 0 ] || fail "dump: llmlaunch exited $rc; the job should have run to its end"
grep -q '^llmlaunch: the job hangs.*rank 1 waits in time.sleep' "$WORK/err.dump" || fail "dump: no hang verdict"
grep -q 'stopping the job' "$WORK/err.dump" && fail "dump: the job was stopped"
rm -rf "$TMPDIR"/llmlaunch-*

# A job that prints every second for 8 s outlives a 5 s timeout, and its end (torchrun
# notices ended workers only every 5 s) is no hang. The timeout stays above the
# silent seconds of the ranks' own end (the last all-reduce, the interpreter's
# teardown of torch) on a loaded machine: those are silence too.
run print --hang-timeout 5 "$WORKER" print 0 8
[ "$rc" = 0 ] || fail "print: llmlaunch exited $rc for a job that keeps printing"
grep -q 'the job hangs' "$WORK/err.print" && fail "print: a job that prints was taken for a hung one"
# About 8 lines a rank (each loop sleeps a second; a loaded machine makes fewer).
lines=$(grep -c '^rank [01] working' "$WORK/out.print" || true)
[ "$lines" -ge 10 ] || fail "print: only $lines lines printed"
assert_tmp_clean
echo "ok: a hang named by rank and frame and stopped; dump leaves it running; a printing job runs to its end"
