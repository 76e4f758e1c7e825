# shellcheck shell=bash
# Shared by tests/integration/slurm-prolog*.sh: skip/fail, a private directory
# ($sp_tmp, removed on exit by sp_cleanup) and fake GPU nodes for --fsroot.

skip() { echo "skipped: $*" >&2; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

: "${LLMLAUNCH:?LLMLAUNCH must name the built binary}"
: "${LL_SRCDIR:?}"

sp_tmp=$(mktemp -d /tmp/ll-slurm-prolog.XXXXXX)
chmod 755 "$sp_tmp"
sp_cleanup() { rm -rf "$sp_tmp"; }

# sp_node ROOT NGPUS PORT2 GDR: a fake /sys of a 2-CPU node with NGPUS H100s
# (0000:05:00.0, 0000:06:00.0 ...), two InfiniBand HCAs mlx5_0 and mlx5_1 (ports
# ACTIVE, except mlx5_1's when PORT2 is "down") with netdevs ib0/ib1, and the
# nvidia_peermem module when GDR is "yes"; otherwise NVIDIA's proprietary driver (no
# DMA-BUF either), so that GPUDirect RDMA is known to be off.
sp_node() {
	local root=$1 ngpus=$2 p2=$3 gdr=$4 i st ph
	# shellcheck source=../fixtures/sysfs/fake-sysfs.sh
	. "$LL_SRCDIR/tests/fixtures/sysfs/fake-sysfs.sh"
	fake_machine "$root" 2
	fake_module "$root" ib_core # /sys/module exists: a missing peermem means "not loaded"
	if [ "$gdr" = yes ]; then
		fake_module "$root" nvidia_peermem
	else
		mkdir -p "$root/proc/driver/nvidia"
		echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023" \
			>"$root/proc/driver/nvidia/version"
	fi
	for ((i = 0; i < ngpus; i++)); do
		fake_pci "$root" "0000:0$((5 + i)):00.0" 0x10de 0x2330 0x030200
	done
	for i in 0 1; do
		st="4: ACTIVE" ph="5: LinkUp"
		if [ $i = 1 ] && [ "$p2" = down ]; then st="1: DOWN" ph="3: Disabled"; fi
		fake_pci "$root" "0000:0$((2 + i)):00.0" 0x15b3 0x101b 0x020700
		fake_ib "$root" "mlx5_$i" "0000:0$((2 + i)):00.0" "0c42:a103:0011:22$((30 + i))"
		fake_ib_port "$root" "mlx5_$i" 1 "$st" "$ph" "200 Gb/sec (4X HDR)" InfiniBand "0x$((10 + i))"
		fake_gid "$root" "mlx5_$i" 1 0 "fe80:0000:0000:0000:0c42:a103:0011:22$((30 + i))" "IB/RoCE v1"
		fake_net "$root" "ib$i" "0000:0$((2 + i)):00.0" 32 up 0x1003 4092 200000 0
	done
	fake_net "$root" lo virtual 772 unknown 0x9 65536 "" "" 00:00:00:00:00:00
}

# The expectations every test node is checked against.
sp_expect_profile() {
	cat >"$1" <<'EOF'
name: test-expect
description: what the fake nodes of the Slurm prolog tests must have
expect:
  gpus: 2
  active_rdma_ports: 2
  link_layer: InfiniBand
  gdr_required: true
EOF
}
