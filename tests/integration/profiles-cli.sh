# `llmlaunch profiles list|show|validate`, automatic matching on fake nodes (DMI names
# through --fsroot) and on real topologies from LL_REALDATA, when_exists under
# --fsroot, and profile values reaching the planner with their FILE:LINE.
set -u

command -v jq >/dev/null || { echo "skip: jq is not installed" >&2; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}
run() { # run NAME EXPECTED_STATUS CMD...: stdout in $tmp/out, stderr in $tmp/err
	local name=$1 want=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	local got=$?
	if [ "$got" != "$want" ]; then
		fail "$name: exit $got, expected $want"
		sed 's/^/  stderr: /' "$tmp/err" >&2
	fi
}
has() { grep -qF -- "$3" "$2" || { fail "$1: '$3' not in $(basename "$2"):"; sed 's/^/  | /' "$2" >&2; }; }
json_is() { # json_is NAME FILTER EXPECTED (on $tmp/out): printed so, or an equal JSON value
	local got  # (jq 1.7 prints a number as the file spells it, 300.0; 1.6 as 300)
	got=$(jq -c "$2" "$tmp/out")
	[ "$got" = "$3" ] || jq -e --argjson want "$3" "($2) == \$want" "$tmp/out" >/dev/null 2>&1 ||
		fail "$1: $2 is $got, expected $3"
}

L=$LLMLAUNCH
P=$LL_SRCDIR/profiles
export LLMLAUNCH_PROFILE_PATH=$P
export XDG_CONFIG_HOME=$tmp/xdg LLMLAUNCH_SYSTEM_CONFIG=$tmp/none.yaml
cd "$tmp"

# --- validate: every shipped profile, then a file with one problem of each kind.
run "validate-shipped" 0 "$L" profiles validate "$P"/*.yaml
[ "$(grep -c ': ok$' "$tmp/out")" = 11 ] || fail "validate-shipped: expected 11 'ok' lines: $(cat "$tmp/out")"

cat >bad.yaml <<'EOF'
name: bad
nccl:
  NCCL_IB_HCAS: mlx5_0
  NCCL_NET_GDR_LEVEL: NEAR
env:
  LD_PRELOAD: /tmp/x.so
torchrun:
  max_restart: 3
EOF
run "validate-bad" 1 "$L" profiles validate bad.yaml "$P/roce-v2.yaml"
cat >"$tmp/want" <<'EOF'
llmlaunch: bad.yaml:3:3: nccl.NCCL_IB_HCAS: 'NCCL_IB_HCAS' is not a variable the planner decides
hint: did you mean 'NCCL_IB_HCA'?
llmlaunch: bad.yaml:4:23: nccl.NCCL_NET_GDR_LEVEL: 'NEAR' is not a valid value: expected LOC, PIX, PXB, PHB, SYS or 0-5 or auto
llmlaunch: bad.yaml:6:3: env.LD_PRELOAD: 'LD_PRELOAD' selects code the workers load; a profile may not set it
hint: pass --allow-loader-vars if you trust this profile to choose code
llmlaunch: bad.yaml:8:3: torchrun.max_restart: unknown key 'max_restart'
hint: did you mean 'max_restarts'?
EOF
diff -u "$tmp/want" "$tmp/err" >&2 || fail "validate-bad: stderr differs"
has "validate-bad" "$tmp/out" "$P/roce-v2.yaml: ok" # the good file after a bad one is still checked

printf 'extends: loop-b.yaml\n' >loop-a.yaml
printf 'extends: loop-a.yaml\n' >loop-b.yaml
run "validate-cycle" 1 "$L" profiles validate loop-a.yaml
has "validate-cycle" "$tmp/err" "llmlaunch: ./loop-b.yaml:1:10: extends: cycle '$tmp/loop-a.yaml' -> '$tmp/loop-b.yaml' -> '$tmp/loop-a.yaml'"
printf 'extends: infinband\n' >typo.yaml
run "validate-missing" 1 "$L" profiles validate typo.yaml
has "validate-missing" "$tmp/err" "llmlaunch: typo.yaml:1:10: extends: no profile named 'infinband'"
has "validate-missing" "$tmp/err" "hint: did you mean 'infiniband'?"
run "validate-unreadable" 1 "$L" profiles validate nothere.yaml
has "validate-unreadable" "$tmp/err" "llmlaunch: cannot read profile 'nothere.yaml': No such file or directory"
# A directory said "Input/output error"; a FIFO (as a profile, as ./.llmlaunch.yaml,
# as NAME.yaml in LLMLAUNCH_PROFILE_PATH) made every command wait forever.
mkdir dir.yaml
run "validate-dir" 1 "$L" profiles validate ./dir.yaml
has "validate-dir" "$tmp/err" "llmlaunch: cannot read profile './dir.yaml': Is a directory"
mkfifo fifo.yaml
run "validate-fifo" 1 timeout 20 "$L" profiles validate ./fifo.yaml
has "validate-fifo" "$tmp/err" "llmlaunch: cannot read profile './fifo.yaml': not a regular file (a FIFO, socket or device)"
run "show-fifo" 1 timeout 20 "$L" profiles show ./fifo.yaml
mkdir fifodir && mkfifo fifodir/fifo.yaml && mkdir fifocwd && mkfifo fifocwd/.llmlaunch.yaml
LLMLAUNCH_PROFILE_PATH=$tmp/fifodir run "show-fifo-name" 1 timeout 20 "$L" profiles show fifo
has "show-fifo-name" "$tmp/err" "cannot read profile '$tmp/fifodir/fifo.yaml': not a regular file"
cd fifocwd
run "local-fifo" 1 timeout 20 "$L" env --topology "$LL_FIXTURES/hwloc/two-socket-4gpu-2hca.xml"
has "local-fifo" "$tmp/err" "llmlaunch: cannot read profile '.llmlaunch.yaml': not a regular file"
cd "$tmp"
run "validate-none" 2 "$L" profiles validate
run "unknown-sub" 2 "$L" profiles frobnicate
run "help" 0 "$L" profiles --help
has "help" "$tmp/out" "llmlaunch profiles validate site.yaml team.yaml"

# --- show: the merged result, each value with its file and line.
run "show" 0 "$L" profiles show gcp-a3-ultra --json
# gIB is only set where its plugin is installed: here the IB of roce-v2 stays.
json_is "show" '[.values[] | select(.name == "NCCL_NET") | .value, .origin, .skipped]' \
	"[\"IB\",\"$P/roce-v2.yaml:19\",false]"
json_is "show" '.values[] | select(.name == "NCCL_IB_GID_INDEX") | .origin' "\"$P/roce-v2.yaml:13\""
json_is "show" '.expect' '{"gpus":8,"active_rdma_ports":8,"link_layer":"Ethernet","gdr_required":true,"allreduce_busbw_gbps":null,"pair_busbw_gbps":null,"pair_latency_us":null}'
# The preflight check's figures keep their FILE:LINE: their source in the check's verdict.
printf 'name: fast-site\nextends: gcp-a3-ultra\nexpect:\n  pair_busbw_gbps: 300\n' >"$tmp/fast-site.yaml"
run "show-figure" 0 "$L" profiles show "$tmp/fast-site.yaml" --json
json_is "show-figure" '.expect.pair_busbw_gbps' "{\"value\":300,\"source\":\"$tmp/fast-site.yaml:4\"}"
run "show-text" 0 "$L" profiles show network-only
has "show-text" "$tmp/out" "NCCL_P2P_DISABLE=1  [env]  $P/network-only.yaml:12"
has "show-text" "$tmp/out" "NCCL_SHM_DISABLE=1  [env]  $P/network-only.yaml:15"
! grep -q NCCL_IB_DISABLE "$tmp/out" || fail "network-only must not touch NCCL_IB_DISABLE"

# --- a fake AWS p5 (DMI name through --fsroot): aws-p5 matches, and NCCL_NET follows
# the plugin file's presence under the same root.
. "$LL_FIXTURES/sysfs/fake-sysfs.sh"
fake_machine "$tmp/p5" 2
echo p5.48xlarge >"$tmp/p5/sys/class/dmi/id/product_name"
run "list-p5" 0 "$L" profiles list --json --fsroot "$tmp/p5"
json_is "list-p5" '[.profiles[] | select(.matches == "yes") | .name]' '["aws-p5"]'
json_is "list-p5" '[.profiles[] | select(.matches == "never") | .name]' '["ethernet","infiniband","network-only","oci-roce","roce-v2","spectrum-x"]'
json_is "list-p5" '.profiles[] | select(.name == "dgx-h100") | .why' \
	"\"dmi_product_name: 'p5.48xlarge' is not 'DGX*H100*', 'DGX*H200*'\""
run "explain-p5-noplugin" 0 "$L" explain --json --fsroot "$tmp/p5"
json_is "explain-p5-noplugin" '[.variables[]? // .settings[]? | select(.name == "NCCL_NET")] | length' '0'
mkdir -p "$tmp/p5/opt/amazon/ofi-nccl/lib" && : >"$tmp/p5/opt/amazon/ofi-nccl/lib/libnccl-net.so"
run "explain-p5" 0 "$L" explain --fsroot "$tmp/p5"
has "explain-p5" "$tmp/out" "NCCL_NET=AWS Libfabric  [profile $P/aws-p5.yaml:18]"
has "explain-p5" "$tmp/out" "FI_PROVIDER=efa  [profile $P/aws-p5.yaml:26]"

# --- layers: ./.llmlaunch.yaml and --profile on top of the matched profile, in order.
printf 'env:\n  FI_PROVIDER: local\n  SITE: local\n' >.llmlaunch.yaml
printf 'env:\n  SITE: cli\n' >cli.yaml
run "layers" 0 "$L" explain --fsroot "$tmp/p5" --profile cli.yaml
has "layers" "$tmp/out" "FI_PROVIDER=local  [profile .llmlaunch.yaml:2]"
has "layers" "$tmp/out" "SITE=cli  [profile cli.yaml:2]"
mkdir -p "$tmp/xdg/llmlaunch" && printf 'env:\n  USERCONF: "1"\n' >"$tmp/xdg/llmlaunch/config.yaml"
run "show-layers" 0 "$L" profiles show --json --fsroot "$tmp/p5" --profile cli.yaml
json_is "show-layers" '[.layers[] | [.kind, .name]]' '[["matched","aws-p5"],["user","config"],["local",".llmlaunch"],["cli","cli"]]'
# The environment still wins over profiles (the planner's precedence).
SITE=from-env run "env-wins" 0 "$L" explain --fsroot "$tmp/p5" --profile cli.yaml
has "env-wins" "$tmp/out" "SITE=from-env  [environment]"
rm -f .llmlaunch.yaml

# --- real topologies: a profile for "4 GPUs on mlx5 InfiniBand" and one for V100s.
if [ -d "${LL_REALDATA:-}/hwloc_xml" ]; then
	mkdir -p "$tmp/site"
	printf 'description: four GPUs on IB\nmatch:\n  gpu_count: 4\n  rdma_driver: mlx5\n  link_layer: InfiniBand\n' \
		>"$tmp/site/four-gpu-ib.yaml"
	printf 'description: V100 nodes\nmatch:\n  gpu_model: "*V100*"\n' >"$tmp/site/v100.yaml"
	for case in "psmgmt/topo.jrc0323.xml:four-gpu-ib" "mpibind/coral-lassen.xml:four-gpu-ib,v100" \
		"psmgmt/topo.jwc09n003.xml:four-gpu-ib" "psmgmt/topo.dp-dam01.xml:" \
		"hwloc-v2x-nvidiaDGX2.xml:v100" "psmgmt/topo.jrc0732.xml:"; do
		file=${case%%:*} want=${case#*:}
		LLMLAUNCH_PROFILE_PATH=$tmp/site:$P run "real-$file" 0 "$L" profiles list --json \
			--topology "$LL_REALDATA/hwloc_xml/$file"
		got=$(jq -r '[.profiles[] | select(.matches == "yes") | .name] | join(",")' "$tmp/out")
		[ "$got" = "$want" ] || fail "real $file: matched '$got', expected '$want'"
	done
else
	echo "note: $LL_REALDATA absent, real-topology matching not checked" >&2
fi

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed" >&2
	exit 1
fi
echo "profiles-cli: all checks passed"
