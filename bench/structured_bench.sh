#!/usr/bin/env bash
# Structured output's mask cost against the step's forward (issue 45; goal
# < 5% at vocab 50k): bench/structured_mask_bench.cpp masks a 50,257-token
# byte-level BPE vocabulary (bench/structured_bench_vocab.py) at every step
# of random constrained generations (a JSON schema, any JSON object, a regex,
# a GBNF grammar); bench/infer_bench.cpp gives the decode step of GPT-2 124M
# (vocab 50,257, random weights, bench/infer_torch_peer.py make) at batch 1
# on the same threads, in the same run. Prints the CPU, the raw JSON lines
# and a markdown table of mask time per step as a share of the decode step.
# Usage: bench/structured_bench.sh [THREADS] (default 2; env BUILD_DIR, MODELS_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
threads="${1:-2}"
build="${BUILD_DIR:-build}"
models="${MODELS_DIR:-$build/infer_bench_models}"
cmake --build "$build" --target infer_bench structured_mask_bench >/dev/null
mkdir -p "$models"
/usr/bin/python3 bench/infer_torch_peer.py make "$models"
/usr/bin/python3 bench/structured_bench_vocab.py "$models/vocab50k"
export OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
{
  echo "{\"cpu\": \"$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')\", \"threads\": $threads, \"load_start\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
  "$build/bench/infer_bench" --model "$models/gpt2" --dtype fp32 --threads "$threads" --reps 3 \
    --prompt-len 64 --new 64
  "$build/bench/structured_mask_bench" --tokenizer "$models/vocab50k" --steps 200 --runs 5
  echo "{\"load_end\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
} | tee "$out"
/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
step_ms = 1000.0 / next(r for r in rows if "decode_tok_s" in r)["decode_tok_s"]
print(f"\nCPU: {rows[0]['cpu']}, {rows[0]['threads']} threads; GPT-2 124M fp32 decode step "
      f"{step_ms:.1f} ms (batch 1)\n")
print("| grammar | allowed tokens (mean) | mask mean | p50 | p99 | mean / step | p99 / step |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    if "grammar" not in r:
        continue
    m, p50, p99 = r["mask_us_mean"] / 1000, r["mask_us_p50"] / 1000, r["mask_us_p99"] / 1000
    print(f"| {r['grammar']} | {r['allowed_mean']:.0f} | {m:.3f} ms | {p50:.3f} ms | "
          f"{p99:.3f} ms | {100 * m / step_ms:.1f}% | {100 * p99 / step_ms:.1f}% |")
PY
