#!/bin/sh
# Runs `parallm bench comm` at 2 and
# 4 ranks, the numbers behind docs/comm.md. Usage:
#   bench/comm_bench.sh [BUILD_DIR] [extra `parallm bench comm` flags...]
# 4 ranks on a 2-core machine are oversubscribed: yield_when_idle keeps
# waiting ranks from spinning on the cores the others need (the same for
# ours and for raw MPI).
set -e
build=${1:-build}
[ $# -gt 0 ] && shift
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
for np in 2 4; do
  mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1 \
    -np "$np" "$build/parallm" bench comm "$@"
done
