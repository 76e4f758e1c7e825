#!/usr/bin/env bash
# The preflight check on 4 emulated nodes with a network each
# (tests/lib/slurm-netns-cluster.sh), through srun --mpi=pmix and real gloo:
#   1. nothing slowed: the check names no node (the no-false-positive case);
#   2. n3's data link at 200 Mbit/s both ways (tc tbf on its veth): the check names
#      exactly n3, with its figure against the job's median, and --on-slow exclude
#      writes "n3" (Slurm hostlist syntax) to the exclude file and exits 1 on every node;
#   3. the same in text: node 0's report says SLOW for n3 and no other node.
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
. "$LL_SRCDIR/tests/lib/slurm-netns-cluster.sh"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || skip "Debian's python3-torch is not installed"
command -v tc >/dev/null || skip "tc (iproute2) is not installed"
slurm_netns_test_cluster 4

# check [ARGS...]: llmlaunch check on every node; rc in $rc, node k's output in out-$((k-1)).
check() {
	rm -f "$agree_tmp"/out-* "$agree_tmp"/err-*
	slurm_netns_hub timeout 120 srun -N4 --ntasks-per-node=1 --mpi=pmix -o "$agree_tmp/out-%t.txt" \
		-e "$agree_tmp/err-%t.txt" "$LLMLAUNCH" check --python /usr/bin/python3 --nproc-per-node 1 \
		--agree-timeout 60 "$@" 2>"$agree_tmp/srun.err"
	rc=$?
	[ $rc = 124 ] && fail "check $*: srun hung until the test's own timeout"
	return 0
}

# named FILE: the named nodes of node 0's JSON report, space-separated.
named() {
	python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["named"]))' "$1" 2>/dev/null ||
		fail "no JSON report in $1: $(cat "$1") $(tail -5 "$agree_tmp"/err-0.txt)"
}

start=$SECONDS
check --json
got=$(named "$agree_tmp/out-0.txt")
[ -z "$got" ] || fail "nothing slowed, but the check named: $got ($(cat "$agree_tmp/out-0.txt"))"
[ $rc = 0 ] || fail "a clean check exited $rc: $(tail -5 "$agree_tmp"/err-*.txt)"
[ ! -s "$agree_tmp/out-1.txt" ] || fail "node 1 printed a report too: $(cat "$agree_tmp/out-1.txt")"
grep -q '^llmlaunch: check: pairs, step' "$agree_tmp/err-0.txt" || fail "no progress line: $(cat "$agree_tmp/err-0.txt")"
echo "clean: no node named ($((SECONDS - start)) s)"

slurm_netns_slow n3 200mbit || fail "tc could not slow n3's link"
start=$SECONDS
check --json --on-slow exclude --exclude-file "$agree_tmp/exclude.txt"
got=$(named "$agree_tmp/out-0.txt")
[ "$got" = n3 ] || fail "n3 slowed, but the check named '$got': $(cat "$agree_tmp/out-0.txt")"
[ $rc != 0 ] || fail "--on-slow exclude: srun exited 0"
[ "$(grep -c "task [0-3]: Exited with exit code 1" "$agree_tmp/srun.err")" = 4 ] ||
	fail "expected every node to exit 1: $(cat "$agree_tmp/srun.err")"
[ "$(cat "$agree_tmp/exclude.txt" 2>/dev/null)" = n3 ] || fail "exclude file: '$(cat "$agree_tmp/exclude.txt" 2>&1)'"
grep -q "wrote them to '$agree_tmp/exclude.txt'; the job was not started" "$agree_tmp/err-0.txt" ||
	fail "node 0 did not say what it wrote: $(cat "$agree_tmp/err-0.txt")"
python3 - "$agree_tmp/out-0.txt" <<'PY' || fail "n3's figure against the median: $(cat "$agree_tmp/out-0.txt")"
import json, sys
r = json.load(open(sys.argv[1]))
n3 = [n for n in r["per_node"] if n["name"] == "n3"][0]
assert n3["slow"] and "of the median" in n3["why"], n3
assert n3["gbps"] < 0.7 * r["pairs"]["median_gbps"], (n3, r["pairs"])
assert r["thresholds"]["node_gbps"]["source"].startswith("70% of the job's median"), r["thresholds"]
assert r["exclude"] == "n3" and r["ok"] is False
PY
echo "slowed n3: named n3, excluded ($((SECONDS - start)) s): $(grep -o '"why": "[^"]*"' "$agree_tmp/out-0.txt")"

check --on-slow warn
[ $rc = 0 ] || fail "--on-slow warn exited $rc"
grep -q '^  n3 .*SLOW: ' "$agree_tmp/out-0.txt" || fail "text report without n3 SLOW: $(cat "$agree_tmp/out-0.txt")"
[ "$(grep -c 'SLOW' "$agree_tmp/out-0.txt")" = 1 ] || fail "text report names more than n3: $(cat "$agree_tmp/out-0.txt")"
grep -q 'preflight check named 1 node: n3' "$agree_tmp/err-0.txt" || fail "no warning: $(cat "$agree_tmp/err-0.txt")"
slurm_netns_unslow n3
cat "$agree_tmp/out-0.txt"
echo "ok: the check names a slowed node and only it, and excludes it"
