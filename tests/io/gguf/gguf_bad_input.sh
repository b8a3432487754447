#!/bin/bash
# GGUF files parallm must refuse, each with one error line naming the
# problem and its values, before any weight is loaded: a truncated header,
# truncated tensor data, a bad magic, version 1, a Q5_K tensor (ggml type
# 13, not read), an unknown architecture. The intact file loads and generates.
# Usage: gguf_bad_input.sh PARALLM WORK_DIR
set -u
source "$(dirname "$0")/../../common/cli_checks.sh"
P=$1; W=$2
rm -rf "$W"; mkdir -p "$W"
/usr/bin/python3 "$(dirname "$0")/bad_gguf.py" "$W" || fail "writing the fixtures"
gen() { "$P" generate --model "$1" --prompt ab --max-new-tokens 2 --temperature 0; }
gen "$W/good.gguf" >/dev/null 2>&1 || fail "the intact file: $(gen "$W/good.gguf" 2>&1)"
expect_error "truncated GGUF file: metadata" gen "$W/truncated_header.gguf"
expect_error "truncated GGUF file: tensor 'output_norm.weight'" gen "$W/truncated_data.gguf"
expect_error "not a GGUF file: bad magic 0x4c4d4747 (bytes 'GGML')" gen "$W/bad_magic.gguf"
expect_error "unsupported GGUF version 1 (parallm reads versions 2 and 3)" gen "$W/version1.gguf"
expect_error "tensor 'blk.0.attn_q.weight' has type Q5_K (ggml type 13), which parallm does not read" \
  gen "$W/q5_k.gguf"
expect_error "general.architecture 'mamba' is not supported" gen "$W/mamba.gguf"
echo "ok: 6 bad GGUF files refused, each with one clear error"
