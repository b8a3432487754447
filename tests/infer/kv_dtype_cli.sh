#!/usr/bin/env bash
# `--kv-dtype` end to end: `parallm generate` on a tiny trained model with an
# f32, bf16 and f16 KV cache (each generates its tokens and names its cache in
# the summary line), a bad value refused before anything loads, and `parallm
# memory --inference` counting the KV cache at 4 bytes a value for f32 and 2
# for bf16 and f16 (exactly half). The numerics: tests/infer/kv_dtype_test.cpp.
# Usage: kv_dtype_cli.sh PATH_TO_PARALLM
set -u
bin="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# fail, expect_error, tiny_corpus
. "$(dirname "$0")/../common/cli_checks.sh"

tiny_corpus "$bin" "$work" 300
"$bin" train --model gpt2-tiny --data "$work/data_train.bin" --steps 4 --micro-batch-size 2 \
  --global-batch-size 2 --seq-len 32 --lr 3e-3 --threads 1 --save-hf "$work/hf" >/dev/null 2>&1 ||
  fail "train the tiny model"

gen=("$bin" generate --model "$work/hf" --prompt "the cat" --max-new-tokens 24 --temperature 0
     --json --threads 1)
for kv in f32 bf16 f16; do
  "${gen[@]}" --kv-dtype "$kv" > "$work/gen.$kv" 2> "$work/gen.$kv.log" ||
    { cat "$work/gen.$kv.log"; fail "generate --kv-dtype $kv"; }
  grep -qF ", kv $kv: prefill" "$work/gen.$kv.log" ||
    { cat "$work/gen.$kv.log"; fail "the summary does not name the $kv cache"; }
  n=$(python3 -c 'import json,sys; print(len(json.loads(open(sys.argv[1]).readline())["tokens"]))' \
      "$work/gen.$kv")
  [ "$n" -eq 24 ] || fail "--kv-dtype $kv generated $n tokens, expected 24"
done
echo "generate: f32, bf16 and f16 caches each gave 24 tokens"
# A parse error, as CLI11 reports a bad value: named, before the model loads.
if err=$("${gen[@]}" --kv-dtype int8 2>&1 >/dev/null); then fail "--kv-dtype int8 succeeded"; fi
echo "$err" | grep -qF "unknown KV cache dtype 'int8' (expected f32, bf16 or f16)" ||
  fail "--kv-dtype int8 said: $err"

kv_bytes() {
  "$bin" memory --inference --model gpt2-124m --batch 4 --context 1024 --kv-dtype "$1" --json |
    python3 -c 'import json,sys; print(int(json.load(sys.stdin)["bytes"]["kv_cache"]))'
}
f32=$(kv_bytes f32) bf16=$(kv_bytes bf16) f16=$(kv_bytes f16)
[ "$f32" -gt 0 ] && [ "$f32" -eq $((2 * bf16)) ] && [ "$bf16" -eq "$f16" ] ||
  fail "memory --inference KV cache: f32 $f32, bf16 $bf16, f16 $f16 bytes"
echo "memory --inference: KV cache f32 $f32 bytes, bf16 and f16 $bf16"
echo "PASS"
