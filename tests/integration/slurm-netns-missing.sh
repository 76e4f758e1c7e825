#!/usr/bin/env bash
# A node that never arrives, on 4 emulated nodes with a network each
# (tests/lib/slurm-netns-cluster.sh): n4's llmlaunch starts 10 s late, the others give
# up at --agree-timeout 6 (room for a slow PMIx server) and name it, and while they
# wait their log shows one status line naming it. Nothing hangs: srun ends well
# before its own 60 s limit.
#   1. srun --mpi=pmix: the others check in with rank 0 (by name, without waiting for
#      the PMIx fence), which counts who is there and tells them who is not;
#   2. --mpi=none: the others check in with rank 0 with their record (the agreement
#      without PMIx); rank 0 tells the others who is missing, then names them.
# n4 itself, late, gives up too: nobody answers it any more.
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
. "$LL_SRCDIR/tests/lib/slurm-netns-cluster.sh"
[ -x /usr/bin/python3 ] || skip "/usr/bin/python3 missing"
slurm_netns_test_cluster 4
slurm_cluster_node_env n4 LL_DELAY=10

launch() { # MPI
	local start=$SECONDS rc
	rm -f "$agree_tmp"/out-* "$agree_tmp"/err-*
	# shellcheck disable=SC2016
	slurm_netns_hub timeout 60 srun -N4 --ntasks-per-node=1 --mpi="$1" -o "$agree_tmp/out-%t.txt" \
		-e "$agree_tmp/err-%t.txt" "$SLURM_CLUSTER_DIR/bin/node-env" bash -c 'sleep "${LL_DELAY:-0}"; exec "$@"' \
		sh "$LLMLAUNCH" --python /usr/bin/python3 --nproc-per-node 1 --agree-timeout 6 \
		"$LL_SRCDIR/examples/train.py" 2>"$agree_tmp/srun.err"
	rc=$?
	took=$((SECONDS - start))
	[ $rc = 124 ] && fail "--mpi=$1: srun hung until the test's own timeout"
	[ $rc != 0 ] || fail "--mpi=$1: srun succeeded although n4 never arrived"
	[ "$(grep -c "task [0-3]: Exited with exit code 1" "$agree_tmp/srun.err")" = 4 ] ||
		fail "--mpi=$1: expected 4 tasks to exit 1: $(cat "$agree_tmp/srun.err")"
	! grep -q llmlaunch-example "$agree_tmp"/out-*.txt || fail "--mpi=$1: a worker started"
}

message() { agree_message "$agree_tmp/err-$1.txt"; }

check() { # MPI EXPECTED-MESSAGE EXPECTED-STATUS
	local t got
	for t in 0 1 2; do
		got=$(message "$t")
		[ "$got" = "$2" ] || fail "--mpi=$1: task $t said '$got', expected '$2'"
		grep -q -- "^$3\$" "$agree_tmp/err-$t.txt" || fail "--mpi=$1: task $t showed no status '$3': $(cat "$agree_tmp/err-$t.txt")"
	done
}

launch pmix
check pmix "llmlaunch: agreement timed out after 6 s: 1 of 4 nodes did not arrive: n4" \
	"llmlaunch: waiting for 1 of 4 nodes: n4"
grep -q -- "--agree-timeout (6 s)" "$agree_tmp/err-0.txt" || fail "no hint about --agree-timeout"
grep -q '^llmlaunch: agreement timed out after 6 s' "$agree_tmp/err-3.txt" || fail "n4 did not time out: $(cat "$agree_tmp/err-3.txt")"
echo "pmix: named n4; srun took $took s"

launch none
port=$(agree_port_of 198.51.100.1 "$agree_tmp/err-0.txt")
check none "llmlaunch: 1 of 4 nodes did not reach the master 198.51.100.1:$port within 6 s: n4" \
	"llmlaunch: waiting for 1 of 4 nodes: n4"
got=$(message 3)
[ "$got" = "llmlaunch: n4 cannot reach the master 198.51.100.1:$port through ens5 (198.51.100.4): Connection refused" ] ||
	fail "n4 said: '$got'"
echo "ok: a node that never arrives is named, through PMIx and without it; srun took $took s"
