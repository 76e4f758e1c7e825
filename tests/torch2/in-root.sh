#!/bin/bash
# Run by tests/torch2/debian13.sh on a copy of the source tree (this script's own),
# inside the Debian 13 root it made, or on the machine itself when that already is
# Debian 13 with its torch 2.x: the README's demo (which builds llmlaunch here, with
# this system's GCC and Python), explain's libuv decision, the same job failing
# without the bootstrap, then the launch-path tests of the suite with this torch.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$PWD
where=${LL_TORCH2_WHERE:-in the Debian 13 root}
fail() { echo "$where: FAIL: $*" >&2; exit 1; }
py=/usr/bin/python3
echo "$where: $(cat /etc/debian_version), $($py --version), torch $($py -c 'import torch; print(torch.__version__)' 2>/dev/null), $(gcc --version | head -1)" >&2

# The README's demo: installs nothing here (the root has the packages), builds with
# warnings as errors, trains examples/train.py on this machine's ranks.
tools/quickstart.sh demo >demo.out 2>demo.err || { tail -30 demo.err >&2; fail "quickstart.sh demo exited $?"; }
n=$(grep -c '^llmlaunch-example ' demo.out) || true
[ "$n" -ge 1 ] || { tail -30 demo.err >&2; fail "the demo printed no report line"; }
grep '^llmlaunch-example ' demo.out | grep -qv ' allreduce=' && fail "a rank without an all-reduce: $(cat demo.out)"
echo "$where: demo ok ($n ranks)" >&2
export LLMLAUNCH=$src/build/llmlaunch LL_SRCDIR=$src LL_FIXTURES=$src/tests/fixtures

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
		echo "$where: $t ok" >&2
	else
		echo "$where: $t FAILED:" >&2
		tail -40 "$t.log" >&2
		status=1
	fi
done
# Two nodes in network namespaces of their own, one world across a veth link.
rc=0
bash tests/torch2/netns-two-nodes.sh >netns.log 2>&1 || rc=$?
if [ "$rc" = 0 ]; then
	echo "$where: netns-two-nodes ok" >&2
elif [ "$rc" = 77 ]; then
	echo "$where: netns-two-nodes skipped: $(tail -1 netns.log)" >&2
else
	echo "$where: netns-two-nodes FAILED:" >&2
	tail -40 netns.log >&2
	status=1
fi
exit $status
