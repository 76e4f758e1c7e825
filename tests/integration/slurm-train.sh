#!/usr/bin/env bash
# The whole path on a 4-node Slurm cluster on localhost:
#   srun -N4 --ntasks-per-node=1 --mpi=pmix llmlaunch --nproc-per-node 1 examples/train.py
# completes a gloo all-reduce over world size 4, and every worker reports the same
# WORLD_SIZE, MASTER_ADDR and MASTER_PORT and a distinct RANK.
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
. "$LL_SRCDIR/tests/lib/slurm-cluster.sh"
why=$(slurm_cluster_missing)
[ -z "$why" ] || skip "$why"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || skip "Debian's python3-torch is not installed"
trap 'slurm_cluster_stop; agree_cleanup' EXIT
slurm_cluster_start 4 || { slurm_cluster_dump_logs; skip "the test Slurm cluster did not start"; }

timeout 240 srun -N4 --ntasks-per-node=1 --mpi=pmix -o "$agree_tmp/out-%t.txt" -e "$agree_tmp/err-%t.txt" \
	"$LLMLAUNCH" --python /usr/bin/python3 --nproc-per-node 1 --agree-timeout 60 \
	"$LL_SRCDIR/examples/train.py" --steps 2 2>"$agree_tmp/srun.err"
rc=$?
if [ $rc != 0 ]; then
	tail -n 20 "$agree_tmp"/err-*.txt "$agree_tmp/srun.err" >&2
	fail "srun exited $rc"
fi
cat "$agree_tmp"/out-*.txt | grep '^llmlaunch-example' >"$agree_tmp/lines"
[ "$(wc -l <"$agree_tmp/lines")" = 4 ] || fail "expected 4 worker lines: $(cat "$agree_tmp"/out-*.txt)"
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$agree_tmp/lines" | sort -u; }
[ "$(field world_size)" = 4 ] || fail "world sizes: $(field world_size)"
[ "$(field env_world_size)" = 4 ] || fail "WORLD_SIZE: $(field env_world_size)"
[ "$(field rank | tr '\n' ' ')" = "0 1 2 3 " ] || fail "ranks: $(field rank)"
[ "$(field master_addr)" = 127.0.0.1 ] || fail "MASTER_ADDR: $(field master_addr)"
[ "$(field master_port | wc -l)" = 1 ] || fail "MASTER_PORT differs: $(field master_port)"
[ "$(field allreduce)" = 10 ] || fail "all-reduce of rank+1 over 4 ranks is not 10: $(field allreduce)"
[ "$(field backend)" = gloo ] || fail "backend: $(field backend)"
echo "ok: 4 nodes, world size 4, all-reduce 10, master 127.0.0.1:$(field master_port)"
