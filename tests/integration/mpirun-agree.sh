#!/usr/bin/env bash
# Open MPI's mpirun as the launcher (its PMIx server): a one-node job agrees through
# PMIx, launches, and two llmlaunch on one node are refused with the mpirun fix.
set -u
. "$LL_SRCDIR/tests/lib/agree-test.sh"
command -v mpirun >/dev/null || skip "mpirun (openmpi-bin) not installed"
trap agree_cleanup EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_rmaps_base_oversubscribe=1
mpirun --version 2>/dev/null | grep -q 'Open MPI' || skip "mpirun is not Open MPI"

# 1. env: the values come from agreement (source cluster), one node.
timeout 60 mpirun -n 1 "$LLMLAUNCH" env --format json --agree-timeout 20 >"$agree_tmp/env.json" 2>"$agree_tmp/env.err" \
	|| fail "mpirun env failed: $(cat "$agree_tmp/env.err")"
[ "$(json_field "$agree_tmp/env.json" LLMLAUNCH_NNODES)" = 1 ] || fail "nnodes: $(cat "$agree_tmp/env.json")"
[ "$(json_field "$agree_tmp/env.json" LLMLAUNCH_NODE_RANK)" = 0 ] || fail "node rank"
[ "$(json_field "$agree_tmp/env.json" MASTER_ADDR)" = 127.0.0.1 ] || fail "MASTER_ADDR"
[ -n "$(json_field "$agree_tmp/env.json" MASTER_PORT)" ] || fail "no MASTER_PORT"

# 2. Two on one node: refused, with the mpirun spelling of the fix. Each process decides
# alone from PMIx's local data, but mpirun aborts the job at the first non-zero exit,
# so the second refusal may be cut short: ask for at least one and no output at all.
timeout 60 mpirun -n 2 "$LLMLAUNCH" env --format json --agree-timeout 20 >"$agree_tmp/two.out" 2>"$agree_tmp/two.err" \
	&& fail "two llmlaunch on one node were accepted"
n=$(grep -c "^llmlaunch: 2 llmlaunch processes on 1 node (2 on '[^']*'): llmlaunch runs once per node" "$agree_tmp/two.err")
[ "$n" -ge 1 ] || fail "expected the refusal: $(cat "$agree_tmp/two.err")"
[ ! -s "$agree_tmp/two.out" ] || fail "a refused run printed values: $(cat "$agree_tmp/two.out")"
grep -q "mpirun: --map-by ppr:1:node" "$agree_tmp/two.err" || fail "no mpirun hint"

# 3. A real one-node launch through mpirun's PMIx server.
if /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then
	timeout 180 mpirun -n 1 "$LLMLAUNCH" --python /usr/bin/python3 --nproc-per-node 2 --agree-timeout 60 \
		"$LL_SRCDIR/examples/train.py" --steps 2 >"$agree_tmp/train.out" 2>"$agree_tmp/train.err" \
		|| fail "mpirun launch failed: $(tail -20 "$agree_tmp/train.err")"
	# mpirun forwards each worker's output as it comes, so two report lines can share
	# a line of its output: count the reports, not the lines.
	n=$(grep -oP 'llmlaunch-example rank=\d+ world_size=2 .*?allreduce=3 ' "$agree_tmp/train.out" | wc -l)
	[ "$n" = 2 ] || fail "expected 2 workers of world size 2: $(cat "$agree_tmp/train.out")"
else
	echo "note: torch missing, launch part not run" >&2
fi
echo "ok: mpirun agreement, refusal and launch"
