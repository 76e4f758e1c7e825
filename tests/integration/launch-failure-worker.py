#!/usr/bin/env python3
"""A gloo job for the failure and hang tests (launch-failure.sh, launch-hang.sh).

    worker.py MODE RANK [SECONDS]

Every rank all-reduces once, then rank RANK does MODE while the others all-reduce
again: "raise" raises ValueError, "kill" sends itself SIGKILL, "sleep" sleeps
SECONDS (a hang), "print" prints a line every second for SECONDS and then all
ranks all-reduce and end well, "stubborn" raises on rank RANK while every other rank
ignores SIGTERM and sleeps SECONDS (torchrun cannot stop it). Each rank prints "failure-worker rank=R t=EPOCH"
just before MODE, so a test can time what follows.
"""
import os
import signal
import sys
import time

import torch
import torch.distributed as dist


def main():
    mode, bad = sys.argv[1], int(sys.argv[2])
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    dist.init_process_group(backend="gloo")
    rank = dist.get_rank()
    t = torch.ones(4)
    dist.all_reduce(t)
    print(f"failure-worker rank={rank} t={time.time():.3f}", flush=True)
    if mode == "print":
        end = time.time() + seconds
        while time.time() < end:
            print(f"rank {rank} working", flush=True)
            time.sleep(1)
    elif mode == "stubborn":
        if rank == bad:
            raise ValueError(f"rank {rank} gave up on purpose")
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(seconds)
    elif rank == bad:
        if mode == "raise":
            raise ValueError(f"rank {rank} gave up on purpose")
        if mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "sleep":
            time.sleep(seconds)
    dist.all_reduce(t)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
