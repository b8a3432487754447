#!/usr/bin/env bash
# `parallm train --qlora` (docs/qlora.md): the flags' errors, the TOML keys,
# the NF4 line of the log, and a resume: training 6 steps at once and 3 + 3
# steps through a checkpoint (adapters only; the base requantised from the
# seed) give the same losses, bit for bit. A resume with another
# --double-quant is refused.
# Usage: qlora_train.sh PATH_TO_PARALLM
set -u
bin="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../common/cli_checks.sh"
cd "$work"
for i in 1 2 3; do
  yes "Document $i: the cat sat on the mat and the dog sat on the log." | head -n 300 > "doc$i.txt"
done
"$bin" tokenize doc*.txt --out data --val-fraction 0.1 >/dev/null || fail "tokenize"

expect_error "--qlora trains LoRA adapters over an NF4 base: it needs --lora-rank > 0" \
  "$bin" train --model llama-tiny --data data_train.bin --qlora --steps 1
expect_error "--double-quant quantises QLoRA's NF4 absmax values: it needs --qlora" \
  "$bin" train --model llama-tiny --data data_train.bin --lora-rank 4 --lora-targets q \
  --double-quant --steps 1

cat > q.toml <<'TOML'
[model]
preset = "llama-tiny"
lora_rank = 4
lora_alpha = 16.0
lora_targets = "all-linear"
qlora = true
double_quant = true
[data]
train = "data_train.bin"
[training]
steps = 6
micro_batch_size = 2
global_batch_size = 4
seq_len = 32
seed = 5
[optimizer]
lr = 1e-2
TOML
"$bin" train --config q.toml --threads 1 --metrics full.jsonl 2>full.log || { cat full.log; fail "train"; }
grep -q "qlora: 28 block linear weights in NF4 (double quantisation) on rank 0, 4.12" full.log ||
  { cat full.log; fail "no NF4 line"; }
"$bin" train --config q.toml --threads 1 --metrics part.jsonl --save ck --save-interval 3 \
  --exit-interval 3 2>part.log || { cat part.log; fail "first half"; }
"$bin" train --config q.toml --threads 1 --metrics part.jsonl --save ck --resume 2>>part.log ||
  { cat part.log; fail "resume"; }
grep -q "resumed from ck/step-0000003" part.log || { cat part.log; fail "did not resume"; }
loss() { sed 's/.*"loss":\([-0-9.e+]*\).*/\1/' "$1"; }
[ "$(loss full.jsonl)" = "$(loss part.jsonl)" ] ||
  fail "resumed losses differ: $(loss full.jsonl | tr '\n' ' ') vs $(loss part.jsonl | tr '\n' ' ')"
grep -Eq '"qlora": ?true' ck/step-0000006/train_state.json || fail "train_state lacks qlora"

sed 's/double_quant = true/double_quant = false/; s/steps = 6/steps = 8/' q.toml > q2.toml
expect_error "give the same --qlora / --double-quant" \
  "$bin" train --config q2.toml --threads 1 --save ck --resume
echo "qlora_train: ok"
