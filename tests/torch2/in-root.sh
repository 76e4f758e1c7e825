#!/bin/bash
# Run by tests/torch2/debian13.sh inside the Debian 13 root, in a copy of the source
# tree at /tmp/src: the README's demo (which builds llmlaunch here, with this root's
# GCC and Python), explain's libuv decision, the same job failing without the
# bootstrap, then the launch-path tests of the suite with this root's torch.
set -euo pipefail
cd /tmp/src
fail() { echo "in the Debian 13 root: FAIL: $*" >&2; exit 1; }
py=/usr/bin/python3
echo "in the Debian 13 root: $(cat /etc/debian_version), $($py --version), torch $($py -c 'import torch; print(torch.__version__)' 2>/dev/null), $(gcc --version | head -1)" >&2

# The README's demo: installs nothing here (the root has the packages), builds with
# warnings as errors, trains examples/train.py on this machine's ranks.
tools/quickstart.sh demo >demo.out 2>demo.err || { tail -30 demo.err >&2; fail "quickstart.sh demo exited $?"; }
n=$(grep -c '^llmlaunch-example ' demo.out) || true
[ "$n" -ge 1 ] || { tail -30 demo.err >&2; fail "the demo printed no report line"; }
grep '^llmlaunch-example ' demo.out | grep -qv ' allreduce=' && fail "a rank without an all-reduce: $(cat demo.out)"
echo "in the Debian 13 root: demo ok ($n ranks)" >&2
export LLMLAUNCH=/tmp/src/build/llmlaunch LL_SRCDIR=/tmp/src LL_FIXTURES=/tmp/src/tests/fixtures

# explain names the workaround and its reason.
"$LLMLAUNCH" explain --json --nproc-per-node 2 >plan.json
got=$(jq -r '.settings[] | select(.name == "LLMLAUNCH_BOOTSTRAP") | "\(.value) [\(.source)] \(.reason)"' plan.json)
case $got in
"libuv-off [launch] torch 2."*" is built without libuv, and TCPStore asks for it by default since torch 2.4: "*) ;;
*) fail "explain's LLMLAUNCH_BOOTSTRAP: $got" ;;
esac

# Without the bootstrap (the user's empty choice) the same job fails as bare torchrun
# does: what the bootstrap is for.
set +e
LLMLAUNCH_BOOTSTRAP= "$LLMLAUNCH" --python "$py" --nproc-per-node 2 examples/train.py --steps 1 >bare.out 2>bare.err
rc=$?
set -e
[ "$rc" != 0 ] || fail "the job ran without the bootstrap: this torch has libuv after all?"
grep -q "use_libuv was requested but PyTorch was build without libuv support" bare.err ||
	fail "without the bootstrap: $(tail -5 bare.err)"

# The launch path with torch 2.x: two ranks over gloo, placement and environment as
# planned; the failing rank's status; the bootstrap's start as python's; then a
# two-node world across network namespaces.
status=0
for t in launch-example launch-exit launch-bootstrap; do
	if bash "tests/integration/$t.sh" >"$t.log" 2>&1; then
		echo "in the Debian 13 root: $t ok" >&2
	else
		echo "in the Debian 13 root: $t FAILED:" >&2
		tail -40 "$t.log" >&2
		status=1
	fi
done
# Two nodes in network namespaces of their own, one world across a veth link.
rc=0
bash tests/torch2/netns-two-nodes.sh >netns.log 2>&1 || rc=$?
if [ "$rc" = 0 ]; then
	echo "in the Debian 13 root: netns-two-nodes ok" >&2
elif [ "$rc" = 77 ]; then
	echo "in the Debian 13 root: netns-two-nodes skipped: $(tail -1 netns.log)" >&2
else
	echo "in the Debian 13 root: netns-two-nodes FAILED:" >&2
	tail -40 netns.log >&2
	status=1
fi
exit $status
