#!/bin/sh
# `parallm memory` with LoRA flags (docs/qlora.md): seed 003's 65B check from
# the command line (QLoRA fits 48 GB, 16-bit full fine-tuning not 780 GB),
# the JSON fields, and clear errors for bad LoRA flags.
set -eu
P=$1
RECIPE="--model llama-65b --seq-len 512 --micro-batch-size 1 --recompute full"
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$($P memory $RECIPE --lora-rank 64 --lora-targets all-linear --qlora --double-quant \
  --device-memory 48GB)
echo "$out"
echo "$out" | grep -q "verdict: fits in 48.00 GB" || fail "QLoRA 65B does not fit 48 GB"
echo "$out" | grep -q "frozen base weights" || fail "no frozen base row"
echo "$out" | grep -q "799539200 trainable parameters" || fail "adapter count"
echo "$out" | grep -q "(4.127 bits each)" || fail "NF4 bits per weight"

full=$($P memory $RECIPE --device-memory 780GB)
echo "$full" | grep -q "verdict: does NOT fit in 780.00 GB" || fail "full fine-tuning fits 780 GB"

json=$($P memory --model llama2-7b --lora-rank 8 --lora-targets q_proj,v_proj --json)
echo "$json" | grep -q '"trainable_params": 4194304' || fail "json trainable_params"
echo "$json" | grep -q '"targets": "q,v"' || fail "json targets"

if err=$($P memory --model llama2-7b --lora-rank 8 --lora-targets q,bogus 2>&1); then
  fail "unknown target accepted"
fi
echo "$err" | grep -q "unknown LoRA target 'bogus'" || fail "message: $err"
if err=$($P memory --model llama2-7b --qlora 2>&1); then fail "--qlora without a rank accepted"; fi
echo "$err" | grep -q "needs --lora-rank" || fail "message: $err"
if err=$($P memory --model gpt2-124m --lora-rank 4 --lora-targets gate 2>&1); then
  fail "gate on GPT-2 accepted"
fi
echo "$err" | grep -q "'gate' does not exist" || fail "message: $err"
echo "memory_lora: all checks passed"
