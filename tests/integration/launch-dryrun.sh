# --dry-run prints the exact torchrun command and the environment it adds, and runs
# nothing. Checked against `explain --json` of the same node, on this machine and on
# a real two-NUMA-node GPU server's topology (DGX-2, from ../shared/realdata).
. "$(dirname "$0")/launch-common.bash"
require_jq
SELF=$(readlink -f "$LLMLAUNCH")

# check_against_plan DRYRUN_JSON PLAN_JSON: env added == planned exports that differ
# from ours, placement == the plan's ranks.
check_against_plan() {
	local dry=$1 plan=$2 expected_env got_env placement name
	expected_env=$(jq -r '.settings[] | select(.exported and .value != null) | select(.source != "launch") | "\(.name)=\(.value)"' "$plan" |
		while IFS= read -r kv; do
			name=${kv%%=*}
			[ "${!name-<unset>}" = "${kv#*=}" ] && continue
			printf '%s\n' "$kv"
		done | sort)
	placement=$(jq -r '[.ranks[] | select(.cpuset != null or (.numa_node != null and .numa_node >= 0)) |
		"\(.local_rank)" + (if .cpuset then ":cpus=\(.cpuset)" else "" end) +
		(if .numa_node != null and .numa_node >= 0 then ":mem=\(.numa_node)" else "" end)] | join(";")' "$plan")
	got_env=$(jq -r '.env | to_entries[] | select(.key | IN("LLMLAUNCH_PLACEMENT", "LLMLAUNCH_STATUS_DIR", "NCCL_DEBUG", "NCCL_DEBUG_FILE") | not) | "\(.key)=\(.value)"' "$dry" | sort)
	assert_eq "environment added" "$expected_env" "$got_env"
	assert_eq "placement" "$placement" "$(jq -r '.env.LLMLAUNCH_PLACEMENT // ""' "$dry")"
	assert_eq "placement field" "$placement" "$(jq -r '.placement // ""' "$dry")"
}

# --- this machine, torchrun options with dashes, script arguments left alone -----
"$LLMLAUNCH" --dry-run --json --python /bin/false --nproc-per-node 2 --master-port 1234 \
	--max-restarts 2 -r 1 "$EXAMPLE" --nproc-per-node 9 -m x >"$WORK/dry.json" 2>"$WORK/err" ||
	{ cat "$WORK/err" >&2; fail "dry run failed"; }
"$LLMLAUNCH" explain --json --nproc-per-node 2 >"$WORK/plan.json"
logdir=$(jq -r '.argv as $a | ($a | index("--log_dir")) as $i | $a[$i + 1]' "$WORK/dry.json")
[[ "$logdir" =~ ^"$TMPDIR"/llmlaunch-[0-9]+$ ]] || fail "log dir '$logdir' is not a per-job directory in TMPDIR"
# Every option once, in torchrun's table order, whoever set it (the plan is the one truth).
expected=$(jq -cn --arg self "$SELF" --arg ex "$EXAMPLE" --arg log "$logdir" '["/bin/false", "-m",
	"torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2", "--max_restarts", "2",
	"--log_dir", $log, "--redirects", "1", "--tee", "2:0", "--node_rank", "0", "--master_addr", "127.0.0.1",
	"--master_port", "1234", "--no_python", $self, "__worker", "--",
	"/bin/false", "-u", $ex, "--nproc-per-node", "9", "-m", "x"]')
assert_eq "argv" "$expected" "$(jq -c .argv "$WORK/dry.json")"
assert_eq "sources" '["cluster","cli --nproc-per-node","cli --max-restarts","launch","cli -r","default","cluster","cluster","cli --master-port"]' \
	"$(jq -c '[.torchrun[] | .source + (if .origin then " " + .origin else "" end)]' "$WORK/dry.json")"
assert_eq "nproc_per_node" 2 "$(jq -r .nproc_per_node "$WORK/dry.json")"
assert_eq "status dir" "$logdir/status" "$(jq -r .env.LLMLAUNCH_STATUS_DIR "$WORK/dry.json")"
# Supervised launches have NCCL log at INFO into the job directory, for the watcher.
assert_eq "NCCL_DEBUG" INFO "$(jq -r .env.NCCL_DEBUG "$WORK/dry.json")"
assert_eq "NCCL_DEBUG_FILE" "$logdir/nccl/nccl.%h.%p" "$(jq -r .env.NCCL_DEBUG_FILE "$WORK/dry.json")"
check_against_plan "$WORK/dry.json" "$WORK/plan.json"

# --- the text form is a sh script: its exports survive the round trip through bash --
value=$'two words, a \'quote\', $HOME, back\\slash and \xc3\xa9'
"$LLMLAUNCH" --dry-run --python /bin/false --set "LLMLAUNCH_TEST_VALUE=$value" "$EXAMPLE" >"$WORK/dry.sh"
grep -q '^export LLMLAUNCH_PLACEMENT=' "$WORK/dry.sh" || fail "no LLMLAUNCH_PLACEMENT export in the text form"
tail -n 1 "$WORK/dry.sh" | grep -q '^/bin/false -m torch.distributed.run ' || fail "last line is not the command"
got=$(bash -c "$(grep '^export ' "$WORK/dry.sh"); printf '%s' \"\$LLMLAUNCH_TEST_VALUE\"")
assert_eq "value through sh quoting" "$value" "$got"

# --- --bind none: no placement --------------------------------------------------------
"$LLMLAUNCH" --dry-run --json --python /bin/false --bind none -m pkg.train a b >"$WORK/none.json"
assert_eq "unbound tail" '["/bin/false","-u","-m","pkg.train","a","b"]' "$(jq -c '.argv[-6:]' "$WORK/none.json")"
assert_eq "unbound placement" null "$(jq -c '.env.LLMLAUNCH_PLACEMENT' "$WORK/none.json")"
# Unbound workers still start through __worker, which records their exit status.
assert_eq "unbound worker entry" true "$(jq '.argv | index("__worker") != null' "$WORK/none.json")"

# --- the user's own NCCL logging stands; --exec has no watcher and no exit records ---
NCCL_DEBUG=WARN "$LLMLAUNCH" --dry-run --json --python /bin/false "$EXAMPLE" >"$WORK/dbg.json"
assert_eq "user's NCCL_DEBUG" null "$(jq -c '.env.NCCL_DEBUG_FILE' "$WORK/dbg.json")"
# The user's own file is theirs, and read there; without a level NCCL would write
# nothing to it, so INFO.
"$LLMLAUNCH" --dry-run --json --python /bin/false --set NCCL_DEBUG_FILE=/var/tmp/n.%h "$EXAMPLE" >"$WORK/dbg.json"
assert_eq "--set NCCL_DEBUG_FILE" /var/tmp/n.%h "$(jq -r '.env.NCCL_DEBUG_FILE' "$WORK/dbg.json")"
assert_eq "--set NCCL_DEBUG_FILE: its level" INFO "$(jq -r '.env.NCCL_DEBUG' "$WORK/dbg.json")"

# --- torchrun's options: once each, the agreement's world the agreement's ------------
"$LLMLAUNCH" --dry-run --json --python /bin/false --set torchrun.master_port=29555 "$EXAMPLE" >"$WORK/port.json"
assert_eq "--set torchrun.master_port once" 1 "$(jq '[.argv[] | select(. == "--master_port")] | length' "$WORK/port.json")"
assert_eq "--set torchrun.master_port value" 29555 "$(jq -r '.argv as $a | $a[($a | index("--master_port")) + 1]' "$WORK/port.json")"
set +e
SLURM_JOB_ID=7 SLURM_JOB_NODELIST=localhost SLURM_NNODES=1 SLURM_NODEID=0 \
	"$LLMLAUNCH" --dry-run --python /bin/false --node-rank 1 "$EXAMPLE" >"$WORK/out" 2>"$WORK/err"
rc=$?
set -e
assert_eq "--node-rank under Slurm: usage error" 2 "$rc"
grep -q "torchrun.node_rank=1 (--node-rank) would replace this node's rank, which the slurm agreement decides" \
	"$WORK/err" || fail "--node-rank under Slurm: $(cat "$WORK/err")"
set +e
"$LLMLAUNCH" --dry-run --python /bin/false --set torchrun.redirects=foo "$EXAMPLE" >"$WORK/out" 2>"$WORK/err"
rc=$?
set -e
assert_eq "a value torchrun would crash on" 2 "$rc"
# A local profile's master port on one node: used, once, with its file and line.
printf 'torchrun:\n  master_port: 29600\n' >"$WORK/port.yaml"
"$LLMLAUNCH" --dry-run --json --python /bin/false --profile "$WORK/port.yaml" "$EXAMPLE" >"$WORK/pport.json"
assert_eq "profile master_port once" '["29600"]' \
	"$(jq -c '.argv as $a | [range(0; $a | length) | select($a[.] == "--master_port") | $a[. + 1]]' "$WORK/pport.json")"
assert_eq "profile master_port source" "profile $WORK/port.yaml:2" \
	"$(jq -r '.torchrun[] | select(.option == "master_port") | .source + " " + .origin' "$WORK/pport.json")"
# A local profile's NCCL_DEBUG=WARN does not blind the watcher.
printf 'env:\n  NCCL_DEBUG: WARN\n' >"$WORK/quiet.yaml"
"$LLMLAUNCH" --dry-run --json --python /bin/false --profile "$WORK/quiet.yaml" "$EXAMPLE" >"$WORK/quiet.json"
assert_eq "profile NCCL_DEBUG=WARN: watched" INFO "$(jq -r '.env.NCCL_DEBUG' "$WORK/quiet.json")"
assert_eq "profile NCCL_DEBUG=WARN: our file" "$(jq -r '.argv as $a | $a[($a | index("--log_dir")) + 1]' "$WORK/quiet.json")/nccl/nccl.%h.%p" \
	"$(jq -r '.env.NCCL_DEBUG_FILE' "$WORK/quiet.json")"

# --- a variable already in the environment is not "added" -------------------------
OMP_NUM_THREADS=$(jq -r '.settings[] | select(.name == "OMP_NUM_THREADS") | .value' "$WORK/plan.json") \
	"$LLMLAUNCH" --dry-run --json --python /bin/false --nproc-per-node 2 "$EXAMPLE" >"$WORK/inh.json"
assert_eq "inherited OMP_NUM_THREADS" null "$(jq -c '.env.OMP_NUM_THREADS' "$WORK/inh.json")"

# --- a two-NUMA-node GPU server, from its topology ----------------------------------
DGX="${LL_REALDATA:-}/hwloc_xml/hwloc-v2x-nvidiaDGX2.xml"
if [ -r "$DGX" ]; then
	"$LLMLAUNCH" --dry-run --json --python /bin/false --topology "$DGX" "$EXAMPLE" >"$WORK/dgx.json" 2>"$WORK/err"
	"$LLMLAUNCH" explain --json --topology "$DGX" >"$WORK/dgx-plan.json" 2>/dev/null
	ngpu=$(jq '[.ranks[] | select(.gpu != null)] | length' "$WORK/dgx-plan.json")
	assert_eq "DGX-2 ranks" 16 "$ngpu"
	assert_eq "DGX-2 nproc" 16 "$(jq -r '.argv as $a | $a[($a | index("--nproc_per_node")) + 1]' "$WORK/dgx.json")"
	assert_eq "DGX-2 NUMA nodes used" '[0,1]' "$(jq -c '[.ranks[].numa_node] | unique' "$WORK/dgx-plan.json")"
	assert_eq "DGX-2 GPU order" PCI_BUS_ID "$(jq -r .env.CUDA_DEVICE_ORDER "$WORK/dgx.json")"
	check_against_plan "$WORK/dgx.json" "$WORK/dgx-plan.json"
else
	echo "note: $DGX not found, two-NUMA-node case not run" >&2
fi

assert_tmp_clean
echo "ok: dry run argv, environment and placement match the plan"
