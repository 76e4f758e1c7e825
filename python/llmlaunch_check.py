#!/usr/bin/env python3
"""llmlaunch's preflight check: the measuring half (docs/check.md).

llmlaunch starts this script through torchrun like any job (`llmlaunch check`,
`llmlaunch run --preflight`), over the world, interfaces and NCCL variables the real
job gets. It only measures; llmlaunch decides. Every node's local rank 0 writes one
JSON object per line to --out (llmlaunch reads it with jansson):

    {"phase": "allreduce", "step": 1, "of": 3}          progress, as it goes
    {"check": 1, "backend": "gloo", "world": 4, "nnodes": 4, "nproc": 1, "rounds": 2}
    {"node": 0, "name": "n1", "nccl_fallback": false}     every node, by node rank
    {"allreduce": {"bytes": 1048576, "iters": 10, "time_us": [..]}}   per size
    {"pair": {"round": 0, "node": 0, "bytes": B, "iters": 3, "time_us": [..], "lat_us": [..]}}
    {"end": true}

Times are what was measured, never a verdict:
- all-reduce: each repetition is the mean time of `iters` all-reduces after a
  warm-up (as nccl-tests times them), the slowest rank's (a MAX all-reduce of the
  times); one value per repetition.
- a pair (this node and its partner in a round, as llmlaunch scheduled them): every
  local rank exchanges `bytes` with the same local rank of the partner node, both
  directions at once, `iters` times a repetition; time_us holds each repetition's
  mean time of one exchange, this node's slowest rank. lat_us likewise for an
  exchange of 8 bytes (`lat_iters` a repetition).
A node with no partner in a round waits at the round's barrier.
"""
import argparse
import json
import os
import socket
import statistics
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="file for this node's results (local rank 0 writes it)")
    p.add_argument("--node-name", required=True, help="this node's name, as the launcher knows it")
    p.add_argument("--partners", default="", help="partner node rank per round, -1 for none: '1,3'")
    p.add_argument("--sizes", default="8,1048576", help="all-reduce sizes in bytes")
    p.add_argument("--pair-bytes", type=int, default=1 << 20)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--reps", type=int, default=5, help="repetitions of a pair test")
    p.add_argument("--allreduce-reps", type=int, default=5, help="repetitions of an all-reduce size")
    p.add_argument("--lat-iters", type=int, default=20)
    p.add_argument("--nccl-flag", default="",
                   help="a file llmlaunch creates when this node's NCCL logs show a fallback to sockets")
    return p.parse_args()


def main():
    args = parse_args()
    import torch
    import torch.distributed as dist

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    nproc = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    use_cuda = torch.cuda.is_available() and local_rank < torch.cuda.device_count()
    if use_cuda:
        torch.cuda.set_device(local_rank)
        dev = torch.device("cuda", local_rank)
    else:
        dev = torch.device("cpu")
    backend = "nccl" if use_cuda else "gloo"
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    node = rank // nproc
    nnodes = world // nproc
    partners = [int(x) for x in args.partners.split(",") if x != ""]
    sizes = [int(x) for x in args.sizes.split(",") if x != ""]
    writer = local_rank == 0
    out = open(args.out, "w", buffering=1) if writer else None

    def emit(obj):
        if out:
            out.write(json.dumps(obj, separators=(",", ":")) + "\n")

    def sync():
        if use_cuda:
            torch.cuda.synchronize()

    def slowest(values):
        """The largest value of every rank, element by element."""
        t = torch.tensor(values, dtype=torch.float64, device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.tolist()

    steps = len(sizes) + len(partners) + 1
    step = 0

    def progress(phase):
        nonlocal step
        step += 1
        emit({"phase": phase, "step": step, "of": steps})

    # ---- the whole job's all-reduce, a few sizes ----
    results = []
    for size in sizes:
        progress("allreduce")
        buf = torch.ones(max(1, size // 4), dtype=torch.float32, device=dev)
        dist.all_reduce(buf)  # warm-up: connections, algorithm selection
        sync()
        reps = []
        for _ in range(args.allreduce_reps):
            dist.barrier()
            sync()
            t0 = time.perf_counter()
            for _ in range(args.iters):
                dist.all_reduce(buf)
            sync()
            reps.append((time.perf_counter() - t0) / args.iters * 1e6)
        results.append({"bytes": buf.numel() * 4, "iters": args.iters, "time_us": slowest(reps)})

    # ---- pairs: this node's partner per round, every local rank with its twin ----
    big_send = torch.ones(max(1, args.pair_bytes // 4), dtype=torch.float32, device=dev)
    big_recv = torch.empty_like(big_send)
    small_send = torch.ones(2, dtype=torch.float32, device=dev)
    small_recv = torch.empty_like(small_send)
    mine = []  # per round: reps x [time_us, lat_us], 0 without a partner
    for r, pnode in enumerate(partners):
        progress("pairs")
        dist.barrier()
        if pnode < 0:
            mine.append([0.0, 0.0] * args.reps)
            continue
        peer = pnode * nproc + local_rank

        def exchange(s, rbuf):
            ops = [dist.P2POp(dist.isend, s, peer), dist.P2POp(dist.irecv, rbuf, peer)]
            for w in dist.batch_isend_irecv(ops):
                w.wait()

        exchange(big_send, big_recv)  # warm-up: the pair's connection
        row = []
        for _ in range(args.reps):
            sync()
            t0 = time.perf_counter()
            for _ in range(args.iters):
                exchange(big_send, big_recv)
            sync()
            row.append((time.perf_counter() - t0) / args.iters * 1e6)
            t0 = time.perf_counter()
            for _ in range(args.lat_iters):
                exchange(small_send, small_recv)
            sync()
            row.append((time.perf_counter() - t0) / args.lat_iters * 1e6)
        mine.append(row)

    # ---- every node's figures, to every node ----
    # One MAX all-reduce of a table with a row per node: each rank writes its own
    # node's row, so the row ends up holding the node's slowest local rank, and the
    # name (written by local rank 0 only) survives as the maximum over zeros. Its size
    # is per node, not per rank.
    progress("gather")
    per_round = 2 * args.reps
    width = per_round * len(partners) + 1 + 64
    table = torch.zeros(nnodes * width, dtype=torch.float64, device=dev)
    flat = [x for row in mine for x in row]
    if flat:
        table[node * width:node * width + len(flat)] = torch.tensor(flat, dtype=torch.float64, device=dev)
    if writer:
        # What this node's llmlaunch read in NCCL's logs so far (they were written at the
        # first collective, seconds ago): carried to every node with the figures.
        if args.nccl_flag and os.path.exists(args.nccl_flag):
            table[node * width + len(flat)] = 1.0
        name = args.node_name.encode()[:63]
        table[node * width + len(flat) + 1:node * width + len(flat) + 1 + len(name)] = torch.tensor(
            list(name), dtype=torch.float64, device=dev)
    dist.all_reduce(table, op=dist.ReduceOp.MAX)
    rows = table.view(nnodes, width).tolist()
    dist.barrier()
    dist.destroy_process_group()
    if not writer:
        return 0

    rounds = len(partners)
    emit({"check": 1, "backend": backend, "world": world, "nnodes": nnodes, "nproc": nproc, "rounds": rounds,
          "host": socket.gethostname()})
    for n in range(nnodes):
        raw = bytes(int(b) for b in rows[n][per_round * rounds + 1:]).rstrip(b"\0")
        emit({"node": n, "name": raw.decode(errors="replace"), "nccl_fallback": rows[n][per_round * rounds] > 0})
    for res in results:
        emit({"allreduce": res})
    # Each node's view of its exchange per round and repetition, its slowest local
    # rank; llmlaunch knows the schedule, puts the two views of a pair together and
    # decides what the repetitions mean.
    for r in range(rounds):
        for n in range(nnodes):
            base = per_round * r
            times = [rows[n][base + 2 * k] for k in range(args.reps)]
            if min(times) <= 0:
                continue
            lats = [rows[n][base + 2 * k + 1] for k in range(args.reps)]
            emit({"pair": {"round": r, "node": n, "bytes": big_send.numel() * 4, "iters": args.iters,
                           "time_us": times, "lat_us": lats}})
    emit({"end": True})
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
