#!/bin/bash
# Train examples/train.py on 4 nodes through llmlaunch (docs/slurm.md).
#
#   sbatch examples/sbatch-train.sh            # from the repository's top directory
#
# One llmlaunch per node (--ntasks-per-node=1): each probes its node, the nodes agree
# over PMIx (node ranks, master address and port, one interface valid everywhere,
# and a refusal naming the node when they differ), then each starts torchrun with
# one worker per GPU. No MASTER_ADDR, NCCL_* or --nproc_per_node to write by hand.
#SBATCH --job-name=llmlaunch-train
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --exclusive
#SBATCH --time=01:00:00
#SBATCH --output=%x-%j.out
set -euo pipefail

# sbatch runs a copy of this script from Slurm's spool directory: find the example
# from where the job was submitted.
cd "${SLURM_SUBMIT_DIR:-.}"

# llmlaunch reads NCCL's own logs while the job runs and says which transport each
# node really uses; --on-fallback stop ends the job at once if NCCL fell back to TCP
# sockets where the plan expected InfiniBand or RoCE, instead of training for days
# at a fraction of the speed.
srun --mpi=pmix --ntasks-per-node=1 llmlaunch --on-fallback stop examples/train.py --steps 100
