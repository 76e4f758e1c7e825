#!/usr/bin/env bash
# Benchmark of `llmlaunch logs` against `grep -c 'NCCL WARN'` on the same generated
# NCCL_DEBUG=INFO log (realistic line mix: prefixes, init lines, channels, proxy
# chatter, topology dumps, a few WARNs), in the same run, warm page cache for both.
# Prints throughputs, the ratio (target: llmlaunch >= 1.0x grep) and the peak RSS of
# llmlaunch at two sizes to show memory does not grow with the file.
#   bench/logscan.sh [SIZE_MB ...]     default: 256 1024
#   LLMLAUNCH=path  use this binary (default: a Release build in build-bench/)
#   BENCH_DIR=dir   where the temporary logs go (default: $TMPDIR or /tmp); deleted after
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(256 1024)

if [ -z "${LLMLAUNCH:-}" ]; then
	cmake -S "$SRC" -B "$SRC/build-bench" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
	cmake --build "$SRC/build-bench" -j "$(nproc)" --target llmlaunch >/dev/null
	LLMLAUNCH=$SRC/build-bench/llmlaunch
fi
WORK=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/llmlaunch-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# One block of about 8 MB: 16 hosts x 8 ranks, each initialising and then running.
python3 - "$WORK/block" <<'PY'
import random, sys
random.seed(7)
out = []
hosts = [f"gpu{n:03d}" for n in range(16)]
for h_i, h in enumerate(hosts):
    for r in range(8):
        pid = 40000 + h_i * 100 + r
        p = f"{h}:{pid}:{pid + 50} [{r}] NCCL INFO "
        w = f"{h}:{pid}:{pid + 51} [{r}] "
        out.append(p + f"Bootstrap : Using ib0:10.0.{h_i}.1<0>")
        out.append(p + "NET/Plugin : No plugin found (libnccl-net.so), using internal implementation")
        out.append(p + "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB "
                   "[4]mlx5_4:1/IB [5]mlx5_5:1/IB [6]mlx5_6:1/IB [7]mlx5_7:1/IB [RO]; OOB ib0:10.0.0.1<0>")
        out.append(p + "Using network IB")
        out.append(p + f"ncclCommInitRank comm 0x55d9{pid:x} rank {h_i * 8 + r} nranks 128 cudaDev {r} "
                   f"nvmlDev {r} busId {r + 1}8000 commId 0xd8289d3e6e217d26 - Init START")
        for t in range(6):
            out.append(p + "  " * t + f"+ PCI[24.0] - PCI/{(t + 1) * 1000:X}")
        for c in range(32):
            kind = random.choice(["send", "receive"])
            if c % 4 == 0:
                out.append(p + f"Channel {c:02d}/0 : {h_i * 8 + r}[{r}] -> {(h_i * 8 + r + 8) % 128}[{r}] "
                           f"[{kind}] via NET/IB/{r}/GDRDMA")
            else:
                out.append(p + f"Channel {c:02d}/0 : {h_i * 8 + r}[{r}] -> {h_i * 8 + (r + 1) % 8}[{(r + 1) % 8}] "
                           "via P2P/CUMEM/read")
        out.append(p + "Connected all rings")
        out.append(p + "Connected all trees")
        out.append(p + "threadThresholds 8/8/64 | 1024/8/64 | 512 | 512")
        out.append(p + "32 coll channels, 32 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer")
        out.append(p + f"ncclCommInitRank comm 0x55d9{pid:x} rank {h_i * 8 + r} nranks 128 cudaDev {r} "
                   f"nvmlDev {r} busId {r + 1}8000 commId 0xd8289d3e6e217d26 - Init COMPLETE")
        for k in range(120):
            out.append(p + random.choice([
                f"transport/net.cc:{1000 + k} -> 0",
                f"proxy.cc:{600 + k} -> 0 [Progress Thread]",
                f"Comm config Blocking set to 1",
                f"AllReduce: opCount {k:x} sendbuff 0x7f1c{k:04x}000 recvbuff 0x7f1c{k:04x}000 count 262144 datatype 7 op 0 root 0 comm 0x55d9 [nranks=128] stream 0x55d9",
                f"misc/socket.cc:{400 + k} -> 0",
            ]))
        if (h_i * 8 + r) % 37 == 0:
            out.append("")
            out.append(w + "transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.3.1<53249> "
                       "with status=12 opcode=0 len=0 vendor err 129 (Recv)")
        if (h_i * 8 + r) % 53 == 0:
            out.append("")
            out.append(w + "misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer gpu003<53735>")
data = ("\n".join(out) + "\n").encode()
with open(sys.argv[1], "wb") as f:
    while f.tell() < 8 << 20:
        f.write(data)
PY

peak_rss_kb() { # command... ; prints the peak RSS in kB
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f '%M' -o "$WORK/rss" "$@" >/dev/null 2>&1 || true
		tail -1 "$WORK/rss"
	else
		"$@" >/dev/null 2>&1 &
		local pid=$! peak=0 v
		while kill -0 "$pid" 2>/dev/null; do
			v=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
			[ "${v:-0}" -gt "$peak" ] && peak=$v
			sleep 0.05
		done
		wait "$pid" || true
		echo "$peak"
	fi
}
secs() { # command... ; wall seconds of one run
	local t0 t1
	t0=$(date +%s.%N)
	# Not >/dev/null: GNU grep notices that and stops at the first match.
	"$@" >"$WORK/out" 2>&1 || true
	t1=$(date +%s.%N)
	python3 -c "print(f'{$t1 - $t0:.3f}')"
}

echo "llmlaunch: $LLMLAUNCH"
for mb in "${sizes[@]}"; do
	f=$WORK/job-$mb.log
	blocks=$(( (mb + 7) / 8 ))
	for ((i = 0; i < blocks; i++)); do cat "$WORK/block"; done >"$f"
	bytes=$(stat -c %s "$f")
	cat "$f" >/dev/null # warm the page cache for both tools alike
	# Best of three for each, interleaved, so neither gets a warmer cache.
	best_g=999999 best_l=999999
	for _ in 1 2 3; do
		g=$(secs grep -c 'NCCL WARN' "$f")
		l=$(secs "$LLMLAUNCH" logs "$f")
		best_g=$(python3 -c "print(min($best_g, $g))")
		best_l=$(python3 -c "print(min($best_l, $l))")
	done
	warns_grep=$(grep -c 'NCCL WARN' "$f" || true)
	warns_ll=$("$LLMLAUNCH" logs --json "$f" | python3 -c 'import json,sys; print(json.load(sys.stdin)["warnings_total"])') || true
	rss=$(peak_rss_kb "$LLMLAUNCH" logs "$f")
	python3 - "$bytes" "$best_g" "$best_l" "$rss" "$warns_grep" "$warns_ll" <<'PY'
import sys
b, g, l, rss, wg, wl = sys.argv[1:]
b, g, l = int(b), float(g), float(l)
mb = b / 1e6
print(f"{mb:8.0f} MB  grep -c 'NCCL WARN': {g:6.2f} s {mb / g:7.0f} MB/s   llmlaunch logs: {l:6.2f} s "
      f"{mb / l:7.0f} MB/s   ratio {g / l:4.2f}x grep   peak RSS {int(rss) / 1024:.1f} MiB   WARN lines: grep {wg}, llmlaunch {wl}")
if wg != wl:
    print("MISMATCH: the two counts of WARN lines differ", file=sys.stderr)
    sys.exit(1)
PY
	rm -f "$f"
done
