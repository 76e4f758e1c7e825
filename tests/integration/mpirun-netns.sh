#!/usr/bin/env bash
# Open MPI's mpirun across 4 emulated nodes with a network each (the namespaces of
# tests/lib/slurm-netns-cluster.sh, without Slurm): mpirun runs in the hub namespace
# and starts one orted per node through a launcher agent that enters the node's
# namespace where it would ssh (plm_rsh_agent); Open MPI's own traffic stays on the
# management path (oob_tcp_if_include=203.0.113.0/25), the job's goes where the
# agreement says.
#   1. the agreement through mpirun's PMIx servers: one master in the data subnet,
#      each node its own interface name, the rendezvous proved;
#   2. a real gloo job, each rank on its node's interface;
#   3. n3's data link cut: the same message naming it, and no worker starts.
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
. "$LL_SRCDIR/tests/lib/slurm-netns-cluster.sh"
command -v mpirun >/dev/null || skip "mpirun (openmpi-bin) not installed"
mpirun --version 2>/dev/null | grep -q 'Open MPI' || skip "mpirun is not Open MPI"
why=$(slurm_netns_net_missing)
[ -z "$why" ] || skip "$why"
: "${LL_AGREE_TOOL:?}"
trap 'slurm_netns_stop; agree_cleanup' EXIT
slurm_netns_start_network 4 || skip "the nodes' network could not be made"
dir=$SLURM_CLUSTER_DIR id=$SLURM_NETNS_ID
printf 'n%s slots=1\n' 1 2 3 4 >"$dir/hostfile"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_plm_rsh_agent=$(slurm_netns_mpi_agent) OMPI_MCA_plm_rsh_no_tree_spawn=1
export OMPI_MCA_oob_tcp_if_include=203.0.113.0/25 OMPI_MCA_btl_tcp_if_include=203.0.113.0/25
# Open MPI 5 (Debian 13) starts its daemons through PRRTE, whose names differ.
export PRTE_MCA_plm_ssh_agent=$OMPI_MCA_plm_rsh_agent PRTE_MCA_plm_ssh_no_tree_spawn=1
export PRTE_MCA_oob_tcp_if_include=203.0.113.0/25

# mpi OUTDIR CMD...: 4 processes, one a node; each rank's output under OUTDIR/1/rank.R/
# (written by each rank itself: Open MPI 5's --output-filename fails in PMIx's IOF).
mpi() {
	local out=$1
	shift
	rm -rf "$out"
	"$dir/bin/in-node" hub timeout 120 mpirun --hostfile "$dir/hostfile" --map-by ppr:1:node -n 4 \
		"$LL_SRCDIR/tests/lib/rank-output.sh" "$out" "$@"
}

# 1. The agreement and the proof.
mpi "$agree_tmp/agree" "$LL_AGREE_TOOL" --prove --agree-timeout 20 >/dev/null 2>&1 ||
	fail "mpirun agreement failed: $(cat "$agree_tmp"/agree/1/rank.*/std* 2>/dev/null)"
for k in 1 2 3 4; do
	f=$agree_tmp/agree/1/rank.$((k - 1))/stdout
	line=$(grep '^{' "$f")
	want=$(slurm_netns_data_if "$k")
	for kv in '"backend":"pmix"' '"nnodes":4' "\"node_rank\":$((k - 1))" '"master_addr":"198.51.100.1"' \
		"\"socket_ifname\":\"$want\"" '"subnet":"198.51.100.0/25"' "\"host\":\"n$k\"" '"proved":true'; do
		case $line in *"$kv"*) ;; *) fail "rank $((k - 1)): no $kv in: $line" ;; esac
	done
done

# 2. gloo over the agreed interfaces.
if /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then
	mpi "$agree_tmp/train" "$LLMLAUNCH" --python /usr/bin/python3 --nproc-per-node 1 --agree-timeout 60 \
		"$LL_SRCDIR/examples/train.py" --steps 2 >/dev/null 2>&1 ||
		fail "mpirun launch failed: $(tail -n 5 "$agree_tmp"/train/1/rank.*/stderr 2>/dev/null)"
	for k in 1 2 3 4; do
		line=$(grep -h '^llmlaunch-example' "$agree_tmp/train/1/rank.$((k - 1))/stdout")
		want=$(slurm_netns_data_if "$k")
		for kv in world_size=4 host=n$k allreduce=10 master_addr=198.51.100.1 "gloo_ifname=$want"; do
			case " $line " in *" $kv "*) ;; *) fail "train rank $((k - 1)): no '$kv' in: $line" ;; esac
		done
	done
else
	echo "note: torch missing, launch part not run" >&2
fi

# 3. An isolated node stops the job before anything starts. mpirun ends the job at the
# first non-zero exit, so ask rank 0 (the last to decide) for the whole message.
slurm_netns_isolate n3
mpi "$agree_tmp/iso" "$LLMLAUNCH" --python /usr/bin/python3 --nproc-per-node 1 --agree-timeout 6 \
	"$LL_SRCDIR/examples/train.py" >/dev/null 2>&1 && fail "mpirun succeeded with n3 isolated"
got=$(grep -h '^llmlaunch: n3 ' "$agree_tmp"/iso/1/rank.*/stderr | sort -u)
case $got in
"llmlaunch: n3 cannot reach the master 198.51.100.1:"*" through eth0 (198.51.100.3): Connection timed out") ;;
*) fail "isolated n3: $(cat "$agree_tmp"/iso/1/rank.*/stderr)" ;;
esac
! grep -qs llmlaunch-example "$agree_tmp"/iso/1/rank.*/stdout || fail "a worker started with n3 isolated"
slurm_netns_rejoin n3

slurm_netns_stop
left=$(slurm_netns_leftovers "$dir" "$id")
[ -z "$left" ] || fail "left behind: $left"
echo "ok: mpirun across 4 namespaced nodes: agreed, proved, trained, and stopped on an isolated node"
