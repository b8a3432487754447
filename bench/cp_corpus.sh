# Sourced by the context-parallel benchmarks (cp_bench.sh, cp_memory_sweep.sh):
# a byte-level corpus long enough for one 16k window per step, tokenized into
# $work/data_train.bin, and the mpirun line they share. Needs $work and $build.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
for i in $(seq 1 3000); do echo "line $i: the quick brown fox jumps over the lazy dog."; done \
  > "$work/corpus.txt"
"$build/parallm" tokenize "$work/corpus.txt" --out "$work/data" >/dev/null
mpi=(mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1)
