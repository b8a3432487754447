#!/usr/bin/env bash
# Mixed precision and activation recomputation on this machine, one run of
# bench/precision_bench.cpp (same model, same threads, every configuration
# in one process, one after the other), turned into the two tables of
# docs/mixed_precision.md (tokens/s against fp32) and docs/recompute.md
# (activation peak saved and step time paid against no recomputation).
# Usage: bench/precision_bench.sh [THREADS] [STEPS] [extra precision_bench flags...]
#   e.g. bench/precision_bench.sh 2 3 --rounds 3 --layers 12   (GPT-2 124M shape)
# Run it on a quiet machine: ratios are only meaningful when nothing else runs.
set -euo pipefail
cd "$(dirname "$0")/.."
threads="${1:-2}"
steps="${2:-3}"
shift $(( $# > 2 ? 2 : $# ))
cmake --build build --target precision_bench >/dev/null
export OMP_NUM_THREADS="$threads"
out=$(./build/bench/precision_bench --steps "$steps" "$@")
echo "$out"
/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in sys.argv[1].splitlines() if l.startswith("{")]
prec = [r for r in rows if r["recompute"] == "none"]
base = next(r for r in prec if r["precision"] == "fp32")
print("\n| precision | GEMM | step ms (best) | tokens/s | vs fp32 (wall) | step CPU ms (best) | vs fp32 (CPU time) |")
print("|---|---|---:|---:|---:|---:|---:|")
seen = set()
for r in prec:
    key = (r["precision"], r["gemm"])
    if key in seen: continue
    seen.add(key)
    print(f"| {r['precision']} | {r['gemm']} | {r['step_ms_best']:.0f} | {r['tokens_per_s']:.0f} "
          f"| {r['tokens_per_s'] / base['tokens_per_s']:.2f}x | {r['step_cpu_ms_best']:.0f} "
          f"| {base['step_cpu_ms_best'] / r['step_cpu_ms_best']:.2f}x |")
rc = {r["recompute"]: r for r in rows if r["precision"] == "fp32"}
none = rc["none"]
print("\n| recompute | activation peak (MiB) | saved vs none | step ms (best) | time vs none | step CPU ms (best) | CPU time vs none |")
print("|---|---:|---:|---:|---:|---:|---:|")
for k in ("none", "selective", "full"):
    r = rc[k]
    print(f"| {k} | {r['activation_peak_bytes'] / 2**20:.1f} "
          f"| {100 * (1 - r['activation_peak_bytes'] / none['activation_peak_bytes']):.0f}% "
          f"| {r['step_ms_best']:.0f} | {r['step_ms_best'] / none['step_ms_best']:.2f}x "
          f"| {r['step_cpu_ms_best']:.0f} | {r['step_cpu_ms_best'] / none['step_cpu_ms_best']:.2f}x |")
PY
