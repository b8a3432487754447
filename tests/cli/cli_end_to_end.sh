#!/usr/bin/env bash
# End-to-end CLI checks: tokenize -> train (with accumulation) -> save -> eval,
# and bad inputs that must fail with one clear message and write nothing.
# Usage: cli_end_to_end.sh PATH_TO_PARALLM
set -u
bin="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# fail, expect_error
. "$(dirname "$0")/../common/cli_checks.sh"

for i in 1 2 3; do
  yes "Document $i: the cat sat on the mat and the dog sat on the log." | head -n 300 > "$work/doc$i.txt"
done
"$bin" tokenize "$work"/doc*.txt --out "$work/data" --val-fraction 0.1 >/dev/null || fail "tokenize"
[ -f "$work/data_train.bin" ] && [ -f "$work/data_val.bin" ] || fail "no shards"

"$bin" train --model gpt2-tiny --data "$work/data_train.bin" --val-data "$work/data_val.bin" \
  --steps 12 --micro-batch-size 2 --global-batch-size 4 --seq-len 32 --lr 3e-3 --warmup 2 \
  --metrics "$work/m.jsonl" --save-hf "$work/model" --save "$work/ckpt" --save-interval 5 --keep 2 \
  --threads 1 2>"$work/train.log" || { cat "$work/train.log"; fail "train"; }
[ "$(wc -l < "$work/m.jsonl")" -eq 12 ] || fail "metrics lines"
grep -q "CPU ISA " "$work/train.log" || fail "the banner does not name the CPU ISA"
for key in step loss lr grad_norm tokens_per_s mfu memory val_loss; do
  tail -n 1 "$work/m.jsonl" | grep -q "\"$key\"" || fail "metrics lack $key"
done
[ -f "$work/model/config.json" ] && [ -f "$work/model/model.safetensors" ] || fail "no saved model"
out=$("$bin" eval --model "$work/model" --data "$work/data_val.bin" --seq-len 32 \
  --micro-batch-size 2 --batches 2 --threads 1) || fail "eval"
echo "$out" | grep -q '^{"batches":2,"loss":[0-9.]*,"tokens":128}$' || fail "eval output: $out"

# Checkpoints at steps 5, 10 and the end (12); --keep 2 removed step 5.
[ "$(cat "$work/ckpt/latest")" = "step-0000012" ] || fail "latest checkpoint"
[ "$(ls "$work/ckpt" | grep -c '^step-')" -eq 2 ] && [ ! -e "$work/ckpt/step-0000005" ] || fail "--keep 2"
"$bin" export --checkpoint "$work/ckpt" --out "$work/exported" >/dev/null || fail "export"
cmp -s "$work/exported/model.safetensors" "$work/model/model.safetensors" || fail "export differs from --save-hf"
# --resume with every step done trains nothing more, says so and ends cleanly.
"$bin" train --model gpt2-tiny --data "$work/data_train.bin" --steps 12 --micro-batch-size 2 \
  --global-batch-size 4 --seq-len 32 --lr 3e-3 --warmup 2 --save "$work/ckpt" --resume \
  --threads 1 2>"$work/resume.log" || { cat "$work/resume.log"; fail "resume"; }
grep -q "nothing to do: the checkpoint .*step-0000012 is at step 12 of 12" "$work/resume.log" ||
  { cat "$work/resume.log"; fail "resume of a finished run did not say nothing to do"; }

# Resuming from the saved HF directory works and its first loss is the eval loss region.
"$bin" train --init-from "$work/model" --data "$work/data_train.bin" --steps 1 \
  --micro-batch-size 2 --global-batch-size 2 --seq-len 32 --threads 1 2>/dev/null || fail "init-from"

# Bad inputs.
PARALLM_MAX_CPU_ISA=avx9 expect_error \
  "PARALLM_MAX_CPU_ISA is 'avx9'; expected one of avx2, avx512_core, avx512_core_vnni, avx512_core_bf16, avx512_core_amx, all" \
  "$bin" train --model gpt2-tiny --data "$work/data_train.bin" --save-hf "$work/never"
[ ! -e "$work/never" ] || fail "a failed run wrote its output"
expect_error "config file '$work/none.toml' does not exist" "$bin" train --config "$work/none.toml"
printf '[training]\nsteps = 3\n[optimizer]\nlr = "fast"\n' > "$work/bad.toml"
expect_error "[optimizer] lr must be a number" "$bin" train --config "$work/bad.toml"
expect_error "global batch size (3) is not divisible by micro batch size (2)" \
  "$bin" train --model gpt2-tiny --data "$work/data_train.bin" --micro-batch-size 2 \
  --global-batch-size 3 --save-hf "$work/never"
[ ! -e "$work/never" ] || fail "a failed run wrote its output"
head -c 100 "$work/data_train.bin" > "$work/short.bin"
expect_error "short.bin" "$bin" train --model gpt2-tiny --data "$work/short.bin" --save-hf "$work/never"
[ ! -e "$work/never" ] || fail "a failed run wrote its output"
expect_error "--load: no checkpoint in '$work/data'" "$bin" train --model gpt2-tiny \
  --data "$work/data_train.bin" --load "$work/data"
expect_error "has no config.json" "$bin" eval --model "$work" --data "$work/data_val.bin"
mkdir -p "$work/badmodel"; cp "$work/model/config.json" "$work/badmodel/"
printf 'garbage!' > "$work/badmodel/model.safetensors"
expect_error "badmodel/model.safetensors" "$bin" eval --model "$work/badmodel" \
  --data "$work/data_val.bin" --seq-len 32 --micro-batch-size 1 --batches 1
expect_error "No such file" "$bin" tokenize "$work/missing.txt" --out "$work/x"
[ ! -e "$work/x_train.bin" ] || fail "tokenize wrote output for a missing input"
mkdir -p "$work/badtok"; printf '{"model": {"type": "Unigram"}}' > "$work/badtok/tokenizer.json"
expect_error "unsupported model type 'Unigram'" "$bin" tokenize "$work"/doc*.txt \
  --out "$work/x" --tokenizer "$work/badtok"
[ ! -e "$work/x_train.bin" ] || fail "tokenize wrote output for a bad tokenizer"
# Optimizers: Muon trains (its loss falls); a bad name fails up front.
"$bin" train --model gpt2-tiny --data "$work/data_train.bin" --steps 6 --micro-batch-size 2 \
  --global-batch-size 2 --seq-len 32 --lr 3e-3 --warmup 1 --optimizer muon --muon-lr 0.02 \
  --metrics "$work/muon.jsonl" --threads 1 2>/dev/null || fail "train --optimizer muon"
first=$(head -n 1 "$work/muon.jsonl" | sed 's/.*"loss":\([0-9.e+-]*\).*/\1/')
last=$(tail -n 1 "$work/muon.jsonl" | sed 's/.*"loss":\([0-9.e+-]*\).*/\1/')
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || fail "muon loss did not fall: $first -> $last"
expect_error "unknown optimizer 'lion'" "$bin" train --model gpt2-tiny --data "$work/data_train.bin" \
  --optimizer lion --save "$work/never"
[ ! -e "$work/never" ] || fail "a failed run wrote its output"
echo "cli end-to-end: all checks passed"
