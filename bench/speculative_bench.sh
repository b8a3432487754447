#!/usr/bin/env bash
# Speculative decoding at batch 1 (issue 45), greedy, fp32, on the
# random-weight GPT-2 124M of bench/infer_torch_peer.py and a prompt of
# repeated code, same threads, one run, each side also plain (k = 0), so
# each speed-up is over its own plain decoding:
# - prompt lookup: parallm `generate --ngram-draft K` against transformers'
#   generate() with prompt_lookup_num_tokens=K;
# - a draft model: parallm `generate --draft-model D --num-speculative-tokens
#   K` against transformers' assisted generation (assistant_model, K a
#   step), D being the target cut to its first DRAFT_LAYERS blocks with its
#   embeddings and head (bench/speculative_draft_model.py); and the same
#   draft quantised at load (--draft-quantize q8_0; no transformers peer).
# Prints the CPU, the load, one JSON line per run (parallm's from its stderr
# summary) and whether the sides' greedy ids agree.
# Usage: bench/speculative_bench.sh [THREADS] [NEW] [K] [REPS] (defaults 2 96 4 3;
#   env BUILD_DIR (build), MODELS_DIR (BUILD_DIR/infer_bench_models),
#   DRAFT_LAYERS (1), KINDS ("ngram draft_model draft_model_q8_0")). Run it quiet.
set -euo pipefail
cd "$(dirname "$0")/.."
threads="${1:-2}"
new="${2:-96}"
k="${3:-4}"
reps="${4:-3}"
build="${BUILD_DIR:-build}"
models="${MODELS_DIR:-$build/infer_bench_models}"
layers="${DRAFT_LAYERS:-1}"
kinds="${KINDS:-ngram draft_model draft_model_q8_0}"
cmake --build "$build" --target parallm >/dev/null
mkdir -p "$models"
/usr/bin/python3 bench/infer_torch_peer.py make "$models"
draft_dir="$models/gpt2-draft$layers"
/usr/bin/python3 bench/speculative_draft_model.py "$models/gpt2" "$draft_dir" "$layers"
export OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads"
prompt="def add(a, b): return a + b. def sub(a, b): return a - b. def mul(a, b): return a * b. def add(a, b): return a + b."
echo "{\"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//') (family \
$(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model \
$(grep -m1 '^model[[:space:]]' /proc/cpuinfo | cut -d: -f2 | tr -d ' '))\", \
\"threads\": $threads, \"load\": \"$(cut -d' ' -f1-3 /proc/loadavg)\", \"draft_layers\": $layers}"
# kind draft: one parallm line (best of reps by decode tokens/s) and the peer's.
run() {
  local kind="$1" draft="$2" flags=() peer_extra=()
  if [ "$kind" = draft_model ]; then
    flags=(--draft-model "$draft_dir" --num-speculative-tokens "$draft")
    peer_extra=("$draft_dir")
  elif [ "$kind" = draft_model_q8_0 ]; then
    flags=(--draft-model "$draft_dir" --draft-quantize q8_0 --num-speculative-tokens "$draft")
  else
    flags=(--ngram-draft "$draft")
  fi
  local best=""
  for _ in $(seq "$reps"); do
    line=$("$build/parallm" generate --model "$models/gpt2" --prompt "$prompt" --temperature 0 \
      --max-new-tokens "$new" --threads "$threads" "${flags[@]}" --json \
      2>"$build/speculative_err.txt" | head -1)
    rate=$(sed -n 's/.*decode [0-9]* tokens in [0-9.]* s (\([0-9.]*\) tokens\/s).*/\1/p' \
      "$build/speculative_err.txt")
    acc=$(sed -n 's/.* drafts \([0-9]*\) tokens, \([0-9]*\) accepted.*/\1 \2/p' \
      "$build/speculative_err.txt")
    if [ -z "$best" ] || awk "BEGIN{exit !($rate > ${best%%|*})}"; then best="$rate|$acc|$line"; fi
  done
  IFS='|' read -r rate acc line <<<"$best"
  /usr/bin/python3 -c 'import json,sys; r=json.loads(sys.argv[4]); a=sys.argv[5].split()
print(json.dumps({"impl": "parallm", "kind": sys.argv[1], "draft": int(sys.argv[2]),
  "decode_tok_s": float(sys.argv[3]), "drafted": int(a[0]) if a else 0,
  "accepted": int(a[1]) if a else 0, "tokens": r["tokens"]}))' \
    "$kind" "$draft" "$rate" "$line" "${acc:-}"
  [ "$kind" = draft_model_q8_0 ] && return
  /usr/bin/python3 bench/speculative_peer.py "$models/gpt2" "$prompt" "$new" "$threads" "$reps" \
    "$draft" "${peer_extra[@]}"
}
{
  run ngram 0
  for kind in $kinds; do run "$kind" "$k"; done
} | tee "$build/speculative_bench.jsonl"
/usr/bin/python3 - "$build/speculative_bench.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
get = lambda impl, kind, d: next(r for r in rows if r["impl"] == impl and
                                 (d == 0 or r["kind"] == kind) and r["draft"] == d)
for kind in sorted({r["kind"] for r in rows if r["draft"] > 0}):
    k = max(r["draft"] for r in rows if r["kind"] == kind)
    impls = [i for i in ("parallm", "transformers")
             if any(r["impl"] == i and r["kind"] == kind for r in rows)]
    for impl in impls:
        p, s = get(impl, kind, 0), get(impl, kind, k)
        extra = ""
        if s.get("drafted"):
            extra = (f", {s['accepted']}/{s['drafted']} drafts accepted "
                     f"({s['accepted'] / s['drafted']:.2f})")
        print(f"{kind} {impl}: plain {p['decode_tok_s']:.1f} tok/s, k={k} "
              f"{s['decode_tok_s']:.1f} tok/s ({s['decode_tok_s'] / p['decode_tok_s']:.2f}x){extra}")
    if "transformers" in impls:
        print(f"{kind}: speculative parallm / speculative transformers: "
              f"{get('parallm', kind, k)['decode_tok_s'] / get('transformers', kind, k)['decode_tok_s']:.2f}x")
    same = get("parallm", kind, k)["tokens"] == get("parallm", kind, 0)["tokens"]
    if "transformers" in impls:
        same = same and get("transformers", kind, k)["tokens"] == get("parallm", kind, 0)["tokens"]
    print(f"{kind}: greedy ids equal (parallm plain, parallm k={k}"
          f"{', transformers k=' + str(k) if 'transformers' in impls else ''}): {same}")
PY
