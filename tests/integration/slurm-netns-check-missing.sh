#!/usr/bin/env bash
# A node that never joins the preflight check, on 4 emulated nodes with a network each
# (tests/lib/slurm-netns-cluster.sh): n4's llmlaunch starts 12 s late. The check goes
# through the agreement as a launch does, so the others give up at --agree-timeout 6
# and name n4, as the agreement does for 'run'; no check starts, srun ends well
# before its own limit, and n4 is in the exclude file.
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
. "$LL_SRCDIR/tests/lib/slurm-netns-cluster.sh"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || skip "Debian's python3-torch is not installed"
slurm_netns_test_cluster 4
slurm_cluster_node_env n4 LL_DELAY=12

start=$SECONDS
# shellcheck disable=SC2016
slurm_netns_hub timeout 60 srun -N4 --ntasks-per-node=1 --mpi=pmix -o "$agree_tmp/out-%t.txt" \
	-e "$agree_tmp/err-%t.txt" "$SLURM_CLUSTER_DIR/bin/node-env" bash -c 'sleep "${LL_DELAY:-0}"; exec "$@"' \
	sh "$LLMLAUNCH" check --python /usr/bin/python3 --nproc-per-node 1 --agree-timeout 6 --on-slow exclude \
	--exclude-file "$agree_tmp/exclude.txt" 2>"$agree_tmp/srun.err"
rc=$?
took=$((SECONDS - start))
[ $rc = 124 ] && fail "srun hung until the test's own timeout"
[ $rc != 0 ] || fail "srun succeeded although n4 never arrived"
# Node 0 also writes n4 to the exclude file (--on-slow exclude): a resubmission
# leaves out a node that never joins as it leaves out a slow one.
for t in 0 1 2; do
	got=$(agree_message "$agree_tmp/err-$t.txt" | head -1)
	want="llmlaunch: agreement timed out after 6 s: 1 of 4 nodes did not arrive: n4"
	[ "$t" = 0 ] && want="$want; wrote n4 to '$agree_tmp/exclude.txt'"
	[ "$got" = "$want" ] || fail "task $t said '$got', not '$want': $(cat "$agree_tmp/err-$t.txt")"
	! grep -q '^llmlaunch: check: ' "$agree_tmp/err-$t.txt" || fail "task $t started the check"
done
[ ! -s "$agree_tmp/out-0.txt" ] || fail "node 0 printed a report: $(cat "$agree_tmp/out-0.txt")"
[ "$(cat "$agree_tmp/exclude.txt" 2>/dev/null)" = n4 ] ||
	fail "the exclude file holds '$(cat "$agree_tmp/exclude.txt" 2>&1)', not n4"
echo "ok: a node that never joins the check is named by the agreement and excluded ($took s)"
