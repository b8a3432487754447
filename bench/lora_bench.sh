#!/usr/bin/env bash
# LoRA / QLoRA against full fine-tuning on this machine (docs/lora.md,
# "Performance"). Two parts, both on LLaMA-shaped models and the demo corpus
# (Debian's fortunes, byte-level):
#  1. speed and memory: a 6-layer LLaMA (hidden 768, GQA 12/4 heads, SwiGLU
#     2048, seq 256) fine-tuned in full, with LoRA r 16 on all linears, and
#     with QLoRA (NF4 base + double quantisation) when this build has
#     --qlora: median step ms over the timed steps, tokens/s, MFU and the
#     allocator's peak bytes by tag, from parallm's metrics file;
#  2. quality: llama-tiny pretrained for PRE steps, then fine-tuned from that
#     base for FT steps in full and with LoRA (and QLoRA): the training loss
#     curves (docs/lora_loss.svg) and the final validation loss.
# Usage: bench/lora_bench.sh [BUILD_DIR] [SPEED_STEPS] [PRE] [FT] [THREADS] [PARTS]
#        (defaults: build 6 150 200 2 all; the first 2 speed steps are untimed;
#        PARTS: all, speed or curves)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
speed_steps="${2:-6}"
pre_steps="${3:-150}"
ft_steps="${4:-200}"
threads="${5:-2}"
parts="${6:-all}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
train_bin="$PWD/runs/data/fortunes_train.bin"
val_bin="$PWD/runs/data/fortunes_val.bin"
[ -f "$train_bin" ] || { echo "missing $train_bin: run scripts/demo.sh once to tokenize the corpus" >&2; exit 1; }
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=1
has_qlora=0  # (the help text is read whole: grep -q would close the pipe under pipefail)
help=$("$build/parallm" train --help 2>/dev/null)
[[ "$help" == *--qlora* ]] && has_qlora=1

run() {  # name, config, flags...
  local name="$1" config="$2"; shift 2
  "$build/parallm" train --config "$config" --threads "$threads" \
    --metrics "$work/$name.jsonl" "$@" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log" >&2; exit 1; }
}
lora=(--lora-rank 16 --lora-alpha 32 --lora-targets all-linear)
qlora=("${lora[@]}" --qlora --double-quant)

# 1. Speed and memory. The base weights come from the same seeded
# initialisation in every run, so the three runs do the same work per step.
cat >"$work/speed.toml" <<TOML
[model]
preset = "llama-tiny"
hidden_size = 768
num_layers = 6
num_heads = 12
num_kv_heads = 4
intermediate_size = 2048
max_positions = 256
[data]
train = "$train_bin"
[training]
steps = $speed_steps
micro_batch_size = 4
global_batch_size = 4
seq_len = 256
clip_grad = 1.0
seed = 1234
[optimizer]
lr = 1e-4
[logging]
log_interval = 1000
TOML
speed_runs=()
if [ "$parts" != curves ]; then
  speed_runs=(full lora)
  run full "$work/speed.toml"
  run lora "$work/speed.toml" "${lora[@]}" --lr 2e-4
  if [ "$has_qlora" = 1 ]; then
    run qlora "$work/speed.toml" "${qlora[@]}" --lr 2e-4
    speed_runs+=(qlora)
  fi
fi

# 2. Quality: pretrain a base, then fine-tune it three ways from the same
# weights and data order.
cat >"$work/tiny.toml" <<TOML
[model]
preset = "llama-tiny"
[data]
train = "$train_bin"
val = "$val_bin"
[training]
micro_batch_size = 8
global_batch_size = 16
seq_len = 128
clip_grad = 1.0
seed = 1234
[optimizer]
lr = 2e-3
weight_decay = 0.1
[lr_schedule]
warmup = 20
[logging]
log_interval = 1000
TOML
curve_runs=()
if [ "$parts" != speed ]; then
  run base "$work/tiny.toml" --steps "$pre_steps" --save-hf "$work/base"
  # Fine-tuning continues on later data (a different seed changes the order).
  ft=(--init-from "$work/base" --steps "$ft_steps" --seed 99 --warmup 10 --eval-interval "$ft_steps")
  curve_runs=(ft_full ft_lora)
  run ft_full "$work/tiny.toml" "${ft[@]}" --lr 5e-4
  run ft_lora "$work/tiny.toml" "${ft[@]}" "${lora[@]}" --lr 2e-3
  if [ "$has_qlora" = 1 ]; then
    run ft_qlora "$work/tiny.toml" "${ft[@]}" "${qlora[@]}" --lr 2e-3
    curve_runs+=(ft_qlora)
  fi
fi

/usr/bin/python3 bench/lora_bench_summary.py "$work" "${speed_runs[*]}" "${curve_runs[*]}" \
  docs/lora_loss.svg
