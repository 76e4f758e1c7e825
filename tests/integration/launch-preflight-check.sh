#!/usr/bin/env bash
# run --preflight on one node (gloo): the check runs first over the same world and
# reports on standard error, then the job starts; with a profile figure the job
# cannot meet and --on-slow stop, the check names the figure's source and the job
# does not start. Nothing is left in TMPDIR either way.
. "$(dirname "$0")/launch-common.bash"
require_torch

# A whole-job figure no CPU reaches, stated by a profile file: the threshold's source.
cat >"$WORK/fast.yaml" <<'YAML'
name: fast
expect:
  allreduce_busbw_gbps: 100000
YAML

rc=0
"$LLMLAUNCH" run --preflight --python "$PY" --nproc-per-node 1 "$EXAMPLE" --steps 1 >"$WORK/out1" 2>"$WORK/err1" || rc=$?
[ $rc = 0 ] || fail "run --preflight exited $rc"
grep -q '^Preflight check: 1 nodes x 1 processes, gloo' "$WORK/err1" || fail "no check report on stderr"
grep -q '^verdict: ok, no node named$' "$WORK/err1" || fail "the check was not ok"
grep -q '^llmlaunch-example .*rank=0' "$WORK/out1" || fail "the job did not run after the check"
! grep -q 'Preflight' "$WORK/out1" || fail "the report went to the job's stdout"

rc=0
"$LLMLAUNCH" run --preflight --on-slow stop --profile "$WORK/fast.yaml" --python "$PY" --nproc-per-node 1 \
	"$EXAMPLE" --steps 1 >"$WORK/out2" 2>"$WORK/err2" || rc=$?
[ $rc = 1 ] || fail "a failed check with --on-slow stop exited $rc"
grep -q "^  job: all-reduce of 1048576 bytes: bus bandwidth .* GB/s, below 1e+05 GB/s (profile $WORK/fast.yaml:3)$" \
	"$WORK/err2" || fail "no job verdict with the profile's line as its source"
grep -q '^llmlaunch: preflight check: the job is slow: .*; the job was not started (--on-slow stop)$' "$WORK/err2" ||
	fail "no message that the job was not started"
! grep -q '^llmlaunch-example' "$WORK/out2" || fail "the job started although the check said stop"

left=$(find "$TMPDIR" -mindepth 1 | head -5)
[ -z "$left" ] || fail "left in TMPDIR: $left"
echo "ok: run --preflight checks first, then runs or stops"
