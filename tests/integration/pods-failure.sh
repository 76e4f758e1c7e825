#!/usr/bin/env bash
# The job channel on hosts without PMIx or Slurm: three pods, each its own network
# namespace and hostname (tests/lib/pods-netns.sh), the PyTorchJob contract (node 0's
# check-in carries the agreement), gloo, one rank each:
#   1. rank 2 on p3 kills itself with SIGKILL between two all-reduces: every pod stops
#      within 10 s, prints the same verdict naming p3, rank 2 and the signal, and exits
#      with the rank's status (137);
#   2. rank 1 on p2 sleeps (--hang-timeout 5): every pod prints the same hang verdict
#      naming rank 1 and its time.sleep frame, and exits 1;
#   3. node 0's llmlaunch is killed with SIGKILL while rank 0 sleeps: p2 and p3 stop
#      within 10 s and say that the channel to node 0 (p1) was lost;
#   4. p3's llmlaunch is killed with SIGKILL while its rank runs and rank 0 sleeps
#      (nothing in rank 0 would notice): p1 and p2 stop within 10 s, print the same
#      verdict naming p3 (node 2) before the ranks stopped after it, exit 137, and
#      node 0's job record and 'llmlaunch logs' keep it.
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
. "$LL_SRCDIR/tests/lib/pods-netns.sh"
why=$(pods_missing)
[ -z "$why" ] || skip "$why"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || skip "Debian's python3-torch is not installed"
trap 'pods_stop; agree_cleanup' EXIT
pods_start 3 || fail "the pods' network did not start"
pods_dns pj-master-0 198.51.100.1
WORKER="$LL_SRCDIR/tests/integration/launch-failure-worker.py"

# run_pod K NAME [OPTIONS] ARGS...: llmlaunch in pod pK, node K-1 of 3; its job
# directory in $agree_tmp/tmp-NAME-pK, its exit status in NAME-pK.rc.
run_pod() {
	local k=$1 name=$2
	shift 2
	mkdir -p "$agree_tmp/tmp-$name-p$k"
	pods_exec "$k" env -i PATH="$PATH" HOME="$HOME" LLMLAUNCH_CACHE_DIR="$agree_tmp/cache-p$k" \
		TMPDIR="$agree_tmp/tmp-$name-p$k" MASTER_ADDR=pj-master-0 MASTER_PORT=23456 WORLD_SIZE=3 \
		RANK=$((k - 1)) PYTHONUNBUFFERED=1 "$LLMLAUNCH" --python /usr/bin/python3 --nproc-per-node 1 \
		--agree-timeout 40 "$@" >"$agree_tmp/$name-p$k.out" 2>"$agree_tmp/$name-p$k.err"
	echo $? >"$agree_tmp/$name-p$k.rc"
}

# same_line NAME PATTERN: every pod printed one line matching PATTERN, the same line.
same_line() {
	local name=$1 pattern=$2 k lines
	for k in 1 2 3; do
		grep -q "$pattern" "$agree_tmp/$name-p$k.err" ||
			fail "$name: p$k does not print the verdict: $(grep '^llmlaunch:' "$agree_tmp/$name-p$k.err")"
	done
	lines=$(grep -h "$pattern" "$agree_tmp/$name"-p*.err | sort -u)
	[ "$(printf '%s\n' "$lines" | wc -l)" = 1 ] || fail "$name: the pods' verdicts differ: $lines"
	echo "$lines"
}

# 1. SIGKILL on the last node.
# run_all NAME ARGS...: the job on every pod at once (the pods' DNS server runs in the
# background too: wait for these alone).
run_all() {
	local k pids=()
	for k in 1 2 3; do
		run_pod "$k" "$@" &
		pids+=($!)
	done
	wait "${pids[@]}"
}

run_all kill "$WORKER" kill 2
end=$(date +%s.%N)
t0=$(grep -ho 'failure-worker rank=2 t=[0-9.]*' "$agree_tmp"/kill-p3.out | sed 's/.*t=//')
[ -n "$t0" ] || fail "kill: rank 2 never reached the kill: $(tail -n 5 "$agree_tmp"/kill-p*.err)"
same_line kill "^llmlaunch: rank 2 on p3 failed first (signal KILL, [0-9:]*): .*; 2 other ranks stopped after it$"
for k in 1 2 3; do
	[ "$(cat "$agree_tmp/kill-p$k.rc")" = 137 ] || fail "kill: p$k exited $(cat "$agree_tmp/kill-p$k.rc"), not 137"
done
stopped=$(awk -v a="$t0" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
awk -v s="$stopped" 'BEGIN { exit !(s < 10) }' || fail "kill: the pods ended $stopped s after the kill (limit 10 s)"
echo "ok: kill: every pod prints the same verdict and exits 137, $stopped s after the kill"

# 2. A hang on p2: every node's stacks name the sleeping rank.
run_all hang --hang-timeout 5 "$WORKER" sleep 1 120
same_line hang "^llmlaunch: the job hangs: no rank on p[1-3] has printed anything for [0-9]* s; rank 1 waits in time.sleep in launch-failure-worker.py:[0-9]*, while ranks 0,2 wait in all_reduce in "
for k in 1 2 3; do
	[ "$(cat "$agree_tmp/hang-p$k.rc")" = 1 ] || fail "hang: p$k exited $(cat "$agree_tmp/hang-p$k.rc"), not 1"
done
echo "ok: hang: every pod prints the same verdict naming rank 1's time.sleep"

# kill_pod NAME K: once every rank has reached its MODE, SIGKILL pod pK's llmlaunch
# (named by its job directory); $t0 the time of the kill.
kill_pod() {
	local name=$1 k=$2 pid='' _
	for _ in $(seq 600); do
		if [ -z "$pid" ]; then
			pid=$(find "$agree_tmp/tmp-$name-p$k" -maxdepth 1 -name 'llmlaunch-*' 2>/dev/null | sed 's/.*llmlaunch-//; s/-.*//' | head -n 1)
		fi
		[ -n "$pid" ] && grep -q 'failure-worker rank=2' "$agree_tmp/$name-p3.out" 2>/dev/null && break
		sleep 0.1
	done
	[ -n "$pid" ] || fail "$name: p$k's llmlaunch never made its job directory"
	sleep 1
	kill -KILL "$pid"
	t0=$(date +%s.%N)
}

# 3. Node 0's llmlaunch killed: the others are told, and stop.
run_all lost "$WORKER" sleep 0 120 &
all=$!
kill_pod lost 1
wait $all
end=$(date +%s.%N)
for k in 2 3; do
	grep -q "^llmlaunch: the channel to node 0 (p1) was lost: .*: stopping this node's ranks" \
		"$agree_tmp/lost-p$k.err" || fail "lost: p$k does not say node 0 was lost: $(grep '^llmlaunch:' "$agree_tmp/lost-p$k.err")"
	[ "$(cat "$agree_tmp/lost-p$k.rc")" != 0 ] || fail "lost: p$k exited 0"
done
stopped=$(awk -v a="$t0" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
awk -v s="$stopped" 'BEGIN { exit !(s < 10) }' || fail "lost: the pods ended $stopped s after node 0 (limit 10 s)"
echo "ok: lost: p2 and p3 say the channel to p1 was lost and end $stopped s after it"

# 4. p3's llmlaunch killed while its rank runs: node 0 names it and stops everyone.
run_all left "$WORKER" sleep 0 120 &
all=$!
kill_pod left 3
wait $all
end=$(date +%s.%N)
for k in 1 2; do
	grep -q "^llmlaunch: llmlaunch on p3 (node 2) left the job at [0-9:]* without a word (killed, or its host went down); 2 other ranks stopped after it$" \
		"$agree_tmp/left-p$k.err" || fail "left: p$k does not name p3: $(grep '^llmlaunch:' "$agree_tmp/left-p$k.err")"
	[ "$(cat "$agree_tmp/left-p$k.rc")" = 137 ] || fail "left: p$k exited $(cat "$agree_tmp/left-p$k.rc"), not 137"
done
[ "$(grep -h '^llmlaunch: llmlaunch on p3' "$agree_tmp"/left-p[12].err | sort -u | wc -l)" = 1 ] ||
	fail "left: the verdicts differ: $(grep -h '^llmlaunch: llmlaunch on p3' "$agree_tmp"/left-p[12].err)"
stopped=$(awk -v a="$t0" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
awk -v s="$stopped" 'BEGIN { exit !(s < 10) }' || fail "left: p1 and p2 ended $stopped s after p3's llmlaunch (limit 10 s)"
dir=$(sed -n "s/^llmlaunch: the job's record is kept in '\([^']*\)'.*/\1/p" "$agree_tmp/left-p1.err")
[ -n "$dir" ] || fail "left: node 0 kept no record: $(grep '^llmlaunch:' "$agree_tmp/left-p1.err")"
grep -q '^p3 node 2: llmlaunch left the job at ' "$dir/job-record" ||
	fail "left: node 0's job record does not name p3: $(cat "$dir/job-record")"
"$LLMLAUNCH" logs "$dir" 2>&1 | grep -q "^job in $dir: llmlaunch on p3 (node 2) left the job at " ||
	fail "left: 'llmlaunch logs' does not name p3: $("$LLMLAUNCH" logs "$dir" 2>&1)"
echo "ok: left: p1 and p2 name p3's llmlaunch, exit 137 and end $stopped s after it"
