# SIGTERM to llmlaunch reaches torchrun and every worker: all of them are gone within
# 10 s and llmlaunch exits 143 (128 + SIGTERM).
. "$(dirname "$0")/launch-common.bash"
require_torch

"$LLMLAUNCH" --python "$PY" --nproc-per-node 2 "$EXAMPLE" --steps 1 --sleep 120 \
	>"$WORK/out" 2>"$WORK/err" &
pid=$!

# Wait (bounded) until both workers have reported, so they are really running.
for _ in $(seq 1 600); do
	[ "$(grep -c '^llmlaunch-example ' "$WORK/out" 2>/dev/null || true)" = 2 ] && break
	kill -0 $pid 2>/dev/null || { cat "$WORK/err" >&2; fail "llmlaunch ended before the workers reported"; }
	sleep 0.1
done
if [ "$(grep -c '^llmlaunch-example ' "$WORK/out")" != 2 ]; then
	kill -TERM $pid  # llmlaunch stops the job and its workers
	sleep 5
	kill -KILL $pid 2>/dev/null || true
	fail "workers did not report within 60 s"
fi
workers="$(field "$WORK/out" 0 pid) $(field "$WORK/out" 1 pid)"
torchrun=$(pgrep -P $pid || true)
[ -n "$torchrun" ] || fail "no torchrun child under llmlaunch"

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
