#!/usr/bin/env bash
# Checkpoint fault tests: a rank killed while saving (synchronously, or in
# the background under async_save) leaves the previous checkpoint as
# `latest` and nothing a load could take for complete; a
# flipped byte, a truncated shard, a missing manifest and an empty --load
# directory are each refused before training with a message naming the file.
# Usage: checkpoint_faults.sh PARALLM CHECKPOINT_FAULT_JOB EXPECT_JOB_FAILURE_SH
set -u
bin="$1"; fault_job="$2"; expect_failure="$3"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mpi=(mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1)

# expect_error "substring" command...: non-zero exit and the message in the output.
expect_error() {
  local want="$1"; shift
  local err
  if err=$("$@" 2>&1); then fail "'$*' succeeded, expected: $want"; fi
  echo "$err" | grep -qF -- "$want" || fail "'$*' said: $err -- expected: $want"
  echo "ok: refused with: $(echo "$err" | grep -F -- "$want" | head -n 1)"
}

yes "the cat sat on the mat and the dog sat on the log." | head -n 400 > "$work/doc.txt"
"$bin" tokenize "$work/doc.txt" --out "$work/data" >/dev/null || fail "tokenize"
cat > "$work/run.toml" <<TOML
[model]
preset = "gpt2-tiny"
hidden_size = 32
num_layers = 2
num_heads = 4
intermediate_size = 64
max_positions = 32
[data]
train = "data_train.bin"
[training]
steps = 6
micro_batch_size = 2
global_batch_size = 4
seq_len = 16
[parallelism]
dp = 2
[checkpoint]
save = "ck"
save_interval = 2
[logging]
peak_tflops = 1
TOML

# 1. Rank 1 killed while writing step 6: step 4 stays the latest.
sh "$expect_failure" 60 "exited on signal 9" "${mpi[@]}" -np 2 "$fault_job" "$work/run.toml" 6 \
  || fail "the killed save did not end the job as expected"
[ "$(cat "$work/ck/latest")" = "step-0000004" ] || fail "latest is $(cat "$work/ck/latest")"
[ ! -e "$work/ck/step-0000006" ] || fail "an interrupted save left step-0000006"
[ ! -e "$work/ck/step-0000006.tmp/manifest.json" ] || fail "the interrupted save wrote a manifest"
common=(--config "$work/run.toml" --threads 1)
"$bin" train "${common[@]}" --dp 1 --load "$work/ck" --save "$work/ck2" 2>"$work/load.log" \
  || { cat "$work/load.log"; fail "loading after the interrupted save"; }
grep -q "resumed from .*step-0000004 (step 4" "$work/load.log" || fail "did not resume step 4: $(cat "$work/load.log")"
echo "ok: a rank killed during the save of step 6 left step 4 loadable"
# 1b. The same kill while an asynchronous save writes in the background
# (the shard hook runs on the writer's thread): step 4 stays the latest.
sed 's/^save = "ck"$/save = "ck_async"\nasync_save = true/' "$work/run.toml" > "$work/async.toml"
sh "$expect_failure" 60 "exited on signal 9" "${mpi[@]}" -np 2 "$fault_job" "$work/async.toml" 6 \
  || fail "the killed background save did not end the job as expected"
[ "$(cat "$work/ck_async/latest")" = "step-0000004" ] || fail "async: latest is $(cat "$work/ck_async/latest")"
[ ! -e "$work/ck_async/step-0000006" ] || fail "an interrupted background save left step-0000006"
[ ! -e "$work/ck_async/step-0000006.tmp/manifest.json" ] || fail "the interrupted background save wrote a manifest"
"$bin" train "${common[@]}" --dp 1 --load "$work/ck_async" --save "$work/ck_async2" 2>"$work/load_async.log" \
  || { cat "$work/load_async.log"; fail "loading after the interrupted background save"; }
grep -q "resumed from .*step-0000004 (step 4" "$work/load_async.log" || fail "did not resume step 4: $(cat "$work/load_async.log")"
echo "ok: a rank killed during a background save of step 6 left step 4 loadable"

# Saving again into the directory replaces the stale temporary one.
"${mpi[@]}" -np 2 "$bin" train "${common[@]}" --resume 2>"$work/resave.log" \
  || { cat "$work/resave.log"; fail "resave"; }
[ "$(cat "$work/ck/latest")" = "step-0000006" ] && [ -f "$work/ck/step-0000006/manifest.json" ] \
  && [ ! -e "$work/ck/step-0000006.tmp" ] || fail "the resumed run did not complete step 6"
echo "ok: a later save completed step 6 over the stale temporary directory"

# 2-4. Corrupted copies of the last checkpoint are refused, naming the file.
corrupt() { rm -rf "$work/$1"; cp -r "$work/ck" "$work/$1"; echo "$work/$1/step-0000006"; }
d=$(corrupt flipped)
printf '\xff' | dd of="$d/shard-00001-of-00002.safetensors" bs=1 seek=300 conv=notrunc status=none
expect_error "shard-00001-of-00002.safetensors fails its checksum" \
  "$bin" train "${common[@]}" --dp 1 --steps 8 --load "$work/flipped"
expect_error "shard-00001-of-00002.safetensors fails its checksum" \
  "${mpi[@]}" -np 2 "$bin" train "${common[@]}" --steps 8 --load "$work/flipped"
d=$(corrupt truncated)
truncate -s -100 "$d/shard-00000-of-00002.safetensors"
expect_error "shard-00000-of-00002.safetensors has" \
  "$bin" train "${common[@]}" --dp 1 --steps 8 --load "$work/truncated"
d=$(corrupt nomanifest)
rm "$d/manifest.json"
expect_error "nomanifest/step-0000006/manifest.json is missing" \
  "$bin" train "${common[@]}" --dp 1 --steps 8 --load "$work/nomanifest"
mkdir -p "$work/empty"
expect_error "--load: no checkpoint in '$work/empty'" \
  "$bin" train "${common[@]}" --dp 1 --load "$work/empty"
expect_error "step-0000006/manifest.json is missing" \
  "$bin" export --checkpoint "$work/nomanifest" --out "$work/never"
[ ! -e "$work/never" ] || fail "a refused export wrote output"
echo "checkpoint faults: all checks passed"
