#!/usr/bin/env bash
# Benchmark of `llmlaunch logs` against `grep -c 'NCCL WARN'` on the same file, in the
# same run, warm page cache for both, interleaved, several runs each:
#  1. dense real NCCL lines: every line of the real logs in $LL_REALDATA (default
#     ../shared/realdata next to the source tree) that carries an NCCL marker, the whole
#     set repeated to DENSE_MB (default 200) MB: every line an NCCL line, in the mix
#     of prefixes and messages real logs have (the figure that counts: >= 1.0x grep);
#  2. a generated job log (16 hosts x 8 ranks re-initialising, proxy chatter, topology
#     dumps, a few WARNs), at each SIZE_MB given (default 256), most lines of which no
#     recogniser reads.
# Prints each run's times and ratio, min/median/max of the ratio, llmlaunch's peak RSS,
# and checks that both counted the same WARN lines.
#   bench/logscan.sh [SIZE_MB ...]
#   LLMLAUNCH=path  use this binary (default: a Release build in build-bench/)
#   RUNS=7          runs of each tool per file
#   DENSE_MB=200    size of the dense file (0: leave it out)
#   BENCH_DIR=dir   where the temporary logs go (default: $TMPDIR or /tmp); deleted after
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(256)
RUNS=${RUNS:-7}
DENSE_MB=${DENSE_MB:-200}
REALDATA=${LL_REALDATA:-$SRC/../shared/realdata}

if [ -z "${LLMLAUNCH:-}" ]; then
	cmake -S "$SRC" -B "$SRC/build-bench" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
	cmake --build "$SRC/build-bench" -j "$(nproc)" --target llmlaunch >/dev/null
	LLMLAUNCH=$SRC/build-bench/llmlaunch
fi
WORK=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/llmlaunch-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# FILE LABEL: RUNS interleaved runs of each tool, warm cache, stdout to a file (GNU grep
# stops at the first match when its stdout is /dev/null).
measure() {
	cat "$1" >/dev/null
	python3 - "$1" "$2" "$RUNS" "$LLMLAUNCH" "$WORK" <<'PY'
import json, os, resource, statistics, subprocess, sys, time
path, label, runs, ll, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
mb = os.path.getsize(path) / 1e6
out = os.path.join(work, "out")
def timed(argv):
    with open(out, "wb") as f:
        t = time.perf_counter()
        subprocess.run(argv, stdout=f, stderr=subprocess.DEVNULL)
        return time.perf_counter() - t
ratios = []
print(f"{label}: {mb:.0f} MB")
for i in range(runs):
    g = timed(["grep", "-c", "NCCL WARN", path])
    l = timed([ll, "logs", path])
    ratios.append(g / l)
    print(f"  run {i + 1}: grep -c 'NCCL WARN' {g:.3f} s ({mb / g:.0f} MB/s), llmlaunch logs {l:.3f} s "
          f"({mb / l:.0f} MB/s), ratio {g / l:.2f}x")
print(f"  ratio to grep: min {min(ratios):.2f}x, median {statistics.median(ratios):.2f}x, max {max(ratios):.2f}x")
wg = int(subprocess.run(["grep", "-c", "NCCL WARN", path], capture_output=True, text=True).stdout or 0)
p = subprocess.run([ll, "logs", "--json", path], capture_output=True, text=True)
wl = json.loads(p.stdout)["warnings_total"]
before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
subprocess.run([ll, "logs", path], stdout=subprocess.DEVNULL)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"  llmlaunch peak RSS {max(rss, before) / 1024:.1f} MiB; WARN lines: grep {wg}, llmlaunch {wl}")
if wg != wl:
    print("MISMATCH: the two counts of WARN lines differ", file=sys.stderr)
    sys.exit(1)
PY
}

echo "llmlaunch: $LLMLAUNCH ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"

# 1. Dense real NCCL lines.
if [ "$DENSE_MB" != 0 ]; then
	if [ -d "$REALDATA/nccl_logs" ]; then
		cat "$REALDATA"/nccl_logs*/* | grep -aE 'NCCL (INFO|WARN|version)' >"$WORK/real" || true
		python3 - "$WORK/real" "$WORK/dense.log" "$DENSE_MB" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
want = int(sys.argv[3]) << 20
with open(sys.argv[2], "wb") as f:
    for _ in range(want // len(data) + 1):
        f.write(data)
PY
		echo "dense file: $(wc -l <"$WORK/real") real NCCL lines ($(stat -c %s "$WORK/real") bytes) from" \
			"$(ls "$REALDATA"/nccl_logs*/* | wc -l) logs in $REALDATA, repeated"
		measure "$WORK/dense.log" "dense real NCCL lines"
		rm -f "$WORK/dense.log"
	else
		echo "no real logs in $REALDATA/nccl_logs: the dense figure is left out" >&2
	fi
fi

# 2. One block of about 8 MB: 16 hosts x 8 ranks, each initialising and then running.
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
for mb in "${sizes[@]}"; do
	f=$WORK/job-$mb.log
	blocks=$(( (mb + 7) / 8 ))
	for ((i = 0; i < blocks; i++)); do cat "$WORK/block"; done >"$f"
	measure "$f" "generated job log"
	rm -f "$f"
done
