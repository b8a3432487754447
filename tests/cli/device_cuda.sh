#!/usr/bin/env bash
# `parallm train --device cuda` on any machine: unknown devices and what the
# GPU path does not run yet fail with one clear message before any work; a
# plain GPU run either trains (a GPU is visible: the loss falls) or says that
# no CUDA device is visible (the CPU-only machines CI runs on); a build
# without nvcc says that it has no CUDA backend. On a GPU it is part of the
# GPU proof (docs/cuda.md): the one model there follows the CPU step by step.
# Usage: device_cuda.sh PATH_TO_PARALLM
set -u
bin="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# fail, expect_error, tiny_corpus
. "$(dirname "$0")/../common/cli_checks.sh"

tiny_corpus "$bin" "$work" 400
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
expect_error "--device cuda: QLoRA (the NF4 linear) does not run on the GPU yet" \
  "${run[@]}" --device cuda --lora-rank 4 --lora-targets q,v --qlora \
  --save "$work/refused.ck" --save-hf "$work/refused.hf"
[ ! -e "$work/refused.ck" ] && [ ! -e "$work/refused.hf" ] || fail "a refused run wrote files"
printf '[model]\npreset = "llama-tiny"\nsliding_window = 8\n' > "$work/window.toml"
expect_error "--device cuda: sliding-window attention (window 8 < sequence length 32) does not run on the GPU yet" \
  "$bin" train --config "$work/window.toml" --data "$work/data_train.bin" --steps 1 --seq-len 32 --device cuda

# A GPU run follows the CPU's, step for step: both fp32 (no TF32), the sums
# in other orders, so each loss agrees to 1e-4 relative (GPT-2 tiny and
# LLaMA tiny with full recomputation; packed documents on LLaMA; dp 2 over
# NCCL where two GPUs are visible; cp 2, MoE, Gemma); a checkpoint the GPU
# saved at step 4 resumes on the CPU within the same bound. bf16: the first
# step's loss within 2^-6 of the CPU's (docs/testing.md, "bf16 against bf16
# by another GEMM path": each logit within one bf16 ulp, 2^-7, and a loss is
# a log-sum-exp less a logit), and the loss falls. Greedy generation from
# the GPU-trained model on the GPU gives the CPU's tokens.
follows_cpu() {  # name flags...
  local name=$1
  shift
  "${run[@]}" --device cpu "$@" --metrics "$work/$name.cpu.jsonl" >/dev/null 2>&1 ||
    fail "$name: the cpu run"
  "${run[@]}" --device cuda "$@" --metrics "$work/$name.cuda.jsonl" 2>"$work/$name.log" ||
    { cat "$work/$name.log"; fail "$name: the cuda run"; }
  compare_losses "$name" "$work/$name.cpu.jsonl" "$work/$name.cuda.jsonl" "${BOUND:-1e-4}"
}
compare_losses() {  # name cpu.jsonl cuda.jsonl [bound]
  awk -v name="$1" -v bound="${4:-1e-4}" 'FNR == 1 { f++ }
    { match($0, /"loss":[^,}]*/); v = substr($0, RSTART + 7, RLENGTH - 7) + 0 }
    f == 1 { cpu[FNR] = v; n = FNR } f == 2 { d = v - cpu[FNR]; if (d < 0) d = -d
      if (d > bound * (cpu[FNR] < 0 ? -cpu[FNR] : cpu[FNR])) {
        printf "FAIL: %s: step line %d: cuda loss %s, cpu %s\n", name, FNR, v, cpu[FNR]; bad = 1 }
      m = FNR }
    END { if (m != n || n == 0) { printf "FAIL: %s: %d cuda and %d cpu steps\n", name, m, n; bad = 1 }
          if (!bad) printf "%s: cuda follows the cpu over %d steps\n", name, n; exit bad }' "$2" "$3" ||
    exit 1
}

if "${run[@]}" --device cuda --metrics "$work/m.jsonl" 2>"$work/gpu.log"; then
  grep -q "^done: loss" "$work/gpu.log" || { cat "$work/gpu.log"; fail "no closing line"; }
  [ "$(wc -l < "$work/m.jsonl")" -eq 8 ] || fail "metrics lines"
  follows_cpu gpt2 --model gpt2-tiny
  follows_cpu llama.recompute --model llama-tiny --recompute full
  follows_cpu llama.packed --model llama-tiny --reset-attention-mask --reset-position-ids --eod-token 10
  follows_cpu moe --model llama-tiny --num-experts 4 --moe-router-topk 2
  printf '[model]\npreset = "llama-tiny"\nfamily = "gemma"\n' > "$work/gemma.toml"
  follows_cpu gemma --config "$work/gemma.toml"
  if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ]; then
    mpi=(mpirun --oversubscribe -np 2)
    "${mpi[@]}" "${run[@]}" --device cpu --model llama-tiny --dp 2 --metrics "$work/dp.cpu.jsonl" \
      >/dev/null 2>&1 || fail "dp 2: the cpu run"
    "${mpi[@]}" "${run[@]}" --device cuda --model llama-tiny --dp 2 \
      --metrics "$work/dp.cuda.jsonl" 2>"$work/dp.log" || { cat "$work/dp.log"; fail "dp 2 on NCCL"; }
    compare_losses dp.nccl "$work/dp.cpu.jsonl" "$work/dp.cuda.jsonl"
  fi
  "${run[@]}" --device cpu --model llama-tiny --precision bf16 --metrics "$work/bf16.cpu.jsonl" \
    >/dev/null 2>&1 || fail "bf16: the cpu run"
  "${run[@]}" --device cuda --model llama-tiny --precision bf16 --metrics "$work/bf16.cuda.jsonl" \
    2>"$work/bf16.log" || { cat "$work/bf16.log"; fail "bf16: the cuda run"; }
  head -n 1 "$work/bf16.cpu.jsonl" > "$work/bf16.cpu.first"
  head -n 1 "$work/bf16.cuda.jsonl" > "$work/bf16.cuda.first"
  compare_losses bf16.first "$work/bf16.cpu.first" "$work/bf16.cuda.first" 0.015625
  awk '{ match($0, /"loss":[^,}]*/); v = substr($0, RSTART + 7, RLENGTH - 7) + 0 }
    NR == 1 { first = v } END { exit !(v < first) }' "$work/bf16.cuda.jsonl" ||
    fail "bf16 on the GPU: the loss did not fall"
  "${run[@]}" --device cuda --save "$work/ck" --save-interval 4 >/dev/null 2>&1 || fail "cuda --save"
  rm -rf "$work/ck/step-0000008" && echo step-0000004 > "$work/ck/latest"
  "${run[@]}" --device cpu --save "$work/ck" --resume --metrics "$work/resumed.jsonl" \
    >/dev/null 2>&1 || fail "the cpu resume of a cuda checkpoint"
  tail -n 4 "$work/m.jsonl" > "$work/m.tail.jsonl"
  compare_losses resume "$work/m.tail.jsonl" "$work/resumed.jsonl"
  "${run[@]}" --device cuda --save-hf "$work/hf" >/dev/null 2>&1 || fail "cuda --save-hf"
  gen=("$bin" generate --model "$work/hf" --prompt "the cat" --max-new-tokens 16 --temperature 0)
  "${gen[@]}" --device cpu > "$work/gen.cpu" 2>/dev/null || fail "generate on the cpu"
  "${gen[@]}" --device cuda > "$work/gen.cuda" 2>"$work/gen.log" ||
    { cat "$work/gen.log"; fail "generate on the gpu"; }
  cmp -s "$work/gen.cpu" "$work/gen.cuda" || fail "greedy tokens differ between cpu and cuda"
  echo "generate: the GPU's greedy tokens are the CPU's"
  echo "a GPU is visible: trained on it"
else
  grep -qF "no CUDA device is visible" "$work/gpu.log" ||
    grep -qF "this build has no CUDA backend" "$work/gpu.log" ||
    { cat "$work/gpu.log"; fail "--device cuda failed for another reason"; }
  echo "no GPU here: --device cuda said so"
fi
echo "PASS"
