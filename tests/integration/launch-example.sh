# Two workers of examples/train.py through llmlaunch with the real torchrun: both
# finish, and each one's environment, CPU affinity and memory policy are what
# `llmlaunch explain --json` plans.
. "$(dirname "$0")/launch-common.bash"
require_torch
require_jq

"$LLMLAUNCH" explain --json --nproc-per-node 2 >"$WORK/plan.json" || fail "explain --json failed"
mkdir "$WORK/dump"
"$LLMLAUNCH" --python "$PY" --nproc-per-node 2 "$EXAMPLE" --steps 3 --dump-env "$WORK/dump" \
	>"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err" >&2; fail "llmlaunch exited $?"; }

assert_eq "report lines" 2 "$(grep -c '^llmlaunch-example ' "$WORK/out")"
port0=$(field "$WORK/out" 0 master_port)
for rank in 0 1; do
	assert_eq "rank $rank world size" 2 "$(field "$WORK/out" $rank world_size)"
	assert_eq "rank $rank all-reduce" 3 "$(field "$WORK/out" $rank allreduce)"
	assert_eq "rank $rank backend" gloo "$(field "$WORK/out" $rank backend)"
	assert_eq "rank $rank MASTER_ADDR" 127.0.0.1 "$(field "$WORK/out" $rank master_addr)"
	assert_eq "rank $rank MASTER_PORT" "$port0" "$(field "$WORK/out" $rank master_port)"
	lr=$(field "$WORK/out" $rank local_rank)
	assert_eq "rank $rank LOCAL_RANK" "$rank" "$lr"

	# Placement: affinity is the planned cpuset, memory bound to the planned node.
	cpuset=$(jq -r ".ranks[] | select(.local_rank == $lr) | .cpuset" "$WORK/plan.json")
	numa=$(jq -r ".ranks[] | select(.local_rank == $lr) | .numa_node" "$WORK/plan.json")
	[ -n "$cpuset" ] && [ "$cpuset" != null ] || fail "plan has no cpuset for local rank $lr"
	assert_eq "rank $rank affinity" "$cpuset" "$(field "$WORK/out" $rank affinity)"
	if [ "$numa" != null ] && [ "$numa" -ge 0 ]; then
		assert_eq "rank $rank memory policy" "bind:$numa" "$(field "$WORK/out" $rank mempolicy)"
	fi

	# Every variable the plan exports reaches the worker with the planned value; the
	# job directory is named by the launching process ("llmlaunch-PID" in explain).
	dump="$WORK/dump/rank-$rank.json"
	[ -s "$dump" ] || fail "rank $rank wrote no environment dump"
	jq -r '.settings[] | select(.exported and .value != null) | "\(.name)=\(.value)"' "$WORK/plan.json" |
		while IFS= read -r kv; do
			name=${kv%%=*}
			got=$(jq -r --arg n "$name" '.env[$n] // "<unset>"' "$dump" | sed -E 's|/llmlaunch-[0-9]+|/llmlaunch-PID|')
			assert_eq "rank $rank $name" "${kv#*=}" "$got"
		done
	assert_eq "rank $rank OMP_NUM_THREADS" \
		"$(jq -r '.settings[] | select(.name == "OMP_NUM_THREADS") | .value' "$WORK/plan.json")" \
		"$(field "$WORK/out" $rank omp_num_threads)"
done
# The two workers do not share CPUs when the plan splits them.
a0=$(field "$WORK/out" 0 affinity); a1=$(field "$WORK/out" 1 affinity)
[ "$(jq -r '[.ranks[].cpuset] | unique | length' "$WORK/plan.json")" = 2 ] &&
	{ [ "$a0" != "$a1" ] || fail "both ranks run on CPUs $a0"; }
assert_tmp_clean
echo "ok: 2 workers, port $port0, affinity $a0 / $a1"
