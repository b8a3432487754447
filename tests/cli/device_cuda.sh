#!/usr/bin/env bash
# `parallm train --device cuda` on any machine: unknown devices and what the
# GPU path does not run yet fail with one clear message before any work; a
# plain GPU run either trains (a GPU is visible: the loss falls) or says that
# no CUDA device is visible (the CPU-only machines CI runs on); a build
# without nvcc says that it has no CUDA backend.
# Usage: device_cuda.sh PATH_TO_PARALLM
set -u
bin="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# fail, expect_error
. "$(dirname "$0")/../common/cli_checks.sh"

yes "the cat sat on the mat and the dog sat on the log." | head -n 400 > "$work/doc.txt"
"$bin" tokenize "$work/doc.txt" --out "$work/data" >/dev/null || fail "tokenize"
run=("$bin" train --model gpt2-tiny --data "$work/data_train.bin" --steps 8
     --micro-batch-size 2 --global-batch-size 4 --seq-len 32 --lr 3e-3 --warmup 2 --threads 1)

expect_error "unknown device 'tpu' (cpu, cuda, or test: the CPU test device, docs/devices.md)" "${run[@]}" --device tpu
# A build without nvcc has no GPU path at all: every --device cuda run says so.
if "${run[@]}" --device cuda --recompute full 2>&1 >/dev/null | grep -qF "this build has no CUDA backend"; then
  expect_error "--device cuda: this build has no CUDA backend" "${run[@]}" --device cuda
  echo "no CUDA backend in this build: --device cuda said so"
  echo "PASS"
  exit 0
fi
expect_error "--device cuda: --recompute full is not on the GPU yet" \
  "${run[@]}" --device cuda --recompute full
expect_error "--device cuda: --precision fp16 is not on the GPU yet" \
  "${run[@]}" --device cuda --precision fp16
expect_error "--device cuda: the Gemma family (GeGLU, sqrt(hidden) embedding scale, (1 + w) RMSNorm) is not on the GPU yet" \
  "$bin" train --model gemma-2b --data "$work/data_train.bin" --steps 1 --seq-len 32 --device cuda
expect_error "--device cuda: rope_scaling 'llama3' is not on the GPU yet" \
  "$bin" train --model llama3.2-1b --data "$work/data_train.bin" --steps 1 --seq-len 32 --device cuda
printf '[model]\npreset = "llama-tiny"\nsliding_window = 8\n' > "$work/window.toml"
expect_error "--device cuda: sliding-window attention (window 8 < sequence length 32) is not on the GPU yet" \
  "$bin" train --config "$work/window.toml" --data "$work/data_train.bin" --steps 1 --seq-len 32 --device cuda
expect_error "--device cuda: checkpoints (--save / --load) are not on the GPU yet" \
  "${run[@]}" --device cuda --save "$work/ckpt"
[ ! -e "$work/ckpt" ] || fail "a refused run left $work/ckpt behind"

if "${run[@]}" --device cuda --metrics "$work/m.jsonl" 2>"$work/gpu.log"; then
  grep -q "^done: loss" "$work/gpu.log" || { cat "$work/gpu.log"; fail "no closing line"; }
  [ "$(wc -l < "$work/m.jsonl")" -eq 8 ] || fail "metrics lines"
  echo "a GPU is visible: trained on it"
else
  grep -qF "no CUDA device is visible" "$work/gpu.log" ||
    grep -qF "this build has no CUDA backend" "$work/gpu.log" ||
    { cat "$work/gpu.log"; fail "--device cuda failed for another reason"; }
  echo "no GPU here: --device cuda said so"
fi
echo "PASS"
