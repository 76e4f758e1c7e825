#!/usr/bin/env bash
# `llmlaunch slurm prolog` and `slurm task-prolog` run by hand, as Slurm would run
# them but without a cluster: exit codes (1 only for node faults), the one fault
# line, the drain-reason call (a recording scontrol), the state directory (modes,
# atomic replacement), the deadline (a FIFO in the fake /sys blocks the probe), and
# the TaskProlog protocol (exports, newline values left out, print lines).
set -u
. "$LL_SRCDIR/tests/integration/slurm-prolog-common.bash"
trap sp_cleanup EXIT
cd "$sp_tmp" || exit 1
unset SLURMD_NODENAME SLURM_LOCALID SLURM_NODEID SLURM_STEP_NUM_NODES SLURM_JOB_NUM_NODES SLURM_STEP_GPUS SLURM_JOB_GPUS
for v in $(env | sed -n 's/^\(NCCL_[A-Z_]*\)=.*/\1/p; s/^\(CUDA_VISIBLE_DEVICES\)=.*/\1/p'); do unset "$v"; done

sp_node fs-ok 2 up yes
sp_node fs-port 2 down yes
sp_node fs-gpu 1 up no
sp_expect_profile expect.yaml
P=("$LLMLAUNCH" slurm prolog --profile "$sp_tmp/expect.yaml" --no-drain-reason)

# 1. A healthy node: exit 0, a snapshot readable by everyone in a 0755 directory.
out=$("${P[@]}" --state-dir "$sp_tmp/state" --fsroot fs-ok 2>err.txt) || fail "healthy node: exit $?: $(cat err.txt)"
[ -s err.txt ] && fail "healthy node wrote on stderr: $(cat err.txt)"
[[ $out == "llmlaunch: node 'this node' passes: 4 of 4 expectation(s) checked, 0 fault(s); 2 GPU(s), snapshot $sp_tmp/state/snapshot.xml; expectations from test-expect" ]] ||
	fail "healthy node summary: $out"
[ "$(stat -c %a state)" = 755 ] || fail "state directory mode $(stat -c %a state)"
[ "$(stat -c %a state/snapshot.xml)" = 644 ] || fail "snapshot mode $(stat -c %a state/snapshot.xml)"
grep -q 'mlx5_1' state/snapshot.xml || fail "the snapshot does not hold the probed HCAs"

# 2. Saved again: replaced by rename (a new inode), no temporary file left behind.
ino=$(stat -c %i state/snapshot.xml)
"${P[@]}" --state-dir "$sp_tmp/state" --fsroot fs-ok >/dev/null 2>&1 || fail "second healthy run failed"
[ "$(stat -c %i state/snapshot.xml)" != "$ino" ] || fail "the snapshot was rewritten in place, not renamed"
[ "$(ls -A state)" = snapshot.xml ] || fail "state directory holds more than the snapshot: $(ls -A state)"

# 3. A port down: exit 1, the fault as the last stderr line, naming node, profile and port.
SLURMD_NODENAME=n2 "${P[@]}" --state-dir "$sp_tmp/state2" --fsroot fs-port >out.txt 2>err.txt
rc=$?
[ $rc = 1 ] || fail "port down: exit $rc, expected 1: $(cat err.txt)"
want="llmlaunch: node 'n2' fails its expectations (test-expect): expected at least 2 active InfiniBand RDMA ports, found 1 (mlx5_1:1 DOWN)"
[ "$(tail -n1 err.txt)" = "$want" ] || fail "port down: stderr is not the fault line: $(cat err.txt)"
[ -s state2/snapshot.xml ] || fail "a faulty node's snapshot was not saved"

# 4. Two faults at once, joined on the one line.
SLURMD_NODENAME=n3 "${P[@]}" --state-dir "$sp_tmp/state3" --fsroot fs-gpu >/dev/null 2>err.txt && fail "missing GPU passed"
want="llmlaunch: node 'n3' fails its expectations (test-expect): expected 2 GPUs, found 1; GPUDirect RDMA is required but neither nvidia_peermem nor nv_peer_mem is loaded, and DMA-BUF is not usable"
[ "$(tail -n1 err.txt)" = "$want" ] || fail "GPU and GDR faults: $(cat err.txt)"

# 5. The drain reason: scontrol is run without a shell, with the fault as the reason.
cat >fake-scontrol <<EOF
#!/bin/sh
printf '%s\n' "\$@" >"$sp_tmp/scontrol-args"
EOF
chmod 755 fake-scontrol
SLURMD_NODENAME=n2 "$LLMLAUNCH" slurm prolog --profile "$sp_tmp/expect.yaml" --scontrol "$sp_tmp/fake-scontrol" \
	--state-dir "$sp_tmp/state2" --fsroot fs-port >/dev/null 2>err.txt && fail "port down passed with --scontrol"
printf '%s\n' update NodeName=n2 State=DRAIN \
	"Reason=llmlaunch: expected at least 2 active InfiniBand RDMA ports, found 1 (mlx5_1:1 DOWN)" >want-args
cmp -s want-args scontrol-args || fail "scontrol got: $(cat scontrol-args 2>&1)"
# Without SLURMD_NODENAME (run by hand) there is no node to name: no scontrol call.
rm -f scontrol-args
"$LLMLAUNCH" slurm prolog --profile "$sp_tmp/expect.yaml" --scontrol "$sp_tmp/fake-scontrol" \
	--state-dir "$sp_tmp/state2" --fsroot fs-port >/dev/null 2>&1
[ $? = 1 ] || fail "port down by hand: not exit 1"
[ -e scontrol-args ] && fail "scontrol was called without SLURMD_NODENAME"
# An scontrol that is not there costs the reason, not the verdict.
SLURMD_NODENAME=n2 "$LLMLAUNCH" slurm prolog --profile "$sp_tmp/expect.yaml" --scontrol /nonexistent/scontrol \
	--state-dir "$sp_tmp/state2" --fsroot fs-port >/dev/null 2>err.txt
[ $? = 1 ] || fail "missing scontrol changed the exit status"
grep -q "no scontrol found at /nonexistent/scontrol" err.txt || fail "no warning about the missing scontrol: $(cat err.txt)"

# 5b. Multi-node NVLink (no profile needed): a GPU whose fabric registration failed,
#     and IMEX channels gone from a node that had them this boot, drain the node with
#     that reason. The fake NVML answers for the DGX-like tree's 8 GPUs.
bash "$LL_FIXTURES/gen-dgx-sysfs.sh" fs-nvl
mkdir -p fs-nvl/dev/nvidia-caps-imex-channels
: >fs-nvl/dev/nvidia-caps-imex-channels/channel0
printf 'name: test-nvl\nexpect:\n  gpus: 8\n' >nvl.yaml
NV=(env LLMLAUNCH_NVML_LIBRARY="$LL_FAKE_NVML" FAKE_NVML_FABRIC_CLIQUE=1 SLURMD_NODENAME=n5 "$LLMLAUNCH" slurm prolog
	--profile "$sp_tmp/nvl.yaml" --scontrol "$sp_tmp/fake-scontrol" --state-dir "$sp_tmp/state-nvl" --fsroot fs-nvl)
rm -f scontrol-args
"${NV[@]}" >/dev/null 2>err.txt || fail "healthy NVLink node: exit $?: $(cat err.txt)"
[ -e scontrol-args ] && fail "a healthy NVLink node was drained: $(cat scontrol-args)"
[ "$(cat state-nvl/imex-channels)" = 1 ] || fail "the IMEX channel count was not remembered"
FAKE_NVML_FABRIC_GPU=2 FAKE_NVML_FABRIC_STATUS=999 "${NV[@]}" >/dev/null 2>err.txt && fail "failed registration passed"
printf '%s\n' update NodeName=n5 State=DRAIN \
	"Reason=llmlaunch: NVLink fabric registration failed on GPU 0000:52:00.0 (NVML status 999)" >want-args
cmp -s want-args scontrol-args || fail "failed registration: scontrol got: $(cat scontrol-args 2>&1)"
rm fs-nvl/dev/nvidia-caps-imex-channels/channel0
"${NV[@]}" >/dev/null 2>err.txt && fail "missing IMEX channels passed"
printf '%s\n' update NodeName=n5 State=DRAIN \
	"Reason=llmlaunch: IMEX channels missing: /dev/nvidia-caps-imex-channels had 1 this boot, now none" >want-args
cmp -s want-args scontrol-args || fail "missing IMEX channels: scontrol got: $(cat scontrol-args 2>&1)"
# A registration still under way is a note, never a drain.
rm -f scontrol-args state-nvl/imex-channels
FAKE_NVML_FABRIC_STATE=2 "${NV[@]}" >/dev/null 2>err.txt || fail "registration in progress drained: $(cat err.txt)"
[ -e scontrol-args ] && fail "registration in progress: scontrol called: $(cat scontrol-args)"
# Slurm's switch/nvidia_imex (slurmd sets SLURM_CONF for its Prolog) empties the host's
# channel directory and makes each job its own channel: no drain, and a note says why.
echo 1 >state-nvl/imex-channels
printf 'ClusterName=c\nSwitchType=switch/nvidia_imex\n' >slurm-imex.conf
SLURM_CONF="$sp_tmp/slurm-imex.conf" "${NV[@]}" >/dev/null 2>err.txt ||
	fail "switch/nvidia_imex: the emptied channel directory drained the node: $(cat err.txt)"
[ -e scontrol-args ] && fail "switch/nvidia_imex: scontrol called: $(cat scontrol-args)"
grep -qF "IMEX channels are Slurm's (SwitchType=switch/nvidia_imex)" err.txt ||
	fail "switch/nvidia_imex: no note: $(cat err.txt)"

# 6. Problems of llmlaunch itself never drain: a missing profile, a bad option, an
#    unwritable state directory, a probe that hangs.
"${P[@]}" --state-dir "$sp_tmp/state" --fsroot fs-port --profile "$sp_tmp/missing.yaml" >/dev/null 2>err.txt ||
	fail "a missing profile drained the node (exit $?)"
grep -q "cannot read profile '$sp_tmp/missing.yaml'.*not draining" err.txt || fail "missing profile message: $(cat err.txt)"
"$LLMLAUNCH" slurm prolog --no-such-option >/dev/null 2>err.txt || fail "a usage error drained the node"
grep -q "unknown option '--no-such-option'" err.txt || fail "usage error message: $(cat err.txt)"
"$LLMLAUNCH" slurm prolog --timeout 0 >/dev/null 2>err.txt || fail "a bad --timeout drained the node"
"${P[@]}" --state-dir /proc/no/such/dir --fsroot fs-ok >/dev/null 2>err.txt || fail "an unwritable state dir drained the node"
grep -q "cannot create state directory '/proc/no/such/dir'" err.txt || fail "state dir message: $(cat err.txt)"

# A FIFO where an attribute hwloc reads should be: opening it blocks forever, as a
# wedged driver's attribute can. The prolog must give up at its deadline and exit 0.
cp -a fs-ok fs-hang
rm -f fs-hang/proc/meminfo
mkfifo fs-hang/proc/meminfo
start=$(date +%s%N)
timeout 30 "${P[@]}" --state-dir "$sp_tmp/state-hang" --fsroot fs-hang --timeout 2 >/dev/null 2>err.txt
rc=$?
took_ms=$((($(date +%s%N) - start) / 1000000))
[ $rc = 0 ] || fail "hanging probe: exit $rc (124: the prolog itself hung): $(cat err.txt)"
grep -q "probe did not finish within 2 s and was killed: not draining node 'this node'" err.txt ||
	fail "hanging probe message: $(cat err.txt)"
[ $took_ms -lt 5000 ] || fail "hanging probe took $took_ms ms with --timeout 2"

# 7. task-prolog from the saved snapshot (this machine has no GPUs: 2 GPUs prove the
#    snapshot was used), with the step's GPUs and the job's node count and rank.
"${P[@]}" --state-dir "$sp_tmp/state" --fsroot fs-ok >/dev/null 2>&1 || fail "healthy node failed"
SLURM_STEP_GPUS=1 SLURM_STEP_NUM_NODES=3 SLURM_NODEID=1 SLURM_LOCALID=0 \
	"$LLMLAUNCH" slurm task-prolog --state-dir "$sp_tmp/state" >tp.txt 2>err.txt || fail "task-prolog: exit $?"
for line in 'export NCCL_IB_HCA==mlx5_0:1,mlx5_1:1' 'export CUDA_VISIBLE_DEVICES=1' 'export LLMLAUNCH_NNODES=3' \
	'export LLMLAUNCH_NODE_RANK=1' 'export LLMLAUNCH_GPUS_PER_NODE=1' 'export NCCL_SOCKET_IFNAME==ib0'; do
	grep -qxF -- "$line" tp.txt || fail "task-prolog lacks '$line': $(cat tp.txt)"
done
# Every line is one the TaskProlog protocol knows.
bad=$(grep -Evx 'export [A-Za-z_][A-Za-z0-9_]*=.*|print .*' tp.txt)
[ -z "$bad" ] || fail "lines outside the protocol: $bad"

# 8. What the task already has is not repeated; a newline cannot be carried: left
#    out with a print; warnings only from the node's first task.
NCCL_SOCKET_IFNAME='=ib0' SLURM_LOCALID=0 "$LLMLAUNCH" slurm task-prolog --state-dir "$sp_tmp/state" \
	--set NCCL_DEBUG_FILE=$'/tmp/nccl.%h.%p\nx' >tp.txt 2>err.txt || fail "task-prolog with --set: exit $?"
grep -q '^export NCCL_SOCKET_IFNAME=' tp.txt && fail "the task's own NCCL_SOCKET_IFNAME was exported again"
grep -q '^export NCCL_DEBUG_FILE' tp.txt && fail "a value with a newline was exported: $(cat tp.txt)"
grep -qxF 'print llmlaunch: warning: NCCL_DEBUG_FILE not exported: its value has a newline, which a TaskProlog cannot express' tp.txt ||
	fail "no print line for the newline value: $(cat tp.txt)"
[ "$(grep -c . tp.txt)" = "$(grep -Ec '^(export|print) ' tp.txt)" ] || fail "stray lines: $(cat tp.txt)"
SLURM_LOCALID=3 "$LLMLAUNCH" slurm task-prolog --state-dir "$sp_tmp/state" --set NCCL_DEBUG_FILE=$'a\nb' >tp.txt 2>&1
grep -q '^print ' tp.txt && fail "task 3 printed warnings: $(cat tp.txt)"

# 9. Failures keep the task alive: a damaged snapshot is replaced by a live probe; a
#    plan that cannot be made is said with print, exit 0; a usage error is exit 2.
mkdir -p bad-state && echo '<topology' >bad-state/snapshot.xml
"$LLMLAUNCH" slurm task-prolog --state-dir "$sp_tmp/bad-state" >tp.txt 2>err.txt || fail "damaged snapshot: exit $?"
grep -q "probing this node instead" err.txt || fail "damaged snapshot: no fallback warning: $(cat err.txt)"
grep -q '^export LLMLAUNCH_GPUS_PER_NODE=' tp.txt || fail "damaged snapshot: no plan: $(cat tp.txt)"
"$LLMLAUNCH" slurm task-prolog --state-dir "$sp_tmp/state" --profile "$sp_tmp/missing.yaml" >tp.txt 2>err.txt ||
	fail "missing profile killed the task: exit $?"
grep -qx "print llmlaunch: task-prolog: no NCCL variables set: cannot read profile '$sp_tmp/missing.yaml': No such file or directory" tp.txt ||
	fail "missing profile: $(cat tp.txt)"
"$LLMLAUNCH" slurm task-prolog --bogus >/dev/null 2>&1
[ $? = 2 ] || fail "task-prolog usage error is not exit 2"
"$LLMLAUNCH" slurm bogus >/dev/null 2>&1
[ $? = 2 ] || fail "unknown slurm subcommand is not exit 2"
"$LLMLAUNCH" slurm task-prolog --help | grep -q '^usage: llmlaunch slurm task-prolog' || fail "task-prolog --help"

# 10. Root's Prolog never writes through a planted link nor into a directory someone
#     else may change; the TaskProlog never plans from a snapshot anyone but root may
#     change (another user would choose this job's NCCL variables). Nothing drains.
mkdir -p target && chmod 755 target
ln -s "$sp_tmp/target" planted
"${P[@]}" --state-dir "$sp_tmp/planted" --fsroot fs-ok >/dev/null 2>err.txt || fail "a planted link drained the node"
[ -z "$(ls -A target)" ] || fail "the Prolog wrote through a planted link: $(ls -A target)"
grep -q "state directory '$sp_tmp/planted': 'planted' is a symbolic link or not a directory: refused" err.txt ||
	fail "planted link: $(cat err.txt)"
mkdir -p real && ln -s "$sp_tmp/real" via
"${P[@]}" --state-dir "$sp_tmp/via/state" --fsroot fs-ok >/dev/null 2>err.txt || fail "a link above drained the node"
[ ! -e real/state ] || fail "the Prolog followed a link above its state directory"
mkdir -p users && chown 65534:65534 users && chmod 755 users
"${P[@]}" --state-dir "$sp_tmp/users" --fsroot fs-ok >/dev/null 2>err.txt || fail "a user's state dir drained the node"
grep -q "state directory '$sp_tmp/users' is owned by uid 65534, not 0: refused" err.txt || fail "user-owned: $(cat err.txt)"
[ ! -e users/snapshot.xml ] || fail "the Prolog wrote into a user's directory"
mkdir -p open && chmod 1777 open
"${P[@]}" --state-dir "$sp_tmp/open" --fsroot fs-ok >/dev/null 2>err.txt || fail "a world-writable state dir drained the node"
grep -q "state directory '$sp_tmp/open' is writable by others (mode 1777): refused" err.txt || fail "world-writable: $(cat err.txt)"
# A snapshot with two HCAs in a directory a user owns: planning from it would export
# NCCL_IB_HCA, which this machine (no RDMA) never plans.
mkdir -p user-state && cp "$LL_FIXTURES/hwloc/two-socket-4gpu-2hca.xml" user-state/snapshot.xml
chown -R 65534:65534 user-state
SLURM_LOCALID=0 "$LLMLAUNCH" slurm task-prolog --state-dir "$sp_tmp/user-state" >tp.txt 2>err.txt || fail "user snapshot: exit $?"
grep -q '^export NCCL_IB_HCA=' tp.txt && fail "the TaskProlog planned from a snapshot a user owns: $(cat tp.txt)"
grep -qF "print llmlaunch: warning: not using the Prolog's snapshot: state directory '$sp_tmp/user-state' is owned by uid 65534, not 0: refused; probing this node instead" tp.txt ||
	fail "user snapshot: no warning: $(cat tp.txt)"
mkdir -p root-state && cp "$LL_FIXTURES/hwloc/two-socket-4gpu-2hca.xml" root-state/snapshot.xml && chmod 666 root-state/snapshot.xml
SLURM_LOCALID=0 "$LLMLAUNCH" slurm task-prolog --state-dir "$sp_tmp/root-state" >tp.txt 2>err.txt || fail "writable snapshot: exit $?"
grep -q '^export NCCL_IB_HCA=' tp.txt && fail "the TaskProlog planned from a snapshot anyone may write"
chmod 644 root-state/snapshot.xml
SLURM_LOCALID=0 "$LLMLAUNCH" slurm task-prolog --state-dir "$sp_tmp/root-state" >tp.txt 2>err.txt || fail "root snapshot: exit $?"
grep -q '^export NCCL_IB_HCA=' tp.txt || fail "root's own snapshot was not used: $(cat tp.txt) $(cat err.txt)"
echo "ok: prolog verdicts, drain reason, deadline (${took_ms} ms) and task-prolog protocol"
