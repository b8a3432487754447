#!/usr/bin/env bash
# The main job on the bundled default: builds parallm, tokenizes Debian's
# fortune-cookie corpus (English text from the `fortunes` package) into
# byte-level token shards, and trains the tiny GPT-2 of configs/gpt2-tiny.toml,
# printing the loss as it falls; then the model it trained speaks: a few
# sampled continuations of short prompts. Extra arguments go to `parallm train`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
if [ ! -f runs/data/fortunes_train.bin ]; then
  mapfile -t texts < <(find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' | sort)
  ./build/parallm tokenize "${texts[@]}" --out runs/data/fortunes --val-fraction 0.02
fi
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(nproc)}"
./build/parallm train --config configs/gpt2-tiny.toml "$@"
# The config saves the trained model as a Hugging Face directory.
if [ -f runs/demo/model/model.safetensors ]; then
  echo "--- samples from the trained model (temperature 0.8, top-p 0.95) ---"
  seed=1
  for prompt in "The " "A man " "Q: What is love?"; do
    printf '%s' "$prompt"
    ./build/parallm generate --model runs/demo/model --prompt "$prompt" --max-new-tokens 120 \
      --temperature 0.8 --top-p 0.95 --seed "$seed" --stop $'\n\n' 2>/dev/null
    seed=$((seed + 1))
  done
fi
