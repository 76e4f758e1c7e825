#!/usr/bin/env bash
# The Slurm Prolog and TaskProlog on a real 4-node Slurm cluster on localhost
# (tests/lib/slurm-cluster.sh). All emulated nodes are this host, so small wrapper
# scripts give each node its own fake /sys (--fsroot) and state directory:
#   n1  healthy                      -> runs jobs; tasks get the planned NCCL variables
#   n2  one InfiniBand port DOWN     -> drained, the fault itself in `sinfo -R`
#   n3  one GPU, no nvidia_peermem   -> drained; --no-drain-reason: Slurm's "Prolog error",
#                                       our line in slurmd's log
#   n4  healthy, but its Prolog names a missing profile (an llmlaunch problem) -> not drained
set -u
. "$LL_SRCDIR/tests/integration/slurm-prolog-common.bash"
. "$LL_SRCDIR/tests/lib/slurm-cluster.sh"
why=$(slurm_cluster_missing)
[ -z "$why" ] && [ "$(id -u)" = 0 ] || skip "${why:-not root}"
trap 'slurm_cluster_stop; sp_cleanup' EXIT
for v in $(env | sed -n 's/^\(NCCL_[A-Z_]*\)=.*/\1/p; s/^\(LLMLAUNCH_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done

sp_node "$sp_tmp/fs-n1" 2 up yes
sp_node "$sp_tmp/fs-n2" 2 down yes
sp_node "$sp_tmp/fs-n3" 1 up no
sp_node "$sp_tmp/fs-n4" 2 up yes
sp_expect_profile "$sp_tmp/expect.yaml"

# Slurm runs Prolog= and TaskProlog= without arguments (and the Prolog without PATH):
# sites use a two-line wrapper like these (docs/slurm.md).
cat >"$sp_tmp/prolog.sh" <<EOF
#!/bin/sh
extra=
case "\$SLURMD_NODENAME" in
n3) extra=--no-drain-reason ;;
n4) extra="--profile $sp_tmp/missing.yaml" ;;
esac
exec "$LLMLAUNCH" slurm prolog --timeout 20 --state-dir "$sp_tmp/state-\$SLURMD_NODENAME" \\
	--fsroot "$sp_tmp/fs-\$SLURMD_NODENAME" --profile "$sp_tmp/expect.yaml" \$extra
EOF
cat >"$sp_tmp/task-prolog.sh" <<EOF
#!/bin/sh
exec "$LLMLAUNCH" slurm task-prolog --state-dir "$sp_tmp/state-\$SLURMD_NODENAME"
EOF
chmod 755 "$sp_tmp/prolog.sh" "$sp_tmp/task-prolog.sh"

slurm_cluster_conf "Prolog=$sp_tmp/prolog.sh" "PrologFlags=Alloc" "TaskProlog=$sp_tmp/task-prolog.sh" \
	"PrologEpilogTimeout=60"
slurm_cluster_start 4 || { slurm_cluster_dump_logs; skip "the test Slurm cluster did not start"; }
cd "$sp_tmp" || exit 1

reason() { sinfo -h -N -n "$1" -o '%100E' | sed 's/ *$//'; }
state() { sinfo -h -N -n "$1" -o '%t' | sed 's/ *$//'; }

# 1. n1 is healthy: the job runs, and its task sees the exported NCCL variables.
show='echo "HCA=$NCCL_IB_HCA IF=$NCCL_SOCKET_IFNAME GDR=$NCCL_NET_GDR_LEVEL GPUS=$LLMLAUNCH_GPUS_PER_NODE NN=$LLMLAUNCH_NNODES RANK=$LLMLAUNCH_NODE_RANK"'
out=$(timeout 60 srun -w n1 -N1 -n1 sh -c "$show" 2>err.txt) || { slurm_cluster_dump_logs; fail "job on healthy n1 failed: $(cat err.txt)"; }
[ "$out" = "HCA==mlx5_0:1,mlx5_1:1 IF==ib0 GDR=PHB GPUS=2 NN=1 RANK=0" ] || fail "n1 task environment: $out"
[ "$(stat -c %a state-n1/snapshot.xml)" = 644 ] || fail "n1: the Prolog left no readable snapshot"
[ "$(state n1)" = idle ] || [ "$(state n1)" = mix ] || [ "$(state n1)" = alloc ] || fail "n1 is $(state n1)"

# 2. n2's port is down: the Prolog fails, Slurm drains n2, and sinfo -R names the fault.
timeout 60 srun -w n2 -N1 -n1 true >out.txt 2>&1 && fail "a job ran on n2 with a port down"
want="llmlaunch: expected at least 2 active InfiniBand RDMA ports, found 1 (mlx5_1:1 DOWN)"
deadline=$((SECONDS + 20))
while [ "$(state n2)" != drain ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
[ "$(state n2)" = drain ] || fail "n2 is '$(state n2)', not drained"
[ "$(reason n2)" = "$want" ] || fail "n2 drain reason: '$(reason n2)', expected '$want'"
sinfo -R | grep -q "llmlaunch: expected" || fail "sinfo -R does not show the reason: $(sinfo -R)"

# 3. n3 lacks a GPU and GPUDirect RDMA, and its Prolog does not call scontrol: Slurm's
#    own reason, and the one fault line in slurmd's log (22.05 logs a failed Prolog's output).
timeout 60 srun -w n3 -N1 -n1 true >out.txt 2>&1 && fail "a job ran on n3 with a GPU missing"
deadline=$((SECONDS + 20))
while [ "$(state n3)" != drain ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
[ "$(state n3)" = drain ] || fail "n3 is '$(state n3)', not drained"
[ "$(reason n3)" = "Prolog error" ] || fail "n3 drain reason: '$(reason n3)'"
grep -qF "llmlaunch: node 'n3' fails its expectations (test-expect): expected 2 GPUs, found 1; GPUDirect RDMA is required but neither nvidia_peermem nor nv_peer_mem is loaded, and DMA-BUF is not usable" \
	"$SLURM_CLUSTER_DIR/log/slurmd-n3.log" || fail "slurmd-n3.log lacks the fault line: $(grep -i prolog "$SLURM_CLUSTER_DIR/log/slurmd-n3.log")"

# 4. n4's Prolog cannot find a profile: llmlaunch's problem, not the node's. Not drained;
#    the job runs. Both healthy nodes in one job: the tasks learn the job's shape.
out=$(timeout 60 srun -w n1,n4 -N2 --ntasks-per-node=1 sh -c "$show" 2>err.txt) ||
	{ slurm_cluster_dump_logs; fail "job on n1,n4 failed: $(cat err.txt)"; }
[ "$(echo "$out" | sort)" = "$(printf '%s\n' "HCA==mlx5_0:1,mlx5_1:1 IF==ib0 GDR=PHB GPUS=2 NN=2 RANK=0" \
	"HCA==mlx5_0:1,mlx5_1:1 IF==ib0 GDR=PHB GPUS=2 NN=2 RANK=1")" ] || fail "n1,n4 task environments: $out"
[ "$(state n4)" != drain ] || fail "n4 was drained for a missing profile: $(reason n4)"
[ -s state-n4/snapshot.xml ] || fail "n4: no snapshot although the probe worked"

# 5. A drained node back in service runs jobs again once fixed (the Prolog re-checks).
sp_node "$sp_tmp/fs-n2-fixed" 2 up yes
rm -rf "$sp_tmp/fs-n2" && mv "$sp_tmp/fs-n2-fixed" "$sp_tmp/fs-n2"
scontrol update NodeName=n2 State=RESUME || fail "cannot resume n2"
out=$(timeout 60 srun -w n2 -N1 -n1 sh -c "$show" 2>err.txt) || fail "job on repaired n2 failed: $(cat err.txt)"
[ "$out" = "HCA==mlx5_0:1,mlx5_1:1 IF==ib0 GDR=PHB GPUS=2 NN=1 RANK=0" ] || fail "n2 task environment: $out"
echo "ok: healthy nodes run jobs with the NCCL variables; faulty nodes drained with their reason"
