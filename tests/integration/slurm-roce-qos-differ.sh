#!/usr/bin/env bash
# Two emulated Slurm nodes whose RoCE QoS differs (per-node --fsroot trees of
# tests/fixtures/sysfs/fake-sysfs.sh, scenario_roce_qos): n1 has PFC on priority 3,
# n2 none (lossy). The QoS joins the node record's digest, so under srun --mpi=pmix the
# agreement names n2 with both sides' QoS: a warning, and under --strict an error on
# every node, before anything starts.
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
. "$LL_SRCDIR/tests/lib/slurm-cluster.sh"
why=$(slurm_cluster_missing)
[ -z "$why" ] || skip "$why"
trap 'slurm_cluster_stop; agree_cleanup' EXIT
slurm_cluster_start 2 || { slurm_cluster_dump_logs; skip "the test Slurm cluster did not start"; }
. "$LL_SRCDIR/tests/fixtures/sysfs/fake-sysfs.sh"

scenario_roce_qos "$agree_tmp/pfc3" dscp-pfc3
scenario_roce_qos "$agree_tmp/lossy" lossy
slurm_cluster_node_env n2 LL_NODE_FSROOT="$agree_tmp/lossy"

# shellcheck disable=SC2016
run_nodes() { # TAG ARGS...: llmlaunch env on both nodes, each with its own tree
	local tag=$1
	shift
	timeout 90 srun -N2 --ntasks-per-node=1 --mpi=pmix -o "$agree_tmp/$tag-%t.out" -e "$agree_tmp/$tag-%t.err" \
		"$SLURM_CLUSTER_DIR/bin/node-env" bash -c 'exec "$0" env --fsroot "${LL_NODE_FSROOT:-$1}" --format json \
			--agree-timeout 30 "${@:2}"' "$LLMLAUNCH" "$agree_tmp/pfc3" "$@" 2>"$agree_tmp/$tag-srun.err"
}
theirs="class 106; forced none, trust dscp, PFC 3, ECN 3, RoCE MTU 4096"
mine="class unset; forced none, trust pcp, PFC none, ECN none, RoCE MTU 4096"

run_nodes strict --strict
rc=$?
[ $rc != 0 ] || fail "srun succeeded although n2's QoS differs"
expect="llmlaunch: nodes differ: n2: RoCE QoS '$mine', the other node '$theirs' (an error under --strict)"
for t in 0 1; do
	got=$(agree_message "$agree_tmp/strict-$t.err")
	[ "$got" = "$expect" ] || fail "task $t said: '$got' (stderr: $(cat "$agree_tmp/strict-$t.err"))"
done

# Without --strict: a warning, and the plan goes on.
run_nodes soft || fail "srun env failed: $(cat "$agree_tmp"/soft-*.err)"
for t in 0 1; do
	grep -qF "n2: RoCE QoS '$mine', the other node '$theirs'" "$agree_tmp/soft-$t.err" ||
		fail "task $t did not warn: $(cat "$agree_tmp/soft-$t.err")"
done
echo "ok: n2's QoS named"
