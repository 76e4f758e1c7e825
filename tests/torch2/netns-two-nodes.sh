#!/bin/bash
# Two nodes, each in a network namespace of its own joined by a veth pair on
# 198.51.100.0/24, one worker each, torchrun's static rendezvous at node 0's address
# given by hand (the single-node agreement keeps the user's world): a two-node gloo
# world whose TCPStore crosses a real link. Run by in-root.sh with the root's torch
# (2.6, through the bootstrap on both nodes); it also runs on the host's own torch.
set -euo pipefail
: "${LLMLAUNCH:?}" "${LL_SRCDIR:?}"
py=${LLMLAUNCH_TEST_PYTHON:-/usr/bin/python3}
fail() { echo "netns-two-nodes: FAIL: $*" >&2; exit 1; }
command -v ip >/dev/null || { echo "netns-two-nodes: SKIP: ip (iproute2) is not installed" >&2; exit 77; }
tag=llt2$$
work=$(mktemp -d /tmp/ll-netns2.XXXXXX)
cleanup() {
	ip netns del "$tag-n0" 2>/dev/null || true
	ip netns del "$tag-n1" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
for k in 0 1; do
	ip netns add "$tag-n$k"
	ip -n "$tag-n$k" link set lo up
done
ip link add "$tag-a" type veth peer name "$tag-b"
ip link set "$tag-a" netns "$tag-n0"
ip link set "$tag-b" netns "$tag-n1"
ip -n "$tag-n0" addr add 198.51.100.1/24 dev "$tag-a"
ip -n "$tag-n1" addr add 198.51.100.2/24 dev "$tag-b"
ip -n "$tag-n0" link set "$tag-a" up
ip -n "$tag-n1" link set "$tag-b" up

pids=()
for k in 0 1; do
	dev=$([ "$k" = 0 ] && echo "$tag-a" || echo "$tag-b")
	TMPDIR=$work ip netns exec "$tag-n$k" timeout 300 "$LLMLAUNCH" --python "$py" --nproc-per-node 1 \
		--nnodes 2 --node-rank "$k" --master-addr 198.51.100.1 --master-port 29617 \
		--set GLOO_SOCKET_IFNAME="$dev" --set NCCL_SOCKET_IFNAME="$dev" \
		"$LL_SRCDIR/examples/train.py" --steps 2 >"$work/out.$k" 2>"$work/err.$k" &
	pids+=($!)
done
rc=0
for k in 0 1; do
	wait "${pids[$k]}" || { rc=$?; echo "--- node $k:" >&2; tail -20 "$work/err.$k" >&2; }
done
[ "$rc" = 0 ] || fail "a node exited $rc"
for k in 0 1; do
	line=$(grep '^llmlaunch-example ' "$work/out.$k") || fail "node $k printed no report line"
	for want in "rank=$k " "world_size=2 " "master_addr=198.51.100.1 " "allreduce=3 "; do
		case "$line " in *"$want"*) ;; *) fail "node $k: no '$want' in: $line" ;; esac
	done
done
echo "netns-two-nodes: ok: two namespaced nodes, one world over 198.51.100.0/24"
