#!/bin/bash
# Seed corpus for fuzz-profile: the shipped profiles plus small edge cases.
# usage: seed-profile.sh SRCDIR OUTDIR
set -euo pipefail
src=${1:?usage: seed-profile.sh SRCDIR OUTDIR} out=${2:?usage: seed-profile.sh SRCDIR OUTDIR}
mkdir -p "$out"
cp "$src"/profiles/*.yaml "$out"/
printf 'env:\n  A: &x 1\n  B: *x\n' >"$out/alias.yaml"
printf 'name: a\n---\nname: b\n' >"$out/two-docs.yaml"
printf 'env:\n  A: "x\\0y"\n  B: |\n    two\n    lines\n' >"$out/nul-newline.yaml"
printf 'extends: [a, "https://h/p.yaml#sha256=%064d"]\nmatch: {gpu_count: 8, rdma: true}\n' 0 >"$out/extends.yaml"
printf 'torchrun: {max_restarts: 3, nproc_per_node: gpu, master_port: 29500, monitor_interval: 0.5}\n' \
	>"$out/torchrun.yaml"
printf '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n' >"$out/deep.yaml"
