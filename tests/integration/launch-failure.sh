# When one rank fails, llmlaunch names it and stops the job within seconds: a rank
# that raises between two all-reduces (its peer then fails with "Connection closed
# by peer", a consequence) and a rank killed by SIGKILL. The verdict names the first
# rank, its host and cause; the exit status is that rank's; the job directory keeps
# the record and `llmlaunch logs` reads it.
. "$(dirname "$0")/launch-common.bash"
require_torch
WORKER="$LL_SRCDIR/tests/integration/launch-failure-worker.py"
HOST=$(hostname)

run() { # run NAME LIMIT ARGS...: sets rc; fails when llmlaunch ended LIMIT s or more after the failure
	local name=$1 limit=$2 t0
	shift 2
	set +e
	"$LLMLAUNCH" --python "$PY" --nproc-per-node 2 "$WORKER" "$@" >"$WORK/out.$name" 2>"$WORK/err.$name"
	rc=$?
	set -e
	# the ranks' lines may run together: both write to one terminal
	t0=$(grep -o 'failure-worker rank=1 t=[0-9.]*' "$WORK/out.$name" | head -n 1 | sed 's/.*t=//')
	[ -n "$t0" ] || fail "$name: rank 1 never reached the failure"
	stopped=$(awk -v t0="$t0" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.1f", t1 - t0 }')
	echo "$name: stopped $stopped s after the failure"
	awk -v s="$stopped" -v l="$limit" 'BEGIN { exit !(s < l) }' ||
		fail "$name: the job ended $stopped s after the failure (limit $limit s)"
}

run raise 10 raise 1
[ "$rc" = 1 ] || fail "raise: llmlaunch exited $rc, expected the failing rank's 1"
verdict=$(grep '^llmlaunch: rank .* failed first' "$WORK/err.raise") || fail "raise: no verdict"
case $verdict in
"llmlaunch: rank 1 on $HOST failed first (exit 1, "*"): ValueError: rank 1 gave up on purpose; 1 other rank stopped after it") ;;
*) fail "raise: unexpected verdict: $verdict" ;;
esac
dir=$(sed -n "s/^llmlaunch: the job's record is kept in '\([^']*\)'.*/\1/p" "$WORK/err.raise")
[ -d "$dir" ] || fail "raise: the job's record was not kept"
"$LLMLAUNCH" logs "$dir" >"$WORK/out.logs" 2>&1 || true
grep -q "rank 1 on $HOST failed first (exit 1, .*ValueError" "$WORK/out.logs" || fail "logs: the record is not read"
# The peer fails on the closed connection; torch 2.x's torchrun may stop it (SIGTERM)
# before it exits by itself, with the error already written.
grep -Eq "rank 0 on $HOST: (exit 1|signal TERM).*Connection (closed|reset) by peer" "$WORK/out.logs" ||
	fail "logs: the consequence is not listed"
rm -rf "$dir"

run kill 10 kill 1
[ "$rc" = 137 ] || fail "kill: llmlaunch exited $rc, expected 128+9"
grep -q "^llmlaunch: rank 1 on $HOST failed first (signal KILL, .*): killed by SIGKILL; 1 other rank stopped after it" \
	"$WORK/err.kill" || fail "kill: the verdict does not name rank 1 and SIGKILL"
# A rank that ignores SIGTERM keeps torchrun waiting (30 s in torch 1.13): llmlaunch
# stops the job itself, SIGKILL included (4 s for torchrun, then 2 s of grace: the
# limit leaves room for a loaded machine and still proves torchrun did not end it).
run stubborn 15 stubborn 1 120
[ "$rc" = 1 ] || fail "stubborn: llmlaunch exited $rc, expected the failing rank's 1"
grep -q '^llmlaunch: a rank failed [0-9]* s ago and torchrun has not ended: stopping the job' "$WORK/err.stubborn" ||
	fail "stubborn: llmlaunch did not stop torchrun itself"
grep -q "^llmlaunch: rank 1 on $HOST failed first (exit 1, .*): ValueError" "$WORK/err.stubborn" ||
	fail "stubborn: the verdict does not name rank 1"
echo "ok: the first failure named, its status returned, the job stopped within 10 s"
