#!/bin/bash
# RDMA device classes on a live-like tree (tests/fixtures/sysfs/fake-sysfs.sh,
# scenario_efa): the probe records each device's driver and node type, classifies it
# (AWS EFA: plugin, rxe: software, usNIC: unusable) and finds aws-ofi-nccl where the
# dynamic linker would; explain never puts EFA in NCCL_IB_HCA, says which plugin is
# missing and what the job does instead, and what it sets once the plugin is found.
set -euo pipefail
: "${LLMLAUNCH:?}" "${LL_FIXTURES:?}"
command -v jq >/dev/null || { echo "explain-rdma-classes: jq is not installed" >&2; exit 77; }
tmp=$(mktemp -d /tmp/ll-rdma-classes.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$LL_FIXTURES/sysfs/fake-sysfs.sh"
fail() { echo "explain-rdma-classes: FAIL: $*" >&2; exit 1; }
is() { # FILE JQ EXPECTED
	local got
	got=$(jq -c "$2" "$1")
	[ "$got" = "$3" ] || fail "$(basename "$1"): $2 = $got, want $3"
}
setting() { echo ".settings[] | select(.name == \"$1\") | $2"; }
# values FILE EXPECTED NAME...: the values of the named settings, in that order.
values() {
	local f=$1 want=$2 names
	shift 2
	names=$(printf '"%s",' "$@")
	names=${names%,}
	is "$f" "[$names] as \$n | [\$n[] as \$k | (.settings[] | select(.name == \$k) | .value)]" "$want"
}
unset LD_LIBRARY_PATH NCCL_IB_HCA NCCL_NET_PLUGIN FI_PROVIDER

root=$tmp/efa
scenario_efa "$root"
"$LLMLAUNCH" probe --fsroot "$root" --json >"$tmp/probe.json"
j=$tmp/probe.json
is "$j" '[.rdma_devices[] | [.name, .class, .driver, .node_type, .provider]]' \
	'[["rdmap16s27","plugin","efa",7,"efa"],["rxe0","software",null,1,null],["usnic_0","unusable","enic",6,null]]'
is "$j" '.nccl_net_plugins' \
	'{"known":true,"on_path":[],"off_path":["/opt/amazon/ofi-nccl/lib/libnccl-net.so","/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so"]}'
# The snapshot keeps them: a replay gives the same facts.
"$LLMLAUNCH" probe --fsroot "$root" --save "$tmp/efa.xml" >/dev/null
"$LLMLAUNCH" probe --topology "$tmp/efa.xml" --json >"$tmp/replay.json"
diff <(jq -S 'del(.host.source)' "$j") <(jq -S 'del(.host.source)' "$tmp/replay.json") >&2 ||
	fail "replayed facts differ"

# Installed off the library path: sockets, and the lint names the fix.
"$LLMLAUNCH" explain --fsroot "$root" --json >"$tmp/off.json"
e=$tmp/off.json
values "$e" '[null,"1","socket"]' NCCL_IB_HCA NCCL_IB_DISABLE LLMLAUNCH_NET
is "$e" '[.lint[] | select(.variable == "NCCL_NET_PLUGIN") | .level]' '["warning"]'
jq -r '.lint[] | select(.variable == "NCCL_NET_PLUGIN") | .message' "$e" |
	grep -qF "rdmap16s27: AWS EFA, which NCCL's IB transport cannot drive; NCCL needs the aws-ofi-nccl net plugin (libnccl-net.so, with libfabric's efa provider), which is not on the library path (installed as /opt/amazon/ofi-nccl/lib/libnccl-net.so, /opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so: add its directory to LD_LIBRARY_PATH); without it this job's traffic between nodes uses TCP sockets over ens5" ||
	fail "missing-plugin lint: $(jq -c '.lint' "$e")"
# rxe and usNIC are left out with their reasons; software RDMA only on request.
jq -r "$(setting NCCL_IB_DISABLE .reason)" "$e" | grep -qF "rxe0:1 (software RDMA" || fail "rxe0 not left out"
jq -r "$(setting NCCL_IB_DISABLE .reason)" "$e" | grep -qF "usnic_0:1 (Cisco usNIC" || fail "usnic_0 not left out"
NCCL_IB_HCA==rxe0:1 "$LLMLAUNCH" explain --fsroot "$root" --json >"$tmp/rxe.json"
is "$tmp/rxe.json" '[.lint[] | select(.variable == "NCCL_IB_HCA") | .level]' '["info"]'

# On the library path (ld.so.conf.d), found: the plan uses it.
fake_ld_conf "$root" efa /opt/amazon/ofi-nccl/lib
"$LLMLAUNCH" explain --fsroot "$root" --json >"$tmp/on.json"
e=$tmp/on.json
values "$e" '["ofi","efa",null,null,null]' LLMLAUNCH_NET FI_PROVIDER NCCL_NET_PLUGIN NCCL_IB_HCA NCCL_IB_DISABLE
is "$e" '[.lint[] | select(.variable == "NCCL_NET_PLUGIN")] | length' '0'
"$LLMLAUNCH" env --fsroot "$root" --format sh | grep -qxF "export FI_PROVIDER='efa'" || fail "env lacks FI_PROVIDER"
echo "explain-rdma-classes: ok"
