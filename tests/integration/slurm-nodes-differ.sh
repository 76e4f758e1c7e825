#!/usr/bin/env bash
# One emulated node of four has its InfiniBand port DOWN (a per-node --fsroot): under
# srun --mpi=pmix every node stops with the same message naming that node, and no
# worker starts anywhere.
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
. "$LL_SRCDIR/tests/lib/slurm-cluster.sh"
why=$(slurm_cluster_missing)
[ -z "$why" ] || skip "$why"
[ -x /usr/bin/python3 ] || skip "/usr/bin/python3 missing"
trap 'slurm_cluster_stop; agree_cleanup' EXIT
slurm_cluster_start 4 || { slurm_cluster_dump_logs; skip "the test Slurm cluster did not start"; }

ib_fsroot "$agree_tmp/good" "4: ACTIVE"
ib_fsroot "$agree_tmp/bad" "1: DOWN"
slurm_cluster_node_env n3 LL_NODE_FSROOT="$agree_tmp/bad"

# shellcheck disable=SC2016
timeout 90 srun -N4 --ntasks-per-node=1 --mpi=pmix -o "$agree_tmp/out-%t.txt" -e "$agree_tmp/err-%t.txt" \
	"$SLURM_CLUSTER_DIR/bin/node-env" bash -c 'exec "$0" --fsroot "${LL_NODE_FSROOT:-$1}" --agree-timeout 30 \
		--python /usr/bin/python3 --nproc-per-node 1 "$2"' "$LLMLAUNCH" "$agree_tmp/good" "$LL_SRCDIR/examples/train.py" \
	2>"$agree_tmp/srun.err"
rc=$?
[ $rc != 0 ] || fail "srun succeeded although n3 differs"
expect="llmlaunch: nodes differ: n3: no active RDMA port (mlx5_0 port 1 DOWN), the other 3 nodes have 1 (InfiniBand); transport socket, the other 3 nodes ib"
for t in 0 1 2 3; do
	got=$(grep '^llmlaunch: ' "$agree_tmp/err-$t.txt")
	[ "$got" = "$expect" ] || fail "task $t said: '$got' (stderr: $(cat "$agree_tmp/err-$t.txt"))"
	grep -q "^hint: fix those nodes or leave them out (srun --exclude=...: n3); nothing was started" "$agree_tmp/err-$t.txt" \
		|| fail "task $t: no hint"
	grep -q llmlaunch-example "$agree_tmp/out-$t.txt" && fail "task $t started a worker"
done
n=$(grep -c "task [0-3]: Exited with exit code 1" "$agree_tmp/srun.err")
[ "$n" = 4 ] || fail "expected 4 tasks to exit 1, srun says: $(cat "$agree_tmp/srun.err")"
echo "ok: every node refused, naming n3"
