#!/usr/bin/env bash
# Single-stream inference benchmark (issue 13): parallm against transformers'
# `generate` on this machine, same models, same prompt, same thread count, in
# one run. Models: GPT-2 124M and a LLaMA shape of similar size (GQA, RoPE),
# random weights made once by transformers (bench/infer_torch_peer.py make)
# and cached as HF directories. Per model and dtype (fp32, bf16): prefill and
# decode tokens/s of parallm (bench/infer_bench.cpp) then of transformers
# (bench/infer_torch_peer.py run), back to back; a STREAM-style copy
# (bench/stream_copy.cpp, also a read-only stream) before and after gives the
# machine's bandwidth (best of both), and decode's achieved bandwidth = GEMM
# weight bytes per token x decode tokens/s is reported as a fraction of each. The copy and
# read run twice, with 4 KiB pages (as STREAM runs) and on transparent huge pages (as parallm
# holds its weights, infer/huge_pages.h); the goal's fraction is taken of the higher copy
# figure. Prints the load average, every raw JSON line and a markdown table naming the CPU.
# Usage: bench/infer_bench.sh [THREADS] [REPS] [PROMPT_TOKENS] [NEW_TOKENS]
#   (defaults 2 3 128 128; env BUILD_DIR (default build), MODELS_DIR
#   (default $BUILD_DIR/infer_bench_models)). Run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
threads="${1:-2}"
reps="${2:-3}"
prompt="${3:-128}"
new="${4:-128}"
build="${BUILD_DIR:-build}"
models="${MODELS_DIR:-$build/infer_bench_models}"
[ -f "$build/build.ninja" ] || [ -f "$build/Makefile" ] || cmake --preset release >/dev/null
cmake --build "$build" --target infer_bench stream_copy >/dev/null
mkdir -p "$models"
/usr/bin/python3 bench/infer_torch_peer.py make "$models"
export OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads"
cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
flags=$(grep -m1 "^flags" /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_bf16|amx_bf16)$' | tr '\n' ' ')
out=$(mktemp)
trap 'rm -f "$out"' EXIT
{
  echo "{\"cpu\": \"$cpu\", \"isa\": \"$flags\", \"load_start\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
  "$build/bench/stream_copy" --threads "$threads"
  "$build/bench/stream_copy" --threads "$threads" --huge 1
  for model in gpt2 llama; do
    for dtype in fp32 bf16; do
      "$build/bench/infer_bench" --model "$models/$model" --dtype "$dtype" --threads "$threads" \
        --reps "$reps" --prompt-len "$prompt" --new "$new" | sed "s/^{/{\"model\": \"$model\", /"
      /usr/bin/python3 bench/infer_torch_peer.py run "$models/$model" --dtype "$dtype" \
        --threads "$threads" --reps "$reps" --prompt-len "$prompt" --new "$new"
    done
  done
  "$build/bench/stream_copy" --threads "$threads"
  "$build/bench/stream_copy" --threads "$threads" --huge 1
  echo "{\"load_end\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
} | tee "$out"
/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
head = rows[0]
end = next(r for r in rows if "load_end" in r)
bw = {k: max(r["gb_s"] for r in rows if r.get("kernel") == k)
      for k in ("copy", "read", "read4", "copy_huge", "read_huge", "read4_huge")}
best_copy = max(bw["copy"], bw["copy_huge"])
best_read = max(bw["read"], bw["read_huge"])
best_read4 = max(bw["read4"], bw["read4_huge"])
cpu = head["cpu"]
threads = next(r["threads"] for r in rows if r.get("kernel") == "copy")
runs = {(r["model"], r["dtype"], r["impl"]): r for r in rows if "impl" in r}


def goals(ratio, frac):
    miss = [m for m, ok in (("3x", ratio >= 3.0), ("70%", frac >= 0.70)) if not ok]
    return "both met" if not miss else "missed: " + ", ".join(miss)


print(f"\nCPU: {cpu} ({head['isa'].strip()}), {threads} threads; load average "
      f"{head['load_start']} at start, {end['load_end']} at end")
print(f"Memory bandwidth ({cpu}, {threads} threads, best of the runs before and after): "
      f"STREAM-style copy {bw['copy']:.1f} GB/s (read + write counted), read-only stream "
      f"{bw['read']:.1f} GB/s, 4 read streams a thread {bw['read4']:.1f} GB/s; on huge pages "
      f"copy {bw['copy_huge']:.1f}, read {bw['read_huge']:.1f}, 4 streams "
      f"{bw['read4_huge']:.1f} GB/s\n")
print(f"| model | dtype | CPU | prefill tok/s parallm | transformers | ratio | decode tok/s parallm "
      f"| transformers | ratio | weights read per token (MB) | achieved GB/s | of best copy "
      f"| of best read | of best 4-stream read | goals (>= 3x, >= 70% of best copy) |")
print("|---|---|---|" + "---:|" * 11 + "---|")
for model in ("gpt2", "llama"):
    for dtype in ("fp32", "bf16"):
        p, t = runs[(model, dtype, "parallm")], runs[(model, dtype, "transformers")]
        gbs = p["weight_bytes_per_token"] * p["decode_tok_s"] / 1e9
        print(f"| {model} | {dtype} | {cpu} | {p['prefill_tok_s']:.0f} | {t['prefill_tok_s']:.1f} "
              f"| {p['prefill_tok_s'] / t['prefill_tok_s']:.2f}x | {p['decode_tok_s']:.1f} "
              f"| {t['decode_tok_s']:.1f} | {p['decode_tok_s'] / t['decode_tok_s']:.2f}x "
              f"| {p['weight_bytes_per_token'] / 1e6:.0f} | {gbs:.1f} | {100 * gbs / best_copy:.0f}% "
              f"| {100 * gbs / best_read:.0f}% | {100 * gbs / best_read4:.0f}% "
              f"| {goals(p['decode_tok_s'] / t['decode_tok_s'], gbs / best_copy)} |")
loads = [float(x) for x in head["load_start"].split()[:1] + end["load_end"].split()[:1]]
if max(loads) >= 1.5:
    print(f"\nwarning: load average reached {max(loads):.2f} (>= 1.5): other work shared the "
          f"cores, so these figures are low and noisy; rerun on a quiet machine")
PY
