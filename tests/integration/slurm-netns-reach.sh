#!/usr/bin/env bash
# The rendezvous is proved before torchrun starts, on 4 emulated nodes with a network
# each (tests/lib/slurm-netns-cluster.sh). Every node connects to rank 0 on the agreed
# master address and port through its interface; when one cannot, every node says
# which, through which interface and from which address, and nothing starts:
#   1. n3's data link is cut from the bridge (its address stays): srun --mpi=pmix
#   2. the same without PMIx (--mpi=none): n3 says what it tried, the others name it
#   3. a failing interface choice: NCCL_SOCKET_IFNAME=eth0 GLOO_SOCKET_IFNAME=eth0 exported
#      for the whole job, but n2 and n4 call their interface ens5
#   4. no common subnet: n4 has no address in the data subnet; the agreement says so
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
. "$LL_SRCDIR/tests/lib/slurm-netns-cluster.sh"
[ -x /usr/bin/python3 ] || skip "/usr/bin/python3 missing"
slurm_netns_test_cluster 4

# launch MPI [VAR=VALUE...]: `llmlaunch train.py` on 4 nodes, which must fail on all.
launch() {
	local mpi=$1 start=$SECONDS
	shift
	rm -f "$agree_tmp"/out-* "$agree_tmp"/err-*
	slurm_netns_hub env "$@" timeout 60 srun -N4 --ntasks-per-node=1 --mpi="$mpi" -o "$agree_tmp/out-%t.txt" \
		-e "$agree_tmp/err-%t.txt" "$LLMLAUNCH" --python /usr/bin/python3 --nproc-per-node 1 --agree-timeout 6 \
		"$LL_SRCDIR/examples/train.py" --steps 2 2>"$agree_tmp/srun.err" && fail "--mpi=$mpi: srun succeeded"
	if [ $((SECONDS - start)) -ge 40 ]; then
		slurm_netns_hub sinfo -N -l >&2 || true
		slurm_cluster_dump_logs
		fail "--mpi=$mpi: took $((SECONDS - start)) s: $(tail -n 4 "$agree_tmp"/err-*.txt "$agree_tmp/srun.err" 2>&1)"
	fi
	[ "$(grep -c "task [0-3]: Exited with exit code 1" "$agree_tmp/srun.err")" = 4 ] ||
		fail "--mpi=$mpi: not every task exited 1: $(cat "$agree_tmp/srun.err")"
	! grep -q llmlaunch-example "$agree_tmp"/out-*.txt || fail "--mpi=$mpi: a worker started"
}

message() { agree_message "$agree_tmp/err-$1.txt"; }

# The master port is the job's: read it from one message, then compare whole lines.
port_in() { agree_port_of 198.51.100.1 "$agree_tmp/err-$1.txt"; }

expect_all() { # TASKS EXPECTED-LINE
	local t got
	for t in $1; do
		got=$(message "$t")
		[ "$got" = "$2" ] || fail "task $t said '$got', expected '$2' (stderr: $(cat "$agree_tmp/err-$t.txt"))"
	done
}

# 1. PMIx: one message on every node, with n3's interface and address.
slurm_netns_isolate n3
launch pmix
port=$(port_in 0)
expect_all "0 1 2 3" "llmlaunch: n3 cannot reach the master 198.51.100.1:$port through eth0 (198.51.100.3): Connection timed out"
grep -q "^hint: nothing was started: .*(srun --exclude=n3)" "$agree_tmp/err-0.txt" || fail "no hint: $(cat "$agree_tmp/err-0.txt")"
grep -q "^llmlaunch: waiting for 1 of 4 nodes to reach the master: n3" "$agree_tmp/err-0.txt" ||
	fail "rank 0 showed no status line: $(cat "$agree_tmp/err-0.txt")"

# 2. Without PMIx only n3 knows what it tried; rank 0 and the others name it.
launch none
port=$(port_in 0)
expect_all 2 "llmlaunch: n3 cannot reach the master 198.51.100.1:$port through eth0 (198.51.100.3): Connection timed out"
expect_all "0 1 3" "llmlaunch: 1 of 4 nodes did not reach the master 198.51.100.1:$port within 6 s: n3"
slurm_netns_rejoin n3

# 3. The user's interface for the job wins over the agreed one, and is what is proved.
launch pmix NCCL_SOCKET_IFNAME=eth0 GLOO_SOCKET_IFNAME=eth0
port=$(port_in 0)
expect_all "0 1 2 3" "llmlaunch: n2 cannot reach the master 198.51.100.1:$port through eth0: no such interface on this node; n4 cannot reach the master 198.51.100.1:$port through eth0: no such interface on this node"
grep -q "^hint: .*(srun --exclude=n2,n4)" "$agree_tmp/err-3.txt" || fail "no hint naming n2,n4: $(cat "$agree_tmp/err-3.txt")"

# 4. No subnet every node has: routers might join them, so each node takes its route to
# node 0's address; n4 has none (its data address is gone), and every node names it.
slurm_netns_data_addr n4 del
launch pmix
port=$(port_in 0)
expect_all "0 1 2 3" "llmlaunch: n4 cannot reach the master 198.51.100.1:$port: Network is unreachable"
slurm_netns_data_addr n4 add
# A name slurmctld cannot resolve holds it 10 s and keeps nodes completing after a job.
unresolved=$(grep "Unable to resolve" "$SLURM_CLUSTER_DIR/log/slurmctld.log" | head -3)
[ -z "$unresolved" ] || fail "slurmctld could not resolve a name: $unresolved"
echo "ok: an isolated node, a wrong interface and a node without a route to node 0 each stop every node with the same message"
