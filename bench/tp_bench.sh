#!/usr/bin/env bash
# Tensor-parallel benchmark on this 2-core machine: tp 2 (2 ranks x 1
# thread, with and without sequence parallelism) against tp 1 (1 rank x 2
# threads, and 1 rank x 1 thread) on a GPT-2 shaped model big enough for
# compute to dominate (hidden 512, 8 heads, 4 layers, seq 256, byte
# vocabulary). Per layout: median step ms and tokens/s over the timed steps
# and the tp/sp bytes per step, from parallm's metrics file, and the time
# inside the (blocking, so fully exposed) tp collectives that parallm
# measures (tp_comm_ms), beside an estimate from the analytical count
# (bench/tp_bench_summary.py).
# Usage: bench/tp_bench.sh [BUILD_DIR] [STEPS]   (default build, 6 steps, first 2 untimed)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
steps="${2:-6}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data="$PWD/runs/data/fortunes_train.bin"
[ -f "$data" ] || { echo "missing $data: run scripts/demo.sh once to tokenize the corpus" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
cat > "$work/run.toml" <<TOML
[model]
preset = "gpt2-tiny"
hidden_size = 512
num_layers = 4
num_heads = 8
max_positions = 256
[data]
train = "$data"
[training]
steps = $steps
micro_batch_size = 2
global_batch_size = 4
seq_len = 256
clip_grad = 1.0
seed = 1234
[optimizer]
lr = 1e-3
[lr_schedule]
warmup = 2
[logging]
log_interval = 1000
TOML
mpi=(mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1)
run() {  # name, ranks, threads, flags...
  local name="$1" np="$2" threads="$3"; shift 3
  OMP_NUM_THREADS=$threads "${mpi[@]}" -np "$np" "$build/parallm" train --config "$work/run.toml" \
    --threads "$threads" --metrics "$work/$name.jsonl" "$@" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log" >&2; exit 1; }
}
run tp1_1thread 1 1
run tp1_2threads 1 2
run tp2 2 1 --tp 2
run tp2_sp 2 1 --tp 2 --sequence-parallel
/usr/bin/python3 bench/tp_bench_summary.py "$work" tp1_1thread tp1_2threads tp2 tp2_sp
