#!/usr/bin/env bash
# Draft-model speculative decoding at batch 1 on a shared machine: plain,
# an fp32 draft and a q8_0 draft run in turn, ROUNDS times, so that load
# from other work falls on all three alike; prints one line per run and the
# best and mean decode tokens/s of each with the speed-ups over plain. Same
# target, draft, prompt and flags as bench/speculative_bench.sh (which it
# needs to have made the models). Run it with OMP_WAIT_POLICY=PASSIVE on a
# busy machine: spinning OpenMP workers there lose most of their slices.
# Usage: bench/speculative_rounds.sh [ROUNDS] [K] [DRAFT_LAYERS] (defaults 6 4 1; env BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-6}"
k="${2:-4}"
layers="${3:-1}"
build="${BUILD_DIR:-build}"
models="$build/infer_bench_models"
draft="$models/gpt2-draft$layers"
[ -d "$draft" ] || /usr/bin/python3 bench/speculative_draft_model.py "$models/gpt2" "$draft" "$layers"
prompt="def add(a, b): return a + b. def sub(a, b): return a - b. def mul(a, b): return a * b. def add(a, b): return a + b."
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), k $k, draft layers $layers"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq "$rounds"); do
  for run in "plain|" "fp32|--draft-model $draft --num-speculative-tokens $k" \
             "q8_0|--draft-model $draft --draft-quantize q8_0 --num-speculative-tokens $k"; do
    # shellcheck disable=SC2086
    line=$("$build/parallm" generate --model "$models/gpt2" --prompt "$prompt" --temperature 0 \
      --max-new-tokens 96 --threads 2 ${run#*|} --json 2>&1 >/dev/null | tail -1)
    rate=$(echo "$line" | sed -n 's/.*decode [0-9]* tokens in [0-9.]* s (\([0-9.]*\) tokens\/s).*/\1/p')
    acc=$(echo "$line" | sed -n 's/.* drafts \([0-9]*\) tokens, \([0-9]*\) accepted.*/\2\/\1/p')
    echo "${run%%|*} $rate ${acc:--} load $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out"
  done
done
awk '{s[$1] += $2; n[$1]++; if ($2 > b[$1]) b[$1] = $2}
     END {for (r in s) printf "%s: best %.1f (%.2fx), mean %.1f (%.2fx)\n", r, b[r],
          b[r] / b["plain"], s[r] / n[r], (s[r] / n[r]) / (s["plain"] / n["plain"])}' "$out"
