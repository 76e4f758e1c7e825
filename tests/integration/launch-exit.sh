# The job's exit status is llmlaunch's: a script that exits 3 makes llmlaunch exit 3
# (torchrun itself would say 1), success is 0 and leaves nothing in TMPDIR, a failure
# only its record.
# With --exec llmlaunch becomes torchrun, so torchrun's own status comes back.
. "$(dirname "$0")/launch-common.bash"
require_torch

run() { # run NAME ARGS...: sets rc, keeps stdout/stderr in WORK/out.NAME, WORK/err.NAME
	local name=$1
	shift
	set +e
	"$LLMLAUNCH" --python "$PY" "$@" >"$WORK/out.$name" 2>"$WORK/err.$name"
	rc=$?
	set -e
}

run fail3 --nproc-per-node 2 "$EXAMPLE" --steps 1 --exit-code 3
[ "$rc" = 3 ] || { cat "$WORK/err.fail3" >&2; fail "llmlaunch exited $rc for a script that exits 3"; }
assert_eq "report lines" 2 "$(grep -c '^llmlaunch-example ' "$WORK/out.fail3")"
# A failed job keeps its record (docs/failures.md), and only that.
kept=$(sed -n "s/^llmlaunch: the job's record is kept in '\([^']*\)'.*/\1/p" "$WORK/err.fail3")
[ -n "$kept" ] && [ -f "$kept/verdict" ] || fail "fail3: the failed job's record was not kept"
rm -rf "$kept"
assert_tmp_clean

run ok --nproc-per-node 1 "$EXAMPLE" --steps 1
[ "$rc" = 0 ] || { cat "$WORK/err.ok" >&2; fail "llmlaunch exited $rc for a job that succeeds"; }
assert_tmp_clean

run exec --exec --nproc-per-node 1 "$EXAMPLE" --steps 1 --exit-code 3
[ "$rc" = 1 ] || { cat "$WORK/err.exec" >&2; fail "--exec: expected torchrun's own status 1, got $rc"; }
grep -q 'exitcode *: 3' "$WORK/err.exec" || fail "--exec: torchrun did not report the worker's exit code 3"
echo "ok: exit 3 passed through, 0 for success, --exec gives torchrun's status"
