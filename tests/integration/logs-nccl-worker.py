"""Stand-in for a training process: writes what NCCL writes at NCCL_DEBUG=INFO into
its NCCL_DEBUG_FILE, slowly, the way a real initialisation does. Run by torchrun
(one per local rank) in the live logs tests. FAKE_NCCL=ib|socket picks the story;
FAKE_NCCL_STAMP.RANK gets the wall time of each worker's decisive line."""
import os
import socket
import sys
import time

mode = os.environ.get("FAKE_NCCL", "ib")
rank = int(os.environ.get("RANK", "0"))
local = int(os.environ.get("LOCAL_RANK", "0"))
host = socket.gethostname().split(".")[0]
pid = os.getpid()
path = os.environ["NCCL_DEBUG_FILE"].replace("%h", host).replace("%p", str(pid))
pre = f"{host}:{pid}:{pid} [{local}] NCCL INFO "

stamp = os.environ.get("FAKE_NCCL_STAMP")

with open(path, "w", buffering=1) as f:
    def info(text, pause=0.2, decisive=False):
        f.write(pre + text + "\n")
        if decisive and stamp:
            with open(f"{stamp}.{rank}", "w") as s:
                s.write(f"{time.time():.3f}\n")
        time.sleep(pause)

    info("Bootstrap : Using eth0:10.9.0.1<0>")
    info("NCCL version 2.21.5+cuda12.4")
    if mode == "ib":
        info("NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; OOB eth0:10.9.0.1<0>")
        info("Using network IB")
        info(f"Channel 00/0 : {rank}[{local}] -> 8[0] [send] via NET/IB/{local}/GDRDMA")
    else:
        info("NET/IB : No device found.", decisive=True)
        info("NET/Socket : Using [0]eth0:10.9.0.1<0>")
        info("Using network Socket", pause=0)
    if mode == "ib":
        info(f"ncclCommInitRank comm 0x1 rank {rank} nranks 2 cudaDev {local} busId 1000 commId 0x1 - Init COMPLETE",
             pause=0, decisive=True)
    # "Training": long enough that only a stop ends it early.
    time.sleep(float(os.environ.get("FAKE_NCCL_TRAIN_S", "1")))
print(f"rank {rank} done", file=sys.stderr)
