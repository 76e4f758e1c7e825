# shellcheck shell=bash
# Shared set-up of the agreement tests (tests/integration/slurm-*.sh, mpirun-*.sh).
# Source after `set -u`; defines: skip, fail, agree_tmp (a private directory removed
# on exit), ib_fsroot DIR STATE (a fake /sys with one InfiniBand port in STATE),
# agree_message and agree_port_of (reading nodes' messages).

skip() { echo "skipped: $*" >&2; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

: "${LLMLAUNCH:?LLMLAUNCH must name the built binary}"
: "${LL_SRCDIR:?}"
# libpmix keeps a few bytes until exit on purpose; everything else must be leak-free.
export LSAN_OPTIONS="suppressions=$LL_SRCDIR/tests/lib/lsan-pmix.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

agree_tmp=$(mktemp -d /tmp/ll-agree-test.XXXXXX)
agree_cleanup() { rm -rf "$agree_tmp"; }

# A 2-CPU machine with one InfiniBand HCA (mlx5_0) whose port 1 is STATE ("4: ACTIVE",
# "1: DOWN"). No addresses under --fsroot: the agreement reads the live network.
ib_fsroot() {
	local root=$1 state=$2
	# shellcheck source=../fixtures/sysfs/fake-sysfs.sh
	. "$LL_SRCDIR/tests/fixtures/sysfs/fake-sysfs.sh"
	fake_machine "$root" 2
	fake_module "$root" ib_core
	fake_pci "$root" 0000:00:04.0 0x15b3 0x101b 0x020700
	fake_ib "$root" mlx5_0 0000:00:04.0 0c42:a103:0011:2240
	fake_ib_port "$root" mlx5_0 1 "$state" "5: LinkUp" "200 Gb/sec (4X HDR)" InfiniBand 0x2a
	fake_gid_table "$root" mlx5_0 1 4
	fake_net "$root" ib0 0000:00:04.0 32 up 0x1003 4092 200000 0
	fake_net "$root" lo virtual 772 unknown 0x9 65536 "" "" 00:00:00:00:00:00
}

# json_field FILE NAME: a top-level string or number from a JSON object file.
json_field() {
	python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2"
}

# agree_message FILE: a node's error line (its status lines aside).
agree_message() { grep '^llmlaunch: ' "$1" | grep -v '^llmlaunch: waiting for '; }

# agree_port_of ADDR FILE: the port after ADDR: in a message (the job's master port).
agree_port_of() { sed -n "s/.*${1//./\\.}:\([0-9]*\).*/\1/p" "$2" | head -1; }
