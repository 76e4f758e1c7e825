#!/usr/bin/env bash
# A rank that raises between two all-reduces on the second of two emulated Slurm nodes
# (one rank each, gloo, PMIx): both nodes stop within 10 s of the failure and exit with
# the rank's status, and both print node 0's verdict from the job channel, the same
# line: rank 1 on n2 and its ValueError, never n1's rank 0, whose "Connection closed by
# peer" is a consequence (torchrun's own "Root Cause" block on n1 names rank 0).
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
[ $rc = 1 ] || fail "srun exited $rc, not rank 1's status 1"
verdict="^llmlaunch: rank 1 on n2 failed first (exit 1, [0-9:]*): ValueError: rank 1 gave up on purpose; 1 other rank stopped after it$"
for k in 0 1; do
	grep -q "$verdict" "$agree_tmp/err-$k.txt" ||
		fail "node $k does not print the verdict: $(grep '^llmlaunch:' "$agree_tmp/err-$k.txt")"
done
v0=$(grep "$verdict" "$agree_tmp/err-0.txt") v1=$(grep "$verdict" "$agree_tmp/err-1.txt")
[ "$v0" = "$v1" ] || fail "the nodes' verdicts differ: '$v0' and '$v1'"
grep -q "rank 0 on n1 failed" "$agree_tmp"/err-*.txt && fail "a node names n1's rank 0, a consequence"
echo "$v0"
echo "ok: both nodes print the same verdict (rank 1 on n2, ValueError), exit 1, ended within 10 s"
