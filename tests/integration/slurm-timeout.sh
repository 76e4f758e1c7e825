#!/usr/bin/env bash
# A node that never arrives: n4's llmlaunch starts 20 s late, the others give up after
# --agree-timeout 6 (room for a slow PMIx server) with a message that says how long
# they waited and names n4; n4 itself gives up too. Nothing hangs: srun ends well before its own 60 s limit.
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
. "$LL_SRCDIR/tests/lib/slurm-cluster.sh"
why=$(slurm_cluster_missing)
[ -z "$why" ] || skip "$why"
trap 'slurm_cluster_stop; agree_cleanup' EXIT
slurm_cluster_start 4 || { slurm_cluster_dump_logs; skip "the test Slurm cluster did not start"; }
slurm_cluster_node_env n4 LL_DELAY=20

start=$SECONDS
# shellcheck disable=SC2016
timeout 60 srun -N4 --ntasks-per-node=1 --mpi=pmix -o "$agree_tmp/out-%t.txt" -e "$agree_tmp/err-%t.txt" \
	"$SLURM_CLUSTER_DIR/bin/node-env" bash -c 'sleep "${LL_DELAY:-0}"; exec "$0" env --format json --agree-timeout 6' \
	"$LLMLAUNCH" 2>"$agree_tmp/srun.err"
rc=$?
took=$((SECONDS - start))
[ $rc = 124 ] && fail "srun hung until the test's own timeout"
[ $rc != 0 ] || fail "srun succeeded although n4 never arrived"
for t in 0 1 2; do
	got=$(grep '^llmlaunch: ' "$agree_tmp/err-$t.txt")
	[ "$got" = "llmlaunch: agreement timed out after 6 s: 1 of 4 nodes did not arrive: n4" ] \
		|| fail "task $t said: '$got'"
	grep -q -- "--agree-timeout (6 s)" "$agree_tmp/err-$t.txt" || fail "task $t: no hint about --agree-timeout"
	[ -s "$agree_tmp/out-$t.txt" ] && fail "task $t printed an environment"
done
grep -q '^llmlaunch: agreement timed out' "$agree_tmp/err-3.txt" || fail "n4 did not time out: $(cat "$agree_tmp/err-3.txt")"
n=$(grep -c "task [0-3]: Exited with exit code 1" "$agree_tmp/srun.err")
[ "$n" = 4 ] || fail "expected 4 tasks to exit 1: $(cat "$agree_tmp/srun.err")"
echo "ok: timed out and named n4; srun took $took s"
