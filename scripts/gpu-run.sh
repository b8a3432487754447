#!/usr/bin/env bash
# Runs on a lent GPU machine (docs/cuda.md): unpacks gpu-bundle/bundle.tar.xz
# (made here by scripts/gpu-bundle.sh), finds CUDA's runtime, cuBLAS and NCCL
# libraries there, and runs the steps named on the command line, each
# writing its output under $OUT (default ./gpu-out):
#   tests         the gpu tests (GoogleTest JSON + log)
#   gemm          cuBLASLt GEMM TFLOP/s (the measured peak for MFU)
#   kernels       LayerNorm, bias-gradient, element-wise and cross-entropy kernels
#   attention     our flash attention vs PyTorch's scaled_dot_product_attention
#   gpt2          GPT-2 124M bf16 training, the one model (bench/gpt2_train_bench
#                 --device cuda), torch eager, torch.compile
#                 (micro-batches $GPT2_BATCHES, default "16 32"; $GPT2_PEERS=no skips torch)
#   decode        greedy generation with the paged KV cache (bench/infer_bench --device
#                 cuda, bf16, on a random GPT-2 124M saved by transformers),
#                 transformers' generate() (dynamic cache; static cache + torch.compile)
#                 and a bare torch loop
#                 (batches $DECODE_BATCHES, default "1 16 64"; $DECODE_PEERS=no skips torch)
#   cli           `parallm train/generate --device cuda` end to end (tests/cli/device_cuda.sh):
#                 the one model on the GPU follows the CPU step by step (GPT-2, LLaMA with
#                 recomputation, packed documents, MoE, Gemma, bf16, dp 2 on two GPUs), its
#                 checkpoint resumes on the CPU, greedy generation gives the CPU's tokens
# Example: scripts/gpu-run.sh tests gemm attention gpt2
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-out}"
mkdir -p "$out"
root=/tmp/parallm-gpu
rm -rf "$root" && mkdir -p "$root"
tar -C "$root" -xJf gpu-bundle/bundle.tar.xz
libdirs="$root/lib"
for name in libcublasLt.so.13 libnccl.so.2 libcudart.so.13; do
  d=$(find /usr/local/cuda*/ /usr/lib /opt -name "$name" 2>/dev/null | head -1)
  [ -n "$d" ] && libdirs="$libdirs:$(dirname "$d")"
done
export LD_LIBRARY_PATH="$libdirs:${LD_LIBRARY_PATH:-}"
bin="$root/bin"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/device.txt"
python3 -c "import torch; print('torch', torch.__version__)" | tee -a "$out/device.txt"
for step in "$@"; do
  case "$step" in
    tests)
      # One process per suite: a kernel that faults poisons its CUDA context,
      # and the other suites should still report.
      mkdir -p "$out/json"
      for suite in $("$bin/parallm_gpu_tests" --gtest_list_tests | grep -v '^ ' | tr -d '.'); do
        timeout "${SUITE_TIMEOUT:-120}" "$bin/parallm_gpu_tests" --gtest_filter="$suite.*" \
          --gtest_output=json:"$out/json/$suite.json" >>"$out/gpu_tests.log" 2>&1
        echo "$suite: exit $?" | tee -a "$out/gpu_tests.log"
      done
      grep -E "^\[  FAILED  \]|Failure$|error" "$out/gpu_tests.log" | sort -u | head -40 ;;
    gemm) "$bin/gpu_gemm_bench" 2>&1 | tee -a "$out/bench.jsonl" ;;
    kernels)  # memory-bound kernels at GPT-2 124M size
      for k in "$bin"/gpu_norm_bench "$bin"/gpu_elementwise_bench; do
        [ -x "$k" ] && "$k" 2>&1 | tee -a "$out/bench.jsonl"
      done ;;
    attention)
      "$bin/gpu_attention_bench" 2>&1 | tee -a "$out/bench.jsonl"
      python3 "$bin/attention_torch.py" 2>&1 | tee -a "$out/bench.jsonl" ;;
    gpt2)
      for b in ${GPT2_BATCHES:-16 32}; do
        "$bin/gpt2_train_bench" --device cuda --precision bf16 --batch "$b" --seq 1024 \
          --steps 20 --warmup 3 --peak-tflops 989.4 2>&1 | tee -a "$out/bench.jsonl"
        [ "${GPT2_PEERS:-yes}" = no ] && continue
        python3 "$bin/gpt2_torch.py" --batch "$b" 2>&1 | tail -1 | tee -a "$out/bench.jsonl"
        python3 "$bin/gpt2_torch.py" --batch "$b" --compile 2>&1 | tail -1 | tee -a "$out/bench.jsonl"
      done ;;
    decode)
      # A random GPT-2 124M (HF's vocabulary) as transformers saves it: what we load, we serve.
      python3 -c "import sys, torch, transformers as t; torch.manual_seed(0)
t.GPT2LMHeadModel(t.GPT2Config()).save_pretrained(sys.argv[1])" "$root/gpt2-hf"
      for b in ${DECODE_BATCHES:-1 16 64}; do
        "$bin/infer_bench" --device cuda --dtype bf16 --model "$root/gpt2-hf" --batch "$b" \
          --prompt-len 128 --new 128 2>&1 | tee -a "$out/bench.jsonl"
        [ "${DECODE_PEERS:-yes}" = no ] && continue
        python3 "$bin/decode_torch.py" --batch "$b" 2>&1 | grep '^{' | tee -a "$out/bench.jsonl"
      done ;;
    cli) bash "$bin/device_cuda.sh" "$bin/parallm" 2>&1 | tail -12 | tee "$out/cli.log" ;;
    *) echo "gpu-run: unknown step $step (tests, gemm, kernels, attention, gpt2, decode, cli)" >&2 ;;
  esac
done
# One archive of the per-suite JSON files (the device tool returns few files).
if [ -d "$out/json" ]; then
  tar -C "$out" -czf "$out/gpu_tests_json.tar.gz" json && rm -rf "$out/json"
fi
