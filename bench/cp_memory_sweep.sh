#!/usr/bin/env bash
# The longest sequence that trains within a fixed activation budget at cp 1, 2
# and 4 (docs/context_parallel.md, issue 15's memory goal: it should grow
# linearly with cp). The budget is the activation peak (the allocator's
# "activation" tag, rank 0, one full training step) of one process at
# BASE_SEQ. For each cp the longest fitting sequence is found by doubling and
# then bisecting over the lengths cp can split (multiples of 2 x cp x GRAIN).
# Memory, not time, is measured, so the numbers do not depend on the load.
# Usage: bench/cp_memory_sweep.sh [BUILD_DIR] [BASE_SEQ] [MODE] [GRAIN]
#        (default build, 1024, ring, 32)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
base="${2:-1024}"
mode="${3:-ring}"
grain="${4:-32}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source bench/cp_corpus.sh
max_pos=$((base * 16))

# activation_peak CP SEQ -> bytes (one step; the positions table is sized for
# the longest run so the parameters are the same in every run).
activation_peak() {
  local cp="$1" T="$2" flags=()
  [ "$cp" -gt 1 ] && flags=(--cp "$cp" --cp-comm "$mode")
  cat > "$work/run.toml" <<TOML
[model]
preset = "gpt2-tiny"
hidden_size = 256
num_layers = 2
num_heads = 8
max_positions = $max_pos
[data]
train = "$work/data_train.bin"
[training]
steps = 1
micro_batch_size = 1
global_batch_size = 1
seq_len = $T
seed = 1234
[optimizer]
lr = 1e-3
[logging]
log_interval = 1000
TOML
  OMP_NUM_THREADS=1 "${mpi[@]}" -np "$cp" "$build/parallm" train --config "$work/run.toml" \
    --threads 1 --peak-tflops 1 --metrics "$work/m.jsonl" "${flags[@]}" >"$work/log" 2>&1 ||
    { cat "$work/log" >&2; exit 1; }
  /usr/bin/python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["memory"]["activation"]["peak"])' "$work/m.jsonl"
}

budget=$(activation_peak 1 "$base")
echo "budget: activation peak of cp 1 at seq $base = $budget bytes ($mode)"
printf '%-4s %-12s %-14s %-10s\n' cp "longest seq" "peak bytes" "x cp 1"
for cp in 1 2 4; do
  step=$((2 * cp * grain))
  lo=$(( (base / step) * step ))  # fits: shorter than the budget's own sequence
  hi=$((lo * 2))
  while [ "$(activation_peak "$cp" "$hi")" -le "$budget" ]; do lo=$hi; hi=$((hi * 2)); done
  while [ $((hi - lo)) -gt "$step" ]; do
    mid=$(( ((lo + hi) / 2 / step) * step ))
    if [ "$(activation_peak "$cp" "$mid")" -le "$budget" ]; then lo=$mid; else hi=$mid; fi
  done
  [ "$cp" -eq 1 ] && longest1=$lo
  printf '%-4s %-12s %-14s %-10s\n' "$cp" "$lo" "$(activation_peak "$cp" "$lo")" \
    "$(/usr/bin/python3 -c "print(f'{$lo / $longest1:.3f}')")"
done
