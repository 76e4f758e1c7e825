#!/usr/bin/env bash
# A rank that raises between two all-reduces on the second of two emulated Slurm nodes
# (one rank each, gloo): both nodes stop within 10 s of the failure, exit non-zero, and
# each names what it saw: n2 its rank 1 and the ValueError, n1 its rank 0 as a
# consequence ("Connection closed by peer") of a failure on another node, never as
# the cause (torchrun's own "Root Cause" block on n1 names rank 0).
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
. "$LL_SRCDIR/tests/lib/slurm-cluster.sh"
why=$(slurm_cluster_missing)
[ -z "$why" ] || skip "$why"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || skip "Debian's python3-torch is not installed"
trap 'slurm_cluster_stop; agree_cleanup' EXIT
slurm_cluster_start 2 || { slurm_cluster_dump_logs; skip "the test Slurm cluster did not start"; }

mkdir -p "$agree_tmp/tmp" # failed jobs keep their record: here, not in /tmp
TMPDIR="$agree_tmp/tmp" timeout 240 srun -N2 --ntasks-per-node=1 --mpi=pmix -o "$agree_tmp/out-%t.txt" \
	-e "$agree_tmp/err-%t.txt" "$LLMLAUNCH" --python /usr/bin/python3 --nproc-per-node 1 --agree-timeout 60 \
	"$LL_SRCDIR/tests/integration/launch-failure-worker.py" raise 1 2>"$agree_tmp/srun.err"
rc=$?
end=$(date +%s.%N)
[ $rc != 0 ] || fail "srun exited 0 for a job whose rank 1 raised"
t0=$(grep -ho 'failure-worker rank=1 t=[0-9.]*' "$agree_tmp"/out-*.txt | sed 's/.*t=//')
[ -n "$t0" ] || fail "rank 1 never reached the failure: $(tail -n 5 "$agree_tmp"/err-*.txt)"
stopped=$(awk -v a="$t0" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
echo "both nodes ended $stopped s after the failure"
awk -v s="$stopped" 'BEGIN { exit !(s < 10) }' || fail "the job ended $stopped s after the failure (limit 10 s)"
grep -q "^llmlaunch: rank 1 on n2 failed first (exit 1, .*): ValueError: rank 1 gave up on purpose" \
	"$agree_tmp/err-1.txt" || fail "n2 does not name its rank 1: $(grep '^llmlaunch:' "$agree_tmp/err-1.txt")"
grep -Eq "^llmlaunch: rank 0 on n1 failed because another rank did \\(exit 1, .*Connection (closed|reset) by peer.*; the first failure was on another node" \
	"$agree_tmp/err-0.txt" || fail "n1 does not name its rank 0 as a consequence: $(grep '^llmlaunch:' "$agree_tmp/err-0.txt")"
grep -q "rank 0 on n1 failed first" "$agree_tmp/err-0.txt" && fail "n1 names its victim as the first failure"
grep -h "^llmlaunch: rank" "$agree_tmp"/err-*.txt
echo "ok: n2 names rank 1's ValueError, n1 its rank 0 as a consequence; both ended within 10 s"
