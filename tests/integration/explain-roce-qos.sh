#!/bin/bash
# RoCE traffic classes from the host's own QoS state (docs/roce.md), on fake trees
# (tests/fixtures/sysfs/fake-sysfs.sh, scenario_roce_qos) with MLNX_OFED's files and
# recorded DCB netlink replies: a driver-forced class (106, 236) is never contradicted
# and explain says the driver decides; trust DSCP with PFC on priority 3 and ECN on it
# derives 106; lossy RoCE and a profile class against the forced one are linted; the
# snapshot keeps the facts (a replay gives the same plan).
set -euo pipefail
: "${LLMLAUNCH:?}" "${LL_FIXTURES:?}" "${LL_SRCDIR:?}"
command -v jq >/dev/null || { echo "explain-roce-qos: jq is not installed" >&2; exit 77; }
tmp=$(mktemp -d /tmp/ll-roce-qos.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$LL_FIXTURES/sysfs/fake-sysfs.sh"
fail() { echo "explain-roce-qos: FAIL: $*" >&2; exit 1; }
is() { # FILE JQ EXPECTED
	local got
	got=$(jq -c "$2" "$1")
	[ "$got" = "$3" ] || fail "$(basename "$1"): $2 = $got, want $3"
}
setting() { echo "(.settings[] | select(.name == \"$1\") | $2)"; }
reason_has() { # FILE NAME TEXT
	jq -r "$(setting "$2" .reason)" "$1" | grep -qF "$3" || fail "$(basename "$1"): $2's reason lacks '$3': $(jq -r "$(setting "$2" .reason)" "$1")"
}
lint_has() { # FILE VARIABLE LEVEL TEXT
	jq -r ".lint[] | select(.variable == \"$2\" and .level == \"$3\") | .message" "$1" | grep -qF "$4" ||
		fail "$(basename "$1"): no $3 on $2 saying '$4': $(jq -c '.lint' "$1")"
}
no_lint() { # FILE TEXT
	if jq -r '.lint[].message' "$1" | grep -qF "$2"; then fail "$(basename "$1"): unexpected lint '$2'"; fi
}
unset NCCL_IB_TC NCCL_IB_SL NCCL_IB_FIFO_TC NCCL_IB_HCA LD_LIBRARY_PATH

# Forced by the driver: NCCL_IB_TC stays unset, every class variable is accounted for.
for forced in 106 236; do
	root=$tmp/forced$forced
	scenario_roce_qos "$root" "forced:$forced"
	"$LLMLAUNCH" probe --fsroot "$root" --json >"$tmp/p$forced.json"
	is "$tmp/p$forced.json" '.rdma_devices[0].ports[0].qos | [.forced_tclass, .trust, .pfc_priorities, .ecn_rp_priorities, .cnp_dscp, .active_mtu]' \
		"[$forced,\"dscp\",[3],[3],48,4096]"
	e=$tmp/forced$forced.json
	"$LLMLAUNCH" explain --fsroot "$root" --json >"$e"
	is "$e" "[$(setting NCCL_IB_TC .value), $(setting NCCL_IB_SL .value), $(setting NCCL_IB_FIFO_TC .value)]" '[null,null,null]'
	reason_has "$e" NCCL_IB_TC "the driver forces class $forced on mlx5_0:1"
	reason_has "$e" NCCL_IB_TC "the driver decides"
	reason_has "$e" NCCL_IB_FIFO_TC "2.22.3"
	no_lint "$e" "contradicts"
	# A profile's class against the forced one: a warning naming both values and the files.
	printf 'name: site\nenv:\n  NCCL_IB_TC: "41"\n' >"$tmp/site.yaml"
	"$LLMLAUNCH" explain --fsroot "$root" --profile "$tmp/site.yaml" --json >"$tmp/site$forced.json"
	lint_has "$tmp/site$forced.json" NCCL_IB_TC warning \
		"NCCL_IB_TC=41 (profile $tmp/site.yaml:3) contradicts class $forced, which the driver forces on mlx5_0:1 (/sys/class/infiniband/mlx5_0/tc/1/traffic_class)"
	# Equal to the forced one: nothing to say.
	NCCL_IB_TC=$forced "$LLMLAUNCH" explain --fsroot "$root" --json >"$tmp/eq$forced.json"
	no_lint "$tmp/eq$forced.json" "contradicts"
done
# The bare-number form of the file reads the same.
root=$tmp/bare
scenario_roce_qos "$root" none
fake_tclass "$root" mlx5_0 1 106
"$LLMLAUNCH" probe --fsroot "$root" --json >"$tmp/bare.json"
is "$tmp/bare.json" '.rdma_devices[0].ports[0].qos | [.forced_tclass, .dcb, .dcb_unknown]' \
	'[106,"not-recorded","the --fsroot tree holds no recorded DCB reply (dcbnl/IF)"]'

# Trust DSCP, PFC on priority 3 only, DSCP 26 maps there, ECN on: class 106.
root=$tmp/dscp
scenario_roce_qos "$root" dscp-pfc3
e=$tmp/dscp.json
"$LLMLAUNCH" explain --fsroot "$root" --json >"$e"
is "$e" "[$(setting NCCL_IB_TC .value), $(setting NCCL_IB_TC .source), $(setting NCCL_IB_SL .value)]" '["106","probe",null]'
reason_has "$e" NCCL_IB_TC "trust DSCP, PFC only on priority 3 on mlx5_0:1; DSCP 26 maps to it: class 106"
reason_has "$e" NCCL_IB_SL "trust DSCP"
# The class reaches the workers' environment.
"$LLMLAUNCH" env --fsroot "$root" | grep -qx "export NCCL_IB_TC='106'" || fail "env lacks NCCL_IB_TC=106"
# A user class on a priority without PFC.
NCCL_IB_TC=41 "$LLMLAUNCH" explain --fsroot "$root" --json >"$tmp/lossyclass.json"
lint_has "$tmp/lossyclass.json" NCCL_IB_TC warning \
	"NCCL_IB_TC=41 (environment) is DSCP 10, priority 1 on mlx5_0:1, which has no PFC while priority 3 has"
# The shipped OCI profile on this fabric: its class 41 (DSCP 10) lands on priority 1.
"$LLMLAUNCH" explain --fsroot "$root" --profile oci-roce --json >"$tmp/oci.json"
lint_has "$tmp/oci.json" NCCL_IB_TC warning "NCCL_IB_TC=41 (profile $LL_SRCDIR/profiles/oci-roce.yaml:20) is DSCP 10, priority 1 on mlx5_0:1, which has no PFC while priority 3 has"
# Spectrum-X's class is the derived one: nothing to say.
"$LLMLAUNCH" explain --fsroot "$root" --profile spectrum-x --json >"$tmp/spx.json"
no_lint "$tmp/spx.json" "NCCL_IB_TC="
# The snapshot keeps every fact: a replay plans the same.
"$LLMLAUNCH" probe --fsroot "$root" --save "$tmp/dscp.xml" >/dev/null
"$LLMLAUNCH" explain --topology "$tmp/dscp.xml" --json >"$tmp/replay.json"
is "$tmp/replay.json" "$(setting NCCL_IB_TC .value)" '"106"'

# Lossy RoCE: no PFC, ECN off.
root=$tmp/lossy
scenario_roce_qos "$root" lossy
e=$tmp/lossy.json
"$LLMLAUNCH" explain --fsroot "$root" --json >"$e"
is "$e" "$(setting NCCL_IB_TC .value)" 'null'
reason_has "$e" NCCL_IB_TC "no priority has PFC (lossy RoCE)"
lint_has "$e" NCCL_IB_TC warning "lossy RoCE on mlx5_0:1: no priority has PFC and ECN is off on every priority"

# A driver without DCB: unknown, said why; no lossy verdict on what is not known.
root=$tmp/nodcb
scenario_roce_qos "$root" unsupported 1500
e=$tmp/nodcb.json
"$LLMLAUNCH" explain --fsroot "$root" --json >"$e"
reason_has "$e" NCCL_IB_TC "no DCB support"
no_lint "$e" "lossy"
lint_has "$e" NCCL_IB_HCA warning "RoCE path MTU 1024 on mlx5_0:1 (enp2s0f0 MTU 1500)"
echo "explain-roce-qos: ok"
