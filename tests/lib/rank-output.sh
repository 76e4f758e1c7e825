#!/bin/sh
# rank-output.sh OUTDIR CMD...: run CMD with its output in OUTDIR/1/rank.R/stdout and
# stderr, R its rank under mpirun, the layout Open MPI 4's --output-filename made
# (Open MPI 5's fails in PMIx's output forwarding). OUTDIR is on a file system
# every emulated node shares.
out=$1
shift
r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:?no rank in the environment}}
mkdir -p "$out/1/rank.$r" || exit 1
exec "$@" >"$out/1/rank.$r/stdout" 2>"$out/1/rank.$r/stderr"
