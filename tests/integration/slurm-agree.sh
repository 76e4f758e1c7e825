#!/usr/bin/env bash
# Agreement under a 4-node Slurm cluster on localhost: `llmlaunch env --format json`
# under srun --mpi=pmix gives every node the same world (4 nodes, one master address
# and port) and its own node rank; several llmlaunch per node is refused on every
# node with the fix; without PMIx (--mpi=none) the Slurm environment is used.
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
. "$LL_SRCDIR/tests/lib/slurm-cluster.sh"
why=$(slurm_cluster_missing)
[ -z "$why" ] || skip "$why"
trap 'slurm_cluster_stop; agree_cleanup' EXIT
slurm_cluster_start 4 || { slurm_cluster_dump_logs; skip "the test Slurm cluster did not start"; }
cd "$agree_tmp" || exit 1

# 1. PMIx: one JSON document per node, each in its own file (%t: task id).
timeout 60 srun -N4 --ntasks-per-node=1 --mpi=pmix -o "$agree_tmp/env-%t.json" -e "$agree_tmp/err-%t.txt" \
	"$LLMLAUNCH" env --format json --agree-timeout 20 || { cat "$agree_tmp"/err-*.txt >&2; fail "srun env failed"; }
ranks=""
for t in 0 1 2 3; do
	f=$agree_tmp/env-$t.json
	[ "$(json_field "$f" LLMLAUNCH_NNODES)" = 4 ] || fail "task $t: LLMLAUNCH_NNODES is not 4: $(cat "$f")"
	ranks="$ranks $(json_field "$f" LLMLAUNCH_NODE_RANK)"
	# All emulated nodes are this one host: loopback is the shared subnet.
	[ "$(json_field "$f" MASTER_ADDR)" = 127.0.0.1 ] || fail "task $t: MASTER_ADDR: $(cat "$f")"
	[ "$(json_field "$f" NCCL_SOCKET_IFNAME)" = "=lo" ] || fail "task $t: NCCL_SOCKET_IFNAME: $(cat "$f")"
	[ "$(json_field "$f" GLOO_SOCKET_IFNAME)" = lo ] || fail "task $t: GLOO_SOCKET_IFNAME: $(cat "$f")"
	ports="${ports:-} $(json_field "$f" MASTER_PORT)"
done
[ "$(echo $ranks | tr ' ' '\n' | sort -n | tr '\n' ' ')" = "0 1 2 3 " ] || fail "node ranks are not 0-3: $ranks"
[ "$(echo $ports | tr ' ' '\n' | sort -u | wc -l)" = 1 ] || fail "nodes disagree on the master port: $ports"
port=$(echo $ports | cut -d' ' -f1)
[ "$port" -gt 1023 ] && [ "$port" -lt 65536 ] || fail "master port $port out of range"
# srun gives task t to node n(t+1): launcher order is node order.
[ "$(json_field "$agree_tmp/env-2.json" LLMLAUNCH_NODE_RANK)" = 2 ] || fail "task 2 is not node rank 2"

# 2. explain shows where the values came from.
timeout 60 srun -N4 --ntasks-per-node=1 --mpi=pmix -o "$agree_tmp/explain-%t.txt" "$LLMLAUNCH" explain --agree-timeout 20 \
	|| fail "srun explain failed"
grep -q "cluster" "$agree_tmp/explain-0.txt" || fail "explain does not show cluster values: $(cat "$agree_tmp/explain-0.txt")"
grep -q "127.0.0.0/8" "$agree_tmp/explain-0.txt" || fail "explain does not name the common subnet"

# 3. Two llmlaunch per node: every task refuses, naming the fix.
timeout 60 srun -N2 -n4 --mpi=pmix "$LLMLAUNCH" env --format json --agree-timeout 20 >"$agree_tmp/two.out" 2>"$agree_tmp/two.err" \
	&& fail "two llmlaunch per node were accepted"
n=$(grep -c "^llmlaunch: 4 llmlaunch processes on 2 nodes (2 on 'n[12]'): llmlaunch runs once per node" "$agree_tmp/two.err")
[ "$n" = 4 ] || fail "expected the refusal from all 4 tasks, got $n: $(cat "$agree_tmp/two.err")"
grep -q "^hint: srun -N 2 --ntasks-per-node=1" "$agree_tmp/two.err" || fail "no --ntasks-per-node=1 hint"
[ -s "$agree_tmp/two.out" ] && fail "something was printed on stdout: $(cat "$agree_tmp/two.out")"

# 4. Without PMIx: the Slurm environment, the first host of the node list, a port from the job id.
timeout 60 srun -N4 --ntasks-per-node=1 --mpi=none -o "$agree_tmp/slurm-%t.json" -e "$agree_tmp/slurm-err-%t.txt" \
	"$LLMLAUNCH" env --format json || fail "srun --mpi=none env failed"
for t in 0 1 2 3; do
	f=$agree_tmp/slurm-$t.json
	[ "$(json_field "$f" LLMLAUNCH_NODE_RANK)" = "$t" ] || fail "slurm fallback task $t: node rank: $(cat "$f")"
	[ "$(json_field "$f" LLMLAUNCH_NNODES)" = 4 ] || fail "slurm fallback task $t: nnodes"
	[ "$(json_field "$f" MASTER_ADDR)" = n1 ] || fail "slurm fallback task $t: MASTER_ADDR is not n1: $(cat "$f")"
	p=$(json_field "$f" MASTER_PORT)
	[ "$p" -ge 20000 ] && [ "$p" -le 32767 ] || fail "slurm fallback port $p out of 20000-32767"
	grep -q "no homogeneity check here without PMIx" "$agree_tmp/slurm-err-$t.txt" || fail "no note about PMIx"
done
echo "ok: 4 nodes agreed (port $port), refusal and Slurm fallback checked"
