#!/usr/bin/env bash
# A real gloo job across 4 emulated nodes that each have a network of their own
# (tests/lib/slurm-netns-cluster.sh: eth0 on n1 and n3, ens5 on n2 and n4, a storage
# subnet on n1 and n2 only, docker0 on n2, MTU 1500 and 9000, a /32 management path),
# launched through srun --mpi=pmix and through the Slurm environment alone
# (--mpi=none). Every rank reports world size 4 and the all-reduce, a master address in
# the common data subnet (198.51.100.1, never loopback), and its own node's name for
# that subnet as GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME. Afterwards nothing of the
# cluster is left: no namespace, no process.
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
. "$LL_SRCDIR/tests/lib/slurm-netns-cluster.sh"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || skip "Debian's python3-torch is not installed"
slurm_netns_test_cluster 4
dir=$SLURM_CLUSTER_DIR id=$SLURM_NETNS_ID

# train MPI: the example over 4 nodes, one process each; checks every rank's line.
train() {
	local mpi=$1 k line want
	rm -f "$agree_tmp"/out-* "$agree_tmp"/err-*
	slurm_netns_hub timeout 240 srun -N4 --ntasks-per-node=1 --mpi="$mpi" -o "$agree_tmp/out-%t.txt" \
		-e "$agree_tmp/err-%t.txt" "$LLMLAUNCH" --python /usr/bin/python3 --nproc-per-node 1 --agree-timeout 60 \
		"$LL_SRCDIR/examples/train.py" --steps 2 2>"$agree_tmp/srun.err" || {
		tail -n 20 "$agree_tmp"/err-*.txt "$agree_tmp/srun.err" >&2
		fail "--mpi=$mpi: srun exited $?"
	}
	for k in 1 2 3 4; do
		line=$(grep '^llmlaunch-example' "$agree_tmp/out-$((k - 1)).txt")
		[ -n "$line" ] || fail "--mpi=$mpi: n$k printed no worker line: $(cat "$agree_tmp/out-$((k - 1)).txt")"
		want=$(slurm_netns_data_if "$k")
		for f in "rank=$((k - 1))" world_size=4 host=n$k allreduce=10 backend=gloo master_addr=198.51.100.1 \
			"gloo_ifname=$want" "nccl_ifname==$want"; do
			case " $line " in *" $f "*) ;; *) fail "--mpi=$mpi: n$k: no '$f' in: $line" ;; esac
		done
	done
	[ "$(sed -n 's/.* master_port=\([0-9]*\) .*/\1/p' "$agree_tmp"/out-*.txt | sort -u | wc -l)" = 1 ] ||
		fail "--mpi=$mpi: the ranks disagree on the master port: $(cat "$agree_tmp"/out-*.txt)"
}

train pmix
train none
# Without PMIx `run` checks too (node 0's check-in): no note says otherwise.
grep -q "no homogeneity check" "$agree_tmp/err-1.txt" && fail "--mpi=none: a note says nothing was checked"

# Tear-down removes everything it made.
slurm_netns_stop
left=$(slurm_netns_leftovers "$dir" "$id")
[ -z "$left" ] || fail "left behind: $left"
echo "ok: gloo over 4 namespaced nodes through PMIx and the Slurm environment, each on its own interface"
