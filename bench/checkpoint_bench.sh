#!/usr/bin/env bash
# Checkpoint save / verify+load times for GPT-2 124M (fp32 values + AdamW
# moments, 1.5 GB) on this machine, next to the --save-hf writer as the peer
# measured in the same run: one process, dp 2 with ZeRO-1 (each rank writes
# half), and a reshard load into tp 2. One step each; times come from the
# job's own log lines. Usage: bench/checkpoint_bench.sh [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe --bind-to none --mca btl self,vader -np)
yes "the cat sat on the mat and the dog sat on the log." | head -n 2000 > "$work/doc.txt" || true  # yes ends on SIGPIPE
build/parallm tokenize "$work/doc.txt" --out "$work/data" >/dev/null
common=(--model gpt2-124m --data "$work/data_train.bin" --micro-batch-size 1 --global-batch-size 2
        --seq-len 32 --peak-tflops 1 --threads 1)
echo "== one process: checkpoint (step 1) and --save-hf"
build/parallm train "${common[@]}" --steps 1 --save "$work/ck1" --save-hf "$work/hf" 2>&1 |
  grep -E "saved|resumed"
echo "== dp 2, ZeRO-1: checkpoint"
"${mpi[@]}" 2 build/parallm train "${common[@]}" --steps 1 --dp 2 --zero 1 --save "$work/ck2" 2>&1 |
  grep -E "saved|resumed"
echo "== reshard: the dp 2 checkpoint into tp 2 (verify + load), one more step"
"${mpi[@]}" 2 build/parallm train "${common[@]}" --steps 2 --tp 2 --load "$work/ck2" 2>&1 |
  grep -E "saved|resumed"
echo "== export of the dp 2 checkpoint to HF"
/usr/bin/time -f "export: %e s, %M KB peak RSS" build/parallm export --checkpoint "$work/ck2" \
  --out "$work/hf2"
rm -rf "$work"
