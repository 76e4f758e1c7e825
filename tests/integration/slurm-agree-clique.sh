#!/usr/bin/env bash
# Multi-node NVLink on the emulated 4-node Slurm cluster: the fake NVML gives every
# node's 8 GPUs a clique (n1, n3: clique 1; n2, n4: clique 2; one NVLink domain).
# Under srun --mpi=pmix the node ranks put each clique's nodes together (n1 n3 n2 n4),
# LLMLAUNCH_NVLINK_DOMAIN is a clique's 16 GPUs, and explain shows the domain, the
# order and the advice. Then each verdict's exact message: a clique only partly in
# the job, and a node whose fabric registration has not completed.
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
. "$LL_SRCDIR/tests/lib/slurm-cluster.sh"
why=$(slurm_cluster_missing)
[ -z "$why" ] || skip "$why"
: "${LL_FAKE_NVML:?run through ctest}"
trap 'slurm_cluster_stop; agree_cleanup' EXIT
slurm_cluster_start 4 || { slurm_cluster_dump_logs; skip "the test Slurm cluster did not start"; }
cd "$agree_tmp" || exit 1

# A DGX-like tree (8 GPUs 10de:2330) with one IMEX channel.
root=$agree_tmp/root
bash "$LL_FIXTURES/gen-dgx-sysfs.sh" "$root"
mkdir -p "$root/dev/nvidia-caps-imex-channels"
: >"$root/dev/nvidia-caps-imex-channels/channel0"
export LLMLAUNCH_NVML_LIBRARY=$LL_FAKE_NVML
unset FAKE_NVML_SCENARIO

# node_env NODE VAR=VALUE...: this node's environment for the next run, replacing the last.
node_env() {
	local node=$1
	shift
	mkdir -p "$SLURM_CLUSTER_DIR/node-env"
	printf '%s\n' "$@" >"$SLURM_CLUSTER_DIR/node-env/$node"
}
cliques() { # cliques C1 C2 C3 C4: the clique id of n1..n4
	local i=1 c
	for c in "$@"; do
		node_env "n$i" FAKE_NVML_FABRIC_CLIQUE="$c"
		i=$((i + 1))
	done
}
# run_nodes N TAG CMD...: llmlaunch CMD on N nodes, stdout/stderr of task t in TAG-t.{out,err}
run_nodes() {
	local n=$1 tag=$2
	shift 2
	timeout 90 srun -N"$n" --ntasks-per-node=1 --mpi=pmix -o "$agree_tmp/$tag-%t.out" -e "$agree_tmp/$tag-%t.err" \
		"$SLURM_CLUSTER_DIR/bin/node-env" "$LLMLAUNCH" "$@" --fsroot "$root" --agree-timeout 30
}

# 1. Two cliques of two, interleaved in Slurm's order.
cliques 1 2 1 2
run_nodes 4 env env --format json || { cat "$agree_tmp"/env-*.err >&2; fail "srun env failed"; }
want_rank=(0 2 1 3) # task t runs on n(t+1): n1 n3 first, then n2 n4
for t in 0 1 2 3; do
	f=$agree_tmp/env-$t.out
	[ "$(json_field "$f" LLMLAUNCH_NODE_RANK)" = "${want_rank[$t]}" ] ||
		fail "task $t (n$((t + 1))): node rank $(json_field "$f" LLMLAUNCH_NODE_RANK), expected ${want_rank[$t]}"
	[ "$(json_field "$f" LLMLAUNCH_NVLINK_DOMAIN)" = 16 ] ||
		fail "task $t: LLMLAUNCH_NVLINK_DOMAIN is '$(json_field "$f" LLMLAUNCH_NVLINK_DOMAIN)', expected 16"
	[ ! -s "$agree_tmp/env-$t.err" ] || fail "task $t said something: $(cat "$agree_tmp/env-$t.err")"
done
# Rank 0 is n1, and the master is n1's.
[ "$(json_field "$agree_tmp/env-0.out" MASTER_PORT)" = "$(json_field "$agree_tmp/env-2.out" MASTER_PORT)" ] ||
	fail "n1 and n3 disagree on the master port"

run_nodes 4 explain explain || fail "srun explain failed"
e=$agree_tmp/explain-0.out
grep -q "NVLink domain of 16 GPUs across nodes (multi-node NVLink)" "$e" || fail "explain lacks the domain: $(cat "$e")"
grep -q "tensor x expert parallel size at most 16" "$e" || fail "explain lacks the advice: $(cat "$e")"
grep -q "n1, n3, n2, n4" "$e" || fail "explain lacks the node order: $(cat "$e")"
grep -q "GPUs of the smallest of the job's 2 NVLink cliques (NVLink clique 1 of domain c1000000-0000-0000-0000-000000000001, 2 nodes): multi-node NVLink" "$e" ||
	fail "explain lacks the domain's reason: $(cat "$e")"

# 2. A clique only partly in the job: 3 nodes, n2 alone in clique 2.
run_nodes 3 part env --format json || { cat "$agree_tmp"/part-*.err >&2; fail "srun (3 nodes) failed"; }
expect="llmlaunch: warning: n2: only 8 GPUs of NVLink clique 2 of domain c1000000-0000-0000-0000-000000000001 are in this job, 16 of the other clique: LLMLAUNCH_NVLINK_DOMAIN is 8, the smallest clique's; ask for whole cliques so that tensor parallelism of the largest size stays on NVLink"
for t in 0 1 2; do
	got=$(grep '^llmlaunch: ' "$agree_tmp/part-$t.err")
	[ "$got" = "$expect" ] || fail "partial clique, task $t said: '$got'"
	[ "$(json_field "$agree_tmp/part-$t.out" LLMLAUNCH_NVLINK_DOMAIN)" = 8 ] || fail "partial clique, task $t: domain"
done

# 3. n3's fabric registration still in progress: every node names it, no domain across nodes.
cliques 1 2 1 2
echo FAKE_NVML_FABRIC_STATE=2 >>"$SLURM_CLUSTER_DIR/node-env/n3"
run_nodes 4 state env --format json || { cat "$agree_tmp"/state-*.err >&2; fail "srun (fabric state) failed"; }
expect="llmlaunch: warning: n3: NVLink fabric registration not completed (in progress or not started), the other 3 nodes completed it: NCCL uses multi-node NVLink only when every GPU of the job has, so the whole job would use the network between nodes"
for t in 0 1 2 3; do
	got=$(grep '^llmlaunch: ' "$agree_tmp/state-$t.err" | grep -v 'MNNVL: ')
	[ "$got" = "$expect" ] || fail "fabric state, task $t said: '$got'"
	[ "$(json_field "$agree_tmp/state-$t.out" LLMLAUNCH_NVLINK_DOMAIN)" = 8 ] || fail "fabric state, task $t: domain"
done
# ... and under --strict it stops every node.
run_nodes 4 strict env --format json --strict && fail "--strict accepted a node whose registration is pending"
grep -q "^llmlaunch: nodes differ: n3: NVLink fabric registration not completed (in progress or not started), the other 3 nodes completed it: .* (an error under --strict)$" "$agree_tmp/strict-0.err" ||
	fail "--strict: $(cat "$agree_tmp/strict-0.err")"
echo "ok: clique order n1 n3 n2 n4, domain 16, both verdicts"
