#!/usr/bin/env bash
# Every engine's contract forms one world (docs/kubernetes.md): pods emulated as hosts,
# each in its own network namespace (tests/lib/pods-netns.sh), in two subnets joined
# by a router (p1, p2 on eth0 in 198.51.100.0/25; p3, p4 on net1 in 203.0.113.0/25),
# names served by dnsmasq. Each pod starts llmlaunch with exactly one engine's
# variables on examples/train.py (gloo):
#   TrainJob over p1 p2 p3, node 0's name published 3 s after the pods start;
#   PyTorchJob (training-operator v1.6: WORLD_SIZE counts nodes) over p1 p3;
#   LeaderWorkerSet with its leader in the other subnet (p3 leads, p2 works);
#   SkyPilot over p4 p1 (numeric IPs, no DNS);
#   a TrainJob pod that never starts is named within --agree-timeout;
#   node 0's name never published: the pod names it at the deadline;
#   two contracts that disagree exit 2 before anything starts.
# Every rank must see the full world, the all-reduce must be right, and each pod must
# use its own interface (eth0 or net1: no subnet is shared).
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
. "$LL_SRCDIR/tests/lib/pods-netns.sh"
why=$(pods_missing)
[ -z "$why" ] || skip "$why"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || skip "Debian's python3-torch is not installed"
trap 'pods_stop; agree_cleanup' EXIT
pods_start 4 routed || fail "the pods' network did not start"
id=$PODS_ID

# run_pod K NAME VAR=VALUE...: llmlaunch in pod pK with only these variables.
run_pod() {
	local k=$1 name=$2
	shift 2
	pods_exec "$k" env -i PATH="$PATH" HOME="$HOME" LLMLAUNCH_CACHE_DIR="$agree_tmp/cache-p$k" "$@" \
		"$LLMLAUNCH" --python /usr/bin/python3 --nproc-per-node 1 --agree-timeout "${AGREE_TIMEOUT:-40}" \
		"$LL_SRCDIR/examples/train.py" --steps 2 >"$agree_tmp/$name-p$k.out" 2>"$agree_tmp/$name-p$k.err"
}

# check_world NAME N SUM POD:IFNAME...: every pod's worker saw world size N and the
# all-reduce SUM (1 + ... + N), through its own interface.
check_world() {
	local name=$1 n=$2 sum=$3 pod k ifname line
	shift 3
	for pod in "$@"; do
		k=${pod%%:*} ifname=${pod#*:}
		line=$(grep '^llmlaunch-example' "$agree_tmp/$name-p$k.out")
		[ -n "$line" ] || fail "$name: p$k printed no worker line: $(tail -5 "$agree_tmp/$name-p$k.err")"
		case " $line " in *" world_size=$n "*) ;; *) fail "$name: p$k: not world size $n: $line" ;; esac
		case " $line " in *" allreduce=$sum "*) ;; *) fail "$name: p$k: all-reduce is not $sum: $line" ;; esac
		case " $line " in *" gloo_ifname=$ifname "*) ;; *) fail "$name: p$k: not on $ifname: $line" ;; esac
	done
	echo "ok: $name: world size $n over $*"
}

# 1. TrainJob (Kubeflow Trainer v2): node 0's headless-service record appears 3 s late.
master=tj-trainer-node-0-0.tj
pids=()
for k in 1 2 3; do
	run_pod "$k" trainjob PET_NNODES=3 PET_NODE_RANK=$((k - 1)) PET_NPROC_PER_NODE=1 PET_MASTER_ADDR=$master \
		PET_MASTER_PORT=29500 &
	pids+=($!)
done
sleep 3
pods_dns "$master" 198.51.100.1
wait "${pids[@]}" || fail "trainjob: a pod failed: $(tail -n 3 "$agree_tmp"/trainjob-p*.err)"
check_world trainjob 3 6 1:eth0 2:eth0 3:net1
# The agreed numeric address, the same on every node, not the name.
[ "$(sed -n 's/.* master_addr=\([^ ]*\).*/\1/p' "$agree_tmp"/trainjob-p*.out | sort -u)" = 198.51.100.1 ] ||
	fail "trainjob: workers were not all given 198.51.100.1: $(grep -h master_addr "$agree_tmp"/trainjob-p*.out)"

# 2. PyTorchJob, training-operator v1.6: a master and one worker, WORLD_SIZE 2 nodes.
pods_dns pj-master-0 198.51.100.1
run_pod 1 pytorchjob MASTER_ADDR=pj-master-0 MASTER_PORT=23456 WORLD_SIZE=2 RANK=0 PYTHONUNBUFFERED=1 &
p1=$!
run_pod 3 pytorchjob MASTER_ADDR=pj-master-0 MASTER_PORT=23456 WORLD_SIZE=2 RANK=1 PYTHONUNBUFFERED=1 &
p3=$!
wait $p1 $p3 || fail "pytorchjob: a pod failed: $(tail -n 3 "$agree_tmp"/pytorchjob-p*.err)"
check_world pytorchjob 2 3 1:eth0 3:net1

# 3. LeaderWorkerSet: the leader is in the other subnet.
pods_dns lws-0.lws.default 203.0.113.3
run_pod 3 lws LWS_LEADER_ADDRESS=lws-0.lws.default LWS_GROUP_SIZE=2 LWS_WORKER_INDEX=0 &
p3=$!
run_pod 2 lws LWS_LEADER_ADDRESS=lws-0.lws.default LWS_GROUP_SIZE=2 LWS_WORKER_INDEX=1 &
p2=$!
wait $p2 $p3 || fail "lws: a pod failed: $(tail -n 3 "$agree_tmp"/lws-p*.err)"
check_world lws 2 3 3:net1 2:eth0

# 4. SkyPilot: the head is p4, numeric addresses one a line.
ips=$'203.0.113.4\n198.51.100.1'
run_pod 4 skypilot SKYPILOT_NODE_IPS="$ips" SKYPILOT_NODE_RANK=0 SKYPILOT_NUM_NODES=2 SKYPILOT_NUM_GPUS_PER_NODE=0 &
p4=$!
run_pod 1 skypilot SKYPILOT_NODE_IPS="$ips" SKYPILOT_NODE_RANK=1 SKYPILOT_NUM_NODES=2 SKYPILOT_NUM_GPUS_PER_NODE=0 &
p1=$!
wait $p1 $p4 || fail "skypilot: a node failed: $(tail -n 3 "$agree_tmp"/skypilot-p*.err)"
check_world skypilot 2 3 4:net1 1:eth0

# 5. A pod that never starts: node 2 of 3. Node 0 names it at the deadline, nothing trains.
pods_dns gone-trainer-node-0-0.gone 198.51.100.1
for k in 1 3; do
	r=$((k == 1 ? 0 : 1))
	AGREE_TIMEOUT=5 run_pod "$k" missing PET_NNODES=3 PET_NODE_RANK=$r PET_MASTER_ADDR=gone-trainer-node-0-0.gone \
		PET_MASTER_PORT=29501 &
	eval "m$k=\$!"
done
# shellcheck disable=SC2154
wait "$m1" && fail "missing: node 0 started without node 2"
grep -q "node 2" "$agree_tmp/missing-p1.err" || fail "missing: node 0 did not name node 2: $(cat "$agree_tmp/missing-p1.err")"
# shellcheck disable=SC2154
wait "$m3" && fail "missing: node 1 started without node 2"
grep -q '^llmlaunch-example' "$agree_tmp"/missing-p*.out && fail "missing: a worker ran"
echo "ok: missing: node 0 named node 2"

# 6. Node 0's name is never published: the pod says which name, within the deadline.
AGREE_TIMEOUT=4 run_pod 2 noname PET_NNODES=2 PET_NODE_RANK=1 PET_MASTER_ADDR=never-trainer-node-0-0.never \
	PET_MASTER_PORT=29502 && fail "noname: started without node 0"
grep -q "^llmlaunch: node 0's name 'never-trainer-node-0-0.never' (PET_MASTER_ADDR) is not resolvable yet after [0-9]* s: " \
	"$agree_tmp/noname-p2.err" || fail "noname: $(cat "$agree_tmp/noname-p2.err")"
echo "ok: noname: the unresolvable name is named"

# 7. Two contracts that disagree: a usage error naming both, nothing started.
pods_exec 1 env -i PATH="$PATH" HOME="$HOME" PET_NNODES=4 PET_NODE_RANK=0 PET_MASTER_ADDR=x SKYPILOT_NUM_NODES=2 \
	SKYPILOT_NODE_RANK=0 SKYPILOT_NODE_IPS=$'198.51.100.1\n198.51.100.2' "$LLMLAUNCH" --python /usr/bin/python3 \
	"$LL_SRCDIR/examples/train.py" >"$agree_tmp/two.out" 2>"$agree_tmp/two.err"
rc=$?
[ $rc = 2 ] || fail "two contracts: exit status $rc, not 2: $(cat "$agree_tmp/two.err")"
grep -q "PET_NNODES=4 (trainjob) and SKYPILOT_NUM_NODES=2 (skypilot) disagree" "$agree_tmp/two.err" ||
	fail "two contracts: $(cat "$agree_tmp/two.err")"
echo "ok: two contracts exit 2"

pods_stop
left=$(pods_leftovers "$id")
[ -z "$left" ] || fail "left behind: $left"
