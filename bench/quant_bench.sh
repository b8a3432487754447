#!/usr/bin/env bash
# Quantized CPU inference against llama.cpp (issue 44), one run, same GGUF files, same
# threads. llama.cpp is built from source at bench time (bench/llamacpp/build.sh) and
# writes every file itself (bench/llamacpp/make_gguf.py: its converter, its quantizer).
# Per model (GPT-2 124M, a LLaMA shape; random weights) and type (f32 f16 q8_0 q4_0
# q4_k_m): llama-bench's prompt and decode tok/s (medians), the bytes decode reads per
# token (bench/llamacpp/gguf_bytes.py) over the read bandwidth (bench/stream_copy.cpp);
# greedy token ids on f32 and q8_0; llama-perplexity of a trained model's q4_k_m file
# on held-out text; serving throughput at 8 clients x 64 tokens (llama-server, q8_0).
# Each llama.cpp figure has its parallm twin at a hook marked "PARALLM HOOK": a failed
# twin is recorded as unavailable and the run goes on. Ends with a markdown table.
# Usage: bench/quant_bench.sh [THREADS] [REPS]  (defaults 2 3; env BUILD_DIR (build),
#   QB_DIR (BUILD_DIR/quant_bench), LLAMACPP_DIR, CLIENTS (8), SERVE_TOKENS (64)).
set -uo pipefail
cd "$(dirname "$0")/.."
threads="${1:-2}"
reps="${2:-3}"
build="${BUILD_DIR:-build}"
qb="${QB_DIR:-$build/quant_bench}"
mkdir -p "$qb" && qb=$(realpath "$qb")  # absolute: greedy.py runs from bench/llamacpp
clients="${CLIENTS:-8}"
serve_tokens="${SERVE_TOKENS:-64}"
prompt=$'Q: What is the meaning of life?\nA:'
models=(gpt2 llama)
types=(f32 f16 q8_0 q4_0 q4_k_m)
set -e
bin=$(bench/llamacpp/build.sh | tail -1)
/usr/bin/python3 bench/llamacpp/make_gguf.py "$qb" >/dev/null
# parallm's side; the build lock because other builds may share the tree.
flock /tmp/parallm-build.lock ninja -C "$build" stream_copy >/dev/null
flock /tmp/parallm-build.lock ninja -C "$build" infer_bench parallm >/dev/null ||
  echo "warning: parallm's infer_bench / parallm did not build; its columns will be empty" >&2
set +e
# gguf_bytes.py needs the gguf package: pip's gguf==0.19.0, else llama.cpp's gguf-py.
/usr/bin/python3 -c "import gguf" 2>/dev/null ||
  export PYTHONPATH="${LLAMACPP_DIR:-$build/llamacpp}/src/gguf-py"
export OMP_NUM_THREADS="$threads"
gg="$qb/gguf"
out="$qb/results.jsonl"
# Some VMs name the CPU only "AMD EPYC": family and model tell the generation.
cpu="$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//') (family \
$(grep -m1 "cpu family" /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model \
$(grep -m1 "^model[[:space:]]" /proc/cpuinfo | cut -d: -f2 | tr -d ' '))"

# One JSON line for llama-bench's pp and tg tests of one file (medians over reps).
llama_bench() {  # model type file
  "$bin/llama-bench" -m "$3" -t "$threads" -p 128 -n 128 -r "$reps" -o jsonl 2>/dev/null |
    /usr/bin/python3 -c '
import json, statistics, sys
rows = [json.loads(l) for l in sys.stdin if l.startswith("{")]
pp = next(r for r in rows if r["n_prompt"] > 0 and r["n_gen"] == 0)
tg = next(r for r in rows if r["n_gen"] > 0 and r["n_prompt"] == 0)
print(json.dumps({"impl": "llamacpp", "model": sys.argv[1], "type": sys.argv[2],
                  "prefill_tok_s": statistics.median(pp["samples_ts"]),
                  "decode_tok_s": statistics.median(tg["samples_ts"]),
                  "decode_tok_s_all": [round(x, 2) for x in tg["samples_ts"]],
                  "build": rows[0].get("build_commit")}))' "$1" "$2"
}

{
  echo "{\"cpu\": \"$cpu\", \"threads\": $threads, \"load_start\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
  "$build/bench/stream_copy" --threads "$threads"
  "$build/bench/stream_copy" --threads "$threads" --huge 1
  for m in "${models[@]}"; do
    for t in "${types[@]}"; do
      f="$gg/$m-$t.gguf"
      /usr/bin/python3 bench/llamacpp/gguf_bytes.py "$f" | sed "s/^{/{\"model\": \"$m\", \"type\": \"$t\", /"
      llama_bench "$m" "$t" "$f"
      # PARALLM HOOK (decode/prefill): infer_bench on the same GGUF file. 16-bit
      # files and blocks run their prompts through the bf16 GEMM (decode reads
      # the blocks either way); f32 files stay f32, as llama.cpp runs them.
      dt=bf16
      [ "$t" = f32 ] && dt=fp32
      "$build/bench/infer_bench" --model "$f" --threads "$threads" --reps "$reps" \
        --dtype "$dt" --prompt-len 128 --new 128 2>/dev/null | grep '^{' |
        sed "s/^{/{\"model\": \"$m\", \"type\": \"$t\", /" ||
        echo "{\"impl\": \"parallm\", \"model\": \"$m\", \"type\": \"$t\", \"unavailable\": true}"
    done
  done
  "$build/bench/stream_copy" --threads "$threads"
  "$build/bench/stream_copy" --threads "$threads" --huge 1

  # Greedy ids on f32 and q8_0 (the trained tiny model's too: peaked, so robust).
  files=()
  for m in "${models[@]}" tiny; do files+=("$gg/$m-f32.gguf" "$gg/$m-q8_0.gguf"); done
  (cd bench/llamacpp && /usr/bin/python3 greedy.py "$bin/llama-server" \
    "$qb/greedy_llamacpp.json" "$prompt" 32 "$threads" "${files[@]}") >&2
  # PARALLM HOOK (greedy): one JSON object per file into greedy_parallm.jsonl.
  : >"$qb/greedy_parallm.jsonl"
  for f in "${files[@]}"; do
    r=$("$build/parallm" generate --model "$f" --prompt "$prompt" --temperature 0 \
      --max-new-tokens 32 --threads "$threads" --json 2>/dev/null | grep '^{' | head -1)
    echo "{\"file\": \"$(basename "$f")\", \"parallm\": ${r:-null}}" >>"$qb/greedy_parallm.jsonl"
  done
  echo "{\"greedy\": \"$qb/greedy_llamacpp.json\", \"greedy_parallm\": \"$qb/greedy_parallm.jsonl\"}"

  # Perplexity, 128-token chunks (the tiny model's training length is 256), llama.cpp's
  # way: each chunk scores its second half. f32 beside q4_k_m shows the quantization cost.
  for t in f32 q4_k_m; do
    ppl=$("$bin/llama-perplexity" -m "$gg/tiny-$t.gguf" -f "$qb/held_out.txt" -c 128 \
      -t "$threads" 2>&1 | sed -n 's/.*Final estimate: PPL = \([0-9.]*\) +\/- \([0-9.]*\).*/\1 \2/p')
    [ -n "$ppl" ] || ppl="null null"  # no "Final estimate" line: the run failed
    echo "{\"impl\": \"llamacpp\", \"perplexity\": \"tiny-$t\", \"ppl\": ${ppl%% *}, \"ppl_err\": ${ppl##* }}"
  done
  # PARALLM HOOK (perplexity): `parallm perplexity` scores the same file and text the
  # same way (docs/gguf.md); --quantize q4_k_m on the HF directory is parallm's own mix.
  for t in f32 q4_k_m; do
    r=$("$build/parallm" perplexity --model "$gg/tiny-$t.gguf" --text "$qb/held_out.txt" \
      --ctx 128 --threads "$threads" 2>/dev/null | grep '^{')
    [ -n "$r" ] && echo "${r/#\{/{\"impl\": \"parallm\", \"perplexity\": \"tiny-$t\", }" ||
      echo "{\"impl\": \"parallm\", \"perplexity\": \"tiny-$t\", \"unavailable\": true}"
  done
  r=$("$build/parallm" perplexity --model "$qb/hf/tiny" --quantize q4_k_m \
    --text "$qb/held_out.txt" --ctx 128 --threads "$threads" 2>/dev/null | grep '^{')
  [ -n "$r" ] && echo "${r/#\{/{\"impl\": \"parallm\", \"perplexity\": \"tiny-hf-quantize-q4_k_m\", }" ||
    echo '{"impl": "parallm", "perplexity": "tiny-hf-quantize-q4_k_m", "unavailable": true}'

  # Serving: 8 clients x 64 tokens, 2 requests each, on the q8_0 LLaMA file.
  serve_model="$gg/llama-q8_0.gguf"
  /usr/bin/python3 bench/llamacpp/serve_clients.py llamacpp "$qb/held_out.txt" "$clients" 2 \
    "$serve_tokens" -- "$bin/llama-server" -m "$serve_model" -t "$threads" -np "$clients" \
    -c $((clients * 512)) --host 127.0.0.1 --port "{port}"
  # PARALLM HOOK (serving): the same load on `parallm serve` and the same file.
  /usr/bin/python3 bench/llamacpp/serve_clients.py parallm "$qb/held_out.txt" "$clients" 2 \
    "$serve_tokens" -- "$build/parallm" serve --model "$serve_model" --threads "$threads" \
    --max-running "$clients" --served-model-name parallm --port "{port}" 2>/dev/null ||
    echo "{\"serve\": \"parallm\", \"unavailable\": true}"
  echo "{\"load_end\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
} | tee "$out"

/usr/bin/python3 bench/llamacpp/quant_table.py "$out"
