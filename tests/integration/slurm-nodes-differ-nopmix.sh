#!/usr/bin/env bash
# The homogeneity check without PMIx (srun --mpi=none): node 0's check-in gathers every
# node's record and the summaries of the first node of each digest, decides as the
# PMIx path does and tells every node. One emulated node of four has its InfiniBand
# port DOWN (a per-node --fsroot): every node stops with the PMIx path's message naming
# that node and no worker starts anywhere. With all four alike, the same launch forms
# one world: every rank sees 4 and the right all-reduce, on the common data subnet.
# The nodes have a network each (tests/lib/slurm-netns-cluster.sh): their network
# digests differ, so node 0 asks several nodes for their summaries.
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
. "$LL_SRCDIR/tests/lib/slurm-netns-cluster.sh"
[ -x /usr/bin/python3 ] || skip "/usr/bin/python3 missing"
slurm_netns_test_cluster 4

ib_fsroot "$agree_tmp/good" "4: ACTIVE"
ib_fsroot "$agree_tmp/bad" "1: DOWN"

# launch: srun --mpi=none over 4 nodes, each with its node-env's fsroot (else the good one).
launch() {
	rm -f "$agree_tmp"/out-* "$agree_tmp"/err-*
	# shellcheck disable=SC2016
	slurm_netns_hub timeout 120 srun -N4 --ntasks-per-node=1 --mpi=none -o "$agree_tmp/out-%t.txt" -e "$agree_tmp/err-%t.txt" \
		"$SLURM_CLUSTER_DIR/bin/node-env" bash -c 'exec "$0" --fsroot "${LL_NODE_FSROOT:-$1}" --agree-timeout 30 \
			--python /usr/bin/python3 --nproc-per-node 1 "$2" --steps 1' "$LLMLAUNCH" "$agree_tmp/good" \
		"$LL_SRCDIR/examples/train.py" 2>"$agree_tmp/srun.err"
}

# 1. n3 differs: every node names it, as under PMIx (slurm-nodes-differ.sh).
slurm_cluster_node_env n3 LL_NODE_FSROOT="$agree_tmp/bad"
launch && fail "srun --mpi=none succeeded although n3 differs"
expect="llmlaunch: nodes differ: n3: no active RDMA port (mlx5_0 port 1 DOWN), the other 3 nodes have 1 (InfiniBand); transport socket, the other 3 nodes ib"
for t in 0 1 2 3; do
	got=$(grep '^llmlaunch: ' "$agree_tmp/err-$t.txt")
	[ "$got" = "$expect" ] || fail "task $t said: '$got' (stderr: $(cat "$agree_tmp/err-$t.txt"))"
	grep -q "^hint: fix those nodes or leave them out (srun --exclude=...: n3); nothing was started" "$agree_tmp/err-$t.txt" \
		|| fail "task $t: no hint: $(cat "$agree_tmp/err-$t.txt")"
	grep -q llmlaunch-example "$agree_tmp/out-$t.txt" && fail "task $t started a worker"
done
n=$(grep -c "task [0-3]: Exited with exit code 1" "$agree_tmp/srun.err")
[ "$n" = 4 ] || fail "expected 4 tasks to exit 1, srun says: $(cat "$agree_tmp/srun.err")"

# 2. All alike: one world of 4, checked (no note says otherwise).
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || { echo "ok: every node refused naming n3 (no torch: no world)"; exit 0; }
rm -f "$SLURM_CLUSTER_DIR/node-env/n3"
launch || { tail -n 20 "$agree_tmp"/err-*.txt "$agree_tmp/srun.err" >&2; fail "srun --mpi=none failed with all nodes alike"; }
for t in 0 1 2 3; do
	line=$(grep '^llmlaunch-example' "$agree_tmp/out-$t.txt")
	want=$(slurm_netns_data_if $((t + 1)))
	for f in "rank=$t" world_size=4 allreduce=10 backend=gloo master_addr=198.51.100.1 "gloo_ifname=$want"; do
		case " $line " in *" $f "*) ;; *) fail "task $t: no '$f' in: '$line' (stderr: $(cat "$agree_tmp/err-$t.txt"))" ;; esac
	done
	grep -q "no homogeneity check" "$agree_tmp/err-$t.txt" && fail "task $t: a note says nothing was checked"
done
echo "ok: without PMIx every node refused naming n3, and the alike nodes formed one world"
