# SIGTERM to llmlaunch reaches torchrun and every worker: all of them are gone within
# 10 s and llmlaunch exits 143 (128 + SIGTERM). SIGKILL to llmlaunch, which it cannot
# forward, ends them too (PR_SET_PDEATHSIG on torchrun and on each worker), and the
# next launch removes the job directory it left.
. "$(dirname "$0")/launch-common.bash"
require_torch

# start_job OUT ERR: a two-worker job that sleeps; sets pid, workers and torchrun once
# both workers have reported (bounded), so they are really running.
start_job() {
	"$LLMLAUNCH" --python "$PY" --nproc-per-node 2 "$EXAMPLE" --steps 1 --sleep 120 >"$1" 2>"$2" &
	pid=$!
	for _ in $(seq 1 600); do
		[ "$(grep -c '^llmlaunch-example ' "$1" 2>/dev/null || true)" = 2 ] && break
		kill -0 $pid 2>/dev/null || { cat "$2" >&2; fail "llmlaunch ended before the workers reported"; }
		sleep 0.1
	done
	if [ "$(grep -c '^llmlaunch-example ' "$1")" != 2 ]; then
		kill -TERM $pid  # llmlaunch stops the job and its workers
		sleep 5
		kill -KILL $pid 2>/dev/null || true
		fail "workers did not report within 60 s"
	fi
	workers="$(field "$1" 0 pid) $(field "$1" 1 pid)"
	torchrun=$(pgrep -P $pid || true)
	[ -n "$torchrun" ] || fail "no torchrun child under llmlaunch"
}

start_job "$WORK/out" "$WORK/err"

start=$(date +%s.%N)
kill -TERM $pid
set +e
wait $pid
rc=$?
set -e
elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
assert_eq "exit status after SIGTERM" 143 "$rc"
for p in $workers $torchrun; do
	! kill -0 "$p" 2>/dev/null || { kill -KILL "$p"; fail "process $p survived SIGTERM to llmlaunch"; }
done
awk -v e="$elapsed" 'BEGIN { exit !(e < 10) }' || fail "llmlaunch took $elapsed s to end after SIGTERM"
grep -q 'SIGTERM: forwarded to the job' "$WORK/err" || fail "no note about forwarding SIGTERM on stderr"
assert_tmp_clean
echo "ok: SIGTERM ended torchrun and workers ($workers) in ${elapsed} s, exit 143"

# SIGKILL: nothing in llmlaunch runs, the kernel ends torchrun and the workers.
start_job "$WORK/out-kill" "$WORK/err-kill"
kill -KILL $pid
set +e
wait $pid
rc=$?
set -e
assert_eq "exit status after SIGKILL" 137 "$rc"
for _ in $(seq 1 100); do
	alive=
	for p in $workers $torchrun; do
		kill -0 "$p" 2>/dev/null && alive="$alive $p"
	done
	[ -z "$alive" ] && break
	sleep 0.1
done
if [ -n "$alive" ]; then
	kill -KILL $alive 2>/dev/null || true
	fail "processes$alive outlived llmlaunch's SIGKILL by 10 s (torchrun $torchrun, workers $workers)"
fi
[ -d "$TMPDIR/llmlaunch-$pid" ] || fail "expected the killed launch's job directory to be left for the next start"
killed=$pid
# The next launch removes what the killed one left, says so, and leaves nothing itself.
"$LLMLAUNCH" --python "$PY" --nproc-per-node 1 "$EXAMPLE" --steps 1 >"$WORK/out-next" 2>"$WORK/err-next" ||
	fail "the launch after the SIGKILL failed"
grep -qF "llmlaunch: warning: removed '$TMPDIR/llmlaunch-$killed', left by a launcher that was killed" "$WORK/err-next" ||
	fail "no note about removing the stale job directory"
assert_tmp_clean
echo "ok: SIGKILL to llmlaunch ended torchrun $torchrun and workers ($workers); the next launch removed its directory"
