#!/bin/bash
# NCCL's own configuration files in explain (docs/planner.md, "NCCL's configuration
# files"): NCCL_CONF_FILE setting NCCL_IB_HCA on a node where llmlaunch plans
# another list: explain shows the file and line and that NCCL uses llmlaunch's
# value (the environment wins); ~/.nccl.conf stands aside for NCCL_CONF_FILE; the
# node's /etc/nccl.conf (under --fsroot) adds what llmlaunch leaves to NCCL.
set -euo pipefail
: "${LLMLAUNCH:?}" "${LL_FIXTURES:?}"
command -v jq >/dev/null || { echo "explain-nccl-conf: jq is not installed" >&2; exit 77; }
tmp=$(mktemp -d /tmp/ll-nccl-conf.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "explain-nccl-conf: FAIL: $*" >&2; exit 1; }
fixture=$LL_FIXTURES/hwloc/two-socket-4gpu-2hca.xml
unset NCCL_IB_HCA NCCL_TOPO_FILE NCCL_CONF_FILE
export HOME=$tmp/home
mkdir -p "$HOME"
printf 'NCCL_IB_HCA=mlx5_9\n' >"$HOME/.nccl.conf"
printf '# a vendor image\nNCCL_IB_HCA=mlx5_0\n' >"$tmp/job.conf"

NCCL_CONF_FILE=$tmp/job.conf "$LLMLAUNCH" explain --topology "$fixture" >"$tmp/explain.txt"
for line in "  $tmp/job.conf:2  NCCL_IB_HCA=mlx5_0" \
	"      the environment wins: NCCL uses '=mlx5_0:1,mlx5_1:1' (probe)" \
	"  warning: NCCL_IB_HCA: $tmp/job.conf:2 sets NCCL_IB_HCA=mlx5_0, but NCCL uses '=mlx5_0:1,mlx5_1:1' (probe): the environment wins over NCCL's configuration files (NCCL src/misc/param.cc sets their lines with setenv(..., 0)); remove the line, or keep its value with --set NCCL_IB_HCA=mlx5_0"; do
	grep -qxF -- "$line" "$tmp/explain.txt" || fail "no line '$line' in: $(cat "$tmp/explain.txt")"
done
# NCCL_CONF_FILE replaces ~/.nccl.conf: its line is not read at all.
grep -qF mlx5_9 "$tmp/explain.txt" && fail "~/.nccl.conf read although NCCL_CONF_FILE is set"

# Without NCCL_CONF_FILE, ~/.nccl.conf is read; JSON says the same.
"$LLMLAUNCH" explain --topology "$fixture" --json >"$tmp/home.json"
got=$(jq -c '[.nccl_conf[] | [.origin, .name, .value, .used]]' "$tmp/home.json")
[ "$got" = "[[\"$HOME/.nccl.conf:1\",\"NCCL_IB_HCA\",\"mlx5_9\",false]]" ] || fail "home conf: $got"

# The node's /etc/nccl.conf under --fsroot: what llmlaunch leaves to NCCL is NCCL's to take.
. "$LL_FIXTURES/sysfs/fake-sysfs.sh"
root=$tmp/node
fake_machine "$root" 2
mkdir -p "$root/etc"
# The lines Azure's NDv4 image writes (Azure/azhpc-images components/customizations/ndv4.sh).
printf 'NCCL_IB_PCI_RELAXED_ORDERING=1\nNCCL_TOPO_FILE=/opt/microsoft/ndv4/topo.xml\n' >"$root/etc/nccl.conf"
rm "$HOME/.nccl.conf"
"$LLMLAUNCH" explain --fsroot "$root" --json >"$tmp/etc.json"
got=$(jq -c '[.settings[] | select(.source == "nccl-conf") | [.name, .value, .origin, .exported]]' "$tmp/etc.json")
[ "$got" = '[["NCCL_IB_PCI_RELAXED_ORDERING","1","/etc/nccl.conf:1",false],["NCCL_TOPO_FILE","/opt/microsoft/ndv4/topo.xml","/etc/nccl.conf:2",false]]' ] ||
	fail "etc conf settings: $got"
# NCCL reads the file itself: env does not export its lines.
"$LLMLAUNCH" env --fsroot "$root" --format sh >"$tmp/env.sh"
grep -q NCCL_TOPO_FILE "$tmp/env.sh" && fail "env exported a line of /etc/nccl.conf"
# NCCL_CONF_FILE that is not a regular file: NCCL would block on a FIFO and read
# /dev/zero forever, so the plan refuses it with what it is, and run starts nothing.
mkfifo "$tmp/fifo.conf"
printf 'import sys\n' >"$tmp/train.py"
NCCL_CONF_FILE=/dev/zero "$LLMLAUNCH" explain --topology "$fixture" >"$tmp/zero.txt"
grep -qF "error: NCCL_CONF_FILE: '/dev/zero' is a character device, not a regular file" "$tmp/zero.txt" ||
	fail "/dev/zero as NCCL_CONF_FILE: $(grep CONF "$tmp/zero.txt")"
grep -q "NCCL ignores it" "$tmp/zero.txt" && fail "/dev/zero reported as ignored by NCCL"
rc=0
NCCL_CONF_FILE=$tmp/fifo.conf timeout 30 "$LLMLAUNCH" run --topology "$fixture" "$tmp/train.py" >"$tmp/fifo.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "run with a FIFO as NCCL_CONF_FILE exited $rc: $(cat "$tmp/fifo.out")"
grep -qF "NCCL_CONF_FILE: '$tmp/fifo.conf' is a FIFO, not a regular file" "$tmp/fifo.out" ||
	fail "run with a FIFO: $(cat "$tmp/fifo.out")"
echo "explain-nccl-conf: ok"
