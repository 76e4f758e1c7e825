#!/usr/bin/env python3
"""A tiny DistributedDataParallel job for trying llmlaunch.

    llmlaunch examples/train.py --steps 5

Each worker prints one line that starts with "llmlaunch-example" and holds
space-separated key=value pairs (rank, world size, rendezvous address, local rank,
CPU affinity, memory policy, the all-reduce result), so tests and people can check
where every rank ran. It uses NCCL when this worker sees a GPU and gloo otherwise.
llmlaunch keeps every planned GPU visible in PCI order: the worker picks its GPU
by LOCAL_RANK, as below.
"""
import argparse
import os
import socket
import sys
import time


def cpu_list(cpus):
    """Format a CPU set as a list string like hwloc's: "0-7,16-23"."""
    out = []
    cpus = sorted(cpus)
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def memory_policy():
    """The NUMA policy of this process's heap as /proc/self/numa_maps shows it
    ("default", "bind:0", ...); "unknown" where the kernel has no NUMA maps."""
    try:
        with open("/proc/self/numa_maps") as f:
            for line in f:
                fields = line.split()
                if "heap" in fields[2:]:
                    return fields[1]
            f.seek(0)
            first = f.readline().split()
            return first[1] if len(first) > 1 else "unknown"
    except OSError:
        return "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="training steps (default 5)")
    parser.add_argument("--sleep", type=float, default=0.0,
                        help="seconds to wait after the report line (signal tests)")
    parser.add_argument("--exit-code", type=int, default=0,
                        help="exit with this status after training (tests)")
    parser.add_argument("--dump-env", metavar="DIR",
                        help="also write DIR/rank-N.json with this worker's environment (tests)")
    args = parser.parse_args()

    import torch
    import torch.distributed as dist

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
        device = torch.device("cuda", torch.cuda.current_device())
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(1234 + rank)
    model = torch.nn.Linear(16, 1).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if use_cuda else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    loss = torch.zeros(())
    for _ in range(args.steps):
        x = torch.randn(32, 16, device=device)
        y = x.sum(dim=1, keepdim=True)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()

    # Every rank contributes rank + 1: the sum is world * (world + 1) / 2 everywhere.
    t = torch.tensor([float(rank + 1)], device=device)
    dist.all_reduce(t)

    fields = {
        "rank": rank,
        "world_size": world,
        "local_rank": local_rank,
        "env_rank": os.environ.get("RANK", "-"),
        "env_world_size": os.environ.get("WORLD_SIZE", "-"),
        "master_addr": os.environ.get("MASTER_ADDR", "-"),
        "master_port": os.environ.get("MASTER_PORT", "-"),
        "host": socket.gethostname(),
        "gloo_ifname": os.environ.get("GLOO_SOCKET_IFNAME", "-"),
        "nccl_ifname": os.environ.get("NCCL_SOCKET_IFNAME", "-"),
        "backend": dist.get_backend(),
        "device": str(device),
        "affinity": cpu_list(os.sched_getaffinity(0)),
        "mempolicy": memory_policy(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS", "-"),
        "torch_threads": torch.get_num_threads(),
        "allreduce": int(t.item()),
        "loss": f"{loss.item():.4f}",
        "pid": os.getpid(),
    }
    # One write per line: workers run unbuffered (python -u, as under torchrun), where
    # print() writes the text and the newline separately and ranks' lines interleave.
    sys.stdout.write("llmlaunch-example " + " ".join(f"{k}={v}" for k, v in fields.items()) + "\n")
    sys.stdout.flush()
    if args.dump_env:
        import json
        with open(os.path.join(args.dump_env, f"rank-{rank}.json"), "w") as f:
            json.dump({"fields": {k: str(v) for k, v in fields.items()}, "env": dict(os.environ)}, f)

    if args.sleep > 0:
        time.sleep(args.sleep)
    dist.destroy_process_group()
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
