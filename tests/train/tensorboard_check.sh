#!/usr/bin/env bash
# TensorBoard's own reader (the `tensorboard` package's EventAccumulator,
# PyPI, on Debian's protobuf) sees every scalar of the JSONL metrics at every
# step, with the same value, for a dp 2 run with validation that runs 6 steps
# and is then resumed from its step-4 checkpoint: the resumed run's events
# replace the first run's from step 4 on (once each), as in the JSONL.
# scripts/install-deps.sh installs the package; without it this test fails.
# Usage: tensorboard_check.sh PARALLM
set -u
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
py=/usr/bin/python3
if ! err=$("$py" -c "from tensorboard.backend.event_processing import event_accumulator" 2>&1); then
  echo "FAIL: $py cannot import tensorboard's event_accumulator (PyPI tensorboard with Debian's"
  echo "      python3-protobuf and python3-absl, from scripts/install-deps.sh; run it): $err"
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
yes "the cat sat on the mat and the dog sat on the log." | head -n 300 > "$work/doc.txt"
"$bin" tokenize "$work/doc.txt" --out "$work/data" --val-fraction 0.2 >/dev/null || fail "tokenize"
train() {
  mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1 -np 2 \
    "$bin" train --model gpt2-tiny --data "$work/data_train.bin" --val-data "$work/data_val.bin" \
    --dp 2 --steps 6 --eval-interval 2 --micro-batch-size 2 --global-batch-size 4 --seq-len 16 \
    --threads 1 --peak-tflops 1 --metrics "$work/m.jsonl" \
    --tensorboard "$work/tb" "$@" 2>>"$work/train.log" >>"$work/train.log" ||
    { cat "$work/train.log"; fail "train $*"; }
}
train --save "$work/ck" --save-interval 4  # steps 0-5, a checkpoint after step 4
[ "$(ls "$work/tb" | wc -l)" = 1 ] || fail "expected one event file after the first run"
train --load "$work/ck/step-0000004"        # steps 4-5 again
[ "$(ls "$work/tb" | wc -l)" = 2 ] || fail "expected a second event file after the resume"
"$py" "$here/tensorboard_read.py" "$work/m.jsonl" "$work/tb" || fail "tensorboard check"
