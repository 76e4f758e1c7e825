#!/bin/bash
# The RDMA plumbing under NCCL (docs/planner.md, "RDMA plumbing"), on a fake node with
# one GPU beside one InfiniBand HCA (tests/fixtures/sysfs/fake-sysfs.sh, scenario_gpu_ib):
# explain under `ulimit -l 64` names the locked-memory limit (an error, blocking `run`,
# for a process without CAP_IPC_LOCK; information for root); the missing
# /dev/infiniband/uverbs0 of a container; GPUDirect RDMA off without nvidia_peermem and
# with the proprietary driver (no DMA-BUF); each with its fix.
set -euo pipefail
: "${LLMLAUNCH:?}" "${LL_FIXTURES:?}"
command -v jq >/dev/null || { echo "explain-plumbing: jq is not installed" >&2; exit 77; }
tmp=$(mktemp -d /tmp/ll-plumbing.XXXXXX)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "explain-plumbing: FAIL: $*" >&2; exit 1; }
. "$LL_FIXTURES/sysfs/fake-sysfs.sh"
root=$tmp/node
scenario_gpu_ib "$root"
chmod -R a+rX "$tmp"

lint() { # FILE VARIABLE: "level: message" of that variable's lints
	jq -r --arg v "$2" '.lint[] | select(.variable == $v) | "\(.level): \(.message)"' "$1"
}

# As this process is: root has CAP_IPC_LOCK, so the 64 KiB limit is named, as information.
(ulimit -l 64 && "$LLMLAUNCH" explain --fsroot "$root" --json) >"$tmp/root.json"
got=$(lint "$tmp/root.json" RLIMIT_MEMLOCK)
if grep -q '^CapEff:.*' /proc/self/status && [ "$(id -u)" = 0 ]; then
	[ "$got" = "info: the locked-memory limit is 64 KiB (ulimit -l 64), which would stop RDMA memory registration, but this process has CAP_IPC_LOCK: workers started as another user would fail" ] ||
		fail "memlock as root: $got"
fi
(ulimit -l 64 && "$LLMLAUNCH" explain --fsroot "$root") >"$tmp/root.txt"
grep -qF "RLIMIT_MEMLOCK: the locked-memory limit is 64 KiB (ulimit -l 64)" "$tmp/root.txt" ||
	fail "explain text does not name the memlock limit: $(sed -n '/Lint/,$p' "$tmp/root.txt")"

# The container's missing uverbs node and GPUDirect RDMA off, whoever runs it.
got=$(lint "$tmp/root.json" NCCL_IB_HCA)
[ "$got" = "warning: /dev/infiniband/uverbs0 (mlx5_0) missing: a container without the RDMA devices; NCCL finds none and uses TCP sockets; pass them in: docker run --device=/dev/infiniband (or each uverbs device), or an RDMA device plugin on Kubernetes" ] ||
	fail "uverbs lint: $got"
got=$(lint "$tmp/root.json" NCCL_NET_GDR_LEVEL)
[ "$got" = "warning: GPUDirect RDMA is off: nvidia_peermem is not loaded and DMA-BUF is not usable (NVIDIA's proprietary kernel module exports no DMA-BUF): NCCL copies every transfer through host memory; load the module: sudo modprobe nvidia-peermem" ] ||
	fail "GDR lint: $got"
got=$(jq -c '.rdma_devices[0] | [.uverbs, .uverbs_access]' <("$LLMLAUNCH" probe --fsroot "$root" --json))
[ "$got" = '["uverbs0","missing"]' ] || fail "probe uverbs: $got"

# With the node in place and the open driver (DMA-BUF on Linux 6.1): both are fine.
: >"$root/dev/infiniband/uverbs0"
chmod 666 "$root/dev/infiniband/uverbs0"
fake_nvidia_driver "$root" open
"$LLMLAUNCH" explain --fsroot "$root" --json >"$tmp/fixed.json"
[ -z "$(lint "$tmp/fixed.json" NCCL_IB_HCA)$(lint "$tmp/fixed.json" NCCL_NET_GDR_LEVEL)" ] ||
	fail "lints left after the fixes: $(jq -c .lint "$tmp/fixed.json")"
got=$(jq -r '.settings[] | select(.name == "NCCL_NET_GDR_LEVEL") | .value' "$tmp/fixed.json")
[ "$got" = PHB ] || fail "GDR level with DMA-BUF: $got"

# A user without CAP_IPC_LOCK: an error, and `run` stops before starting anything.
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	as_nobody() { (ulimit -l 64 && setpriv --reuid=65534 --regid=65534 --clear-groups "$@"); }
	# nobody may not read the checkout or the build (a clone in /root is mode 700): it runs
	# copies laid out as an installation, in this test's world-readable directory.
	mkdir -p "$tmp/inst/bin" "$tmp/inst/share/llmlaunch"
	cp "$LLMLAUNCH" "$tmp/inst/bin/llmlaunch"
	cp -r "$LL_SRCDIR/profiles" "$LL_SRCDIR/python" "$tmp/inst/share/llmlaunch/"
	cp "$LL_SRCDIR/examples/train.py" "$tmp/train.py"
	chmod -R a+rX "$tmp"
	as_nobody "$tmp/inst/bin/llmlaunch" explain --fsroot "$root" --json >"$tmp/nobody.json"
	got=$(lint "$tmp/nobody.json" RLIMIT_MEMLOCK)
	[ "$got" = "error: the locked-memory limit is 64 KiB (ulimit -l 64) and this process lacks CAP_IPC_LOCK: NCCL's RDMA memory registration will fail ('NCCL WARN Call to ibv_reg_mr failed'); raise it to unlimited: '* soft memlock unlimited' and '* hard memlock unlimited' in /etc/security/limits.conf (then log in again), 'docker run --ulimit memlock=-1', or LimitMEMLOCK=infinity in slurmd's systemd unit" ] ||
		fail "memlock without CAP_IPC_LOCK: $got"
	mkdir -m 1777 "$tmp/jobs"
	set +e
	TMPDIR=$tmp/jobs as_nobody "$tmp/inst/bin/llmlaunch" run --fsroot "$root" --python /bin/true "$tmp/train.py" \
		>"$tmp/run.out" 2>"$tmp/run.err"
	rc=$?
	set -e
	[ "$rc" = 1 ] || fail "run exited $rc: $(cat "$tmp/run.err")"
	grep -qF "llmlaunch: RLIMIT_MEMLOCK: the locked-memory limit is 64 KiB (ulimit -l 64) and this process lacks CAP_IPC_LOCK" "$tmp/run.err" ||
		fail "run's preflight message: $(cat "$tmp/run.err")"
	grep -qxF "hint: nothing was started; 'llmlaunch explain' shows the whole plan" "$tmp/run.err" ||
		fail "run's preflight hint: $(cat "$tmp/run.err")"
	[ -z "$(ls -A "$tmp/jobs")" ] || fail "run left a job directory: $(ls -A "$tmp/jobs")"
else
	echo "explain-plumbing: the cases without CAP_IPC_LOCK need root and setpriv: not run" >&2
fi
echo "explain-plumbing: ok"
