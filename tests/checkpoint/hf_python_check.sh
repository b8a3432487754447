#!/usr/bin/env bash
# The Python `safetensors` package (PyPI) reads what `parallm export` writes
# from a tp 2 checkpoint, single-file and sharded, with tensors identical to
# the in-memory gather of --save-hf. scripts/install-deps.sh installs the
# package; without it this test fails (it never skips).
# Usage: hf_python_check.sh PARALLM
set -u
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
py=/usr/bin/python3
if ! err=$("$py" -c "import safetensors.numpy, numpy" 2>&1); then
  echo "FAIL: $py cannot import the Python safetensors package (PyPI safetensors, pinned in"
  echo "      scripts/install-deps.sh; run it): $err"
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
yes "the cat sat on the mat and the dog sat on the log." | head -n 300 > "$work/doc.txt"
"$bin" tokenize "$work/doc.txt" --out "$work/data" >/dev/null || fail "tokenize"
mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1 -np 2 \
  "$bin" train --model llama-tiny --data "$work/data_train.bin" --tp 2 --steps 2 \
  --micro-batch-size 2 --global-batch-size 2 --seq-len 16 --threads 1 --peak-tflops 1 \
  --save "$work/ck" --save-hf "$work/direct" 2>"$work/train.log" || { cat "$work/train.log"; fail "train"; }
"$bin" export --checkpoint "$work/ck" --out "$work/export" >/dev/null || fail "export"
"$bin" export --checkpoint "$work/ck" --out "$work/sharded" --max-shard-mb 0.5 >/dev/null || fail "export sharded"
"$py" "$here/read_export.py" "$work/direct" "$work/export" "$work/sharded" || fail "python check"
