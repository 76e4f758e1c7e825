#!/usr/bin/env bash
# One job, one answer: `env` (the agreement's Slurm backend, as `run` uses it) and
# `slurm task-prolog` read the job's variables through the same reader and give the
# same LLMLAUNCH_NNODES and LLMLAUNCH_NODE_RANK, whichever of Slurm's node-count
# variables the job has (SLURM_STEP_NUM_NODES in a step; SLURM_JOB_NUM_NODES and its
# old name SLURM_NNODES in a batch script). They used to fall back differently.
set -euo pipefail
: "${LLMLAUNCH:?}" "${LL_FIXTURES:?}"
topo=$LL_FIXTURES/hwloc/two-socket-4gpu-2hca.xml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

value() { # NAME FILE: the value of 'export NAME=' (sh or slurm format)
	sed -n "s/^export $1=//p" "$2" | tr -d "'"
}

check() { # DESCRIPTION EXPECTED-NNODES VAR=VALUE...
	local what=$1 want=$2
	shift 2
	# Node 1 of the job: node 0 would check the derived master port, which is not
	# what this test is about. localhost resolves without a network.
	env -u SLURM_STEP_NUM_NODES -u SLURM_JOB_NUM_NODES -u SLURM_NNODES -u PMIX_NAMESPACE \
		SLURM_JOB_ID=4242 SLURM_JOB_NODELIST=localhost,n2,n3 SLURM_NODEID=1 SLURM_LOCALID=0 "$@" \
		"$LLMLAUNCH" env --format slurm --topology "$topo" >"$tmp/env.txt" 2>"$tmp/env.err" ||
		fail "$what: env exited $?: $(cat "$tmp/env.err")"
	env -u SLURM_STEP_NUM_NODES -u SLURM_JOB_NUM_NODES -u SLURM_NNODES -u PMIX_NAMESPACE \
		SLURM_JOB_ID=4242 SLURM_JOB_NODELIST=localhost,n2,n3 SLURM_NODEID=1 SLURM_LOCALID=0 "$@" \
		"$LLMLAUNCH" slurm task-prolog --topology "$topo" >"$tmp/tp.txt" 2>"$tmp/tp.err" ||
		fail "$what: task-prolog exited $?: $(cat "$tmp/tp.err")"
	[ "$(value LLMLAUNCH_NNODES "$tmp/env.txt")" = "$want" ] ||
		fail "$what: env gives LLMLAUNCH_NNODES='$(value LLMLAUNCH_NNODES "$tmp/env.txt")', expected $want"
	[ "$(value LLMLAUNCH_NNODES "$tmp/tp.txt")" = "$want" ] ||
		fail "$what: task-prolog gives LLMLAUNCH_NNODES='$(value LLMLAUNCH_NNODES "$tmp/tp.txt")', expected $want"
	[ "$(value LLMLAUNCH_NODE_RANK "$tmp/env.txt")" = 1 ] || fail "$what: env's LLMLAUNCH_NODE_RANK"
	[ "$(value LLMLAUNCH_NODE_RANK "$tmp/tp.txt")" = 1 ] || fail "$what: task-prolog's LLMLAUNCH_NODE_RANK"
}

check "in a step" 3 SLURM_STEP_ID=0 SLURM_STEP_NUM_NODES=3 SLURM_JOB_NUM_NODES=5 SLURM_NNODES=5
check "batch script, SLURM_JOB_NUM_NODES only" 3 SLURM_JOB_NUM_NODES=3
check "batch script, SLURM_NNODES only" 3 SLURM_NNODES=3
check "empty step count falls back" 3 SLURM_STEP_NUM_NODES= SLURM_JOB_NUM_NODES=3

# A count that is not a number: env refuses, naming the variable; the TaskProlog
# still exits 0 (a failing TaskProlog kills the task) and says why with 'print'.
if SLURM_JOB_ID=4242 SLURM_JOB_NODELIST=localhost SLURM_NODEID=0 SLURM_JOB_NUM_NODES=three \
	"$LLMLAUNCH" env --format slurm --topology "$topo" >/dev/null 2>"$tmp/err"; then
	fail "env accepted SLURM_JOB_NUM_NODES=three"
fi
grep -q "SLURM_JOB_NUM_NODES='three' is not a number" "$tmp/err" || fail "env's message: $(cat "$tmp/err")"
SLURM_JOB_ID=4242 SLURM_JOB_NODELIST=localhost SLURM_NODEID=0 SLURM_LOCALID=0 SLURM_JOB_NUM_NODES=three \
	"$LLMLAUNCH" slurm task-prolog --topology "$topo" >"$tmp/tp.txt" 2>/dev/null || fail "task-prolog exited $?"
grep -q "^print llmlaunch: warning: LLMLAUNCH_NNODES not exported: SLURM_JOB_NUM_NODES='three' is not a number" \
	"$tmp/tp.txt" || fail "task-prolog's print line: $(cat "$tmp/tp.txt")"
echo "slurm-job-env: ok"
