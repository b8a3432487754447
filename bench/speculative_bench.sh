#!/usr/bin/env bash
# Speculative decoding with prompt-lookup drafts at batch 1 (issue 45):
# parallm `generate --ngram-draft K` against transformers' generate() with
# prompt_lookup_num_tokens=K (its n-gram speculator), greedy, fp32, on the
# random-weight GPT-2 124M of bench/infer_torch_peer.py and a prompt of
# repeated code, same threads, one run; each side also plain (K = 0), so
# each speed-up is over its own plain decoding. Prints the CPU, the load,
# one JSON line per run (parallm's from its stderr summary) and whether
# the two sides' greedy ids agree.
# Usage: bench/speculative_bench.sh [THREADS] [NEW] [K] [REPS] (defaults 2 96 4 3;
#   env BUILD_DIR (build), MODELS_DIR (BUILD_DIR/infer_bench_models)). Run it quiet.
set -euo pipefail
cd "$(dirname "$0")/.."
threads="${1:-2}"
new="${2:-96}"
k="${3:-4}"
reps="${4:-3}"
build="${BUILD_DIR:-build}"
models="${MODELS_DIR:-$build/infer_bench_models}"
cmake --build "$build" --target parallm >/dev/null
mkdir -p "$models"
/usr/bin/python3 bench/infer_torch_peer.py make "$models"
export OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads"
prompt="def add(a, b): return a + b. def sub(a, b): return a - b. def mul(a, b): return a * b. def add(a, b): return a + b."
echo "{\"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//') (family \
$(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model \
$(grep -m1 '^model[[:space:]]' /proc/cpuinfo | cut -d: -f2 | tr -d ' '))\", \
\"threads\": $threads, \"load\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
for draft in 0 "$k"; do
  # Best of reps by decode tokens/s; the summary line carries it and the acceptance.
  best=""
  for _ in $(seq "$reps"); do
    line=$("$build/parallm" generate --model "$models/gpt2" --prompt "$prompt" --temperature 0 \
      --max-new-tokens "$new" --threads "$threads" --ngram-draft "$draft" --json \
      2>"$build/speculative_err.txt" | head -1)
    rate=$(sed -n 's/.*decode [0-9]* tokens in [0-9.]* s (\([0-9.]*\) tokens\/s).*/\1/p' \
      "$build/speculative_err.txt")
    acc=$(sed -n 's/.*ngram drafts \([0-9]*\) tokens, \([0-9]*\) accepted.*/\1 \2/p' \
      "$build/speculative_err.txt")
    if [ -z "$best" ] || awk "BEGIN{exit !($rate > ${best%%|*})}"; then best="$rate|$acc|$line"; fi
  done
  IFS='|' read -r rate acc line <<<"$best"
  /usr/bin/python3 -c 'import json,sys; r=json.loads(sys.argv[3]); a=sys.argv[4].split()
print(json.dumps({"impl": "parallm", "draft": int(sys.argv[1]), "decode_tok_s": float(sys.argv[2]),
  "drafted": int(a[0]) if a else 0, "accepted": int(a[1]) if a else 0, "tokens": r["tokens"]}))' \
    "$draft" "$rate" "$line" "${acc:-}"
  /usr/bin/python3 bench/speculative_peer.py "$models/gpt2" "$prompt" "$new" "$threads" "$reps" "$draft"
done | tee "$build/speculative_bench.jsonl"
/usr/bin/python3 - "$build/speculative_bench.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
get = lambda impl, d: next(r for r in rows if r["impl"] == impl and r["draft"] == d)
k = max(r["draft"] for r in rows)
for impl in ("parallm", "transformers"):
    p, s = get(impl, 0), get(impl, k)
    extra = f", {s['accepted']}/{s['drafted']} drafts accepted" if "drafted" in s else ""
    print(f"{impl}: plain {p['decode_tok_s']:.1f} tok/s, k={k} {s['decode_tok_s']:.1f} tok/s "
          f"({s['decode_tok_s'] / p['decode_tok_s']:.2f}x){extra}")
print(f"speculative parallm / speculative transformers: "
      f"{get('parallm', k)['decode_tok_s'] / get('transformers', k)['decode_tok_s']:.2f}x")
same = get("parallm", k)["tokens"] == get("transformers", k)["tokens"] == get("parallm", 0)["tokens"]
print(f"greedy ids equal (parallm plain, parallm k={k}, transformers k={k}): {same}")
PY
