#!/usr/bin/env bash
# Snapshots (docs/resilience.md): --snapshot DIR every step in memory
# (/dev/shm), --save every 4 steps on disk. A rank killed after step 7
# leaves disk step 4 and snapshot step 6 (or 5, when the background write
# of 6 was still in flight); --resume takes the newest complete one and
# finishes equal to an uninterrupted run bit for bit. With that snapshot's
# shard corrupted, the resume says so and falls back to disk step 4, again
# finishing bit for bit.
# Usage: snapshot_resume.sh PARALLM
set -u
bin="$1"
# fail, tiny_corpus, tiny_model_table, memory_dir
. "$(dirname "$0")/../common/cli_checks.sh"
work=$(mktemp -d)
shm=$(memory_dir)
trap 'rm -rf "$work" "$shm"' EXIT
mpi=(mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1 -np 2)
export OMP_NUM_THREADS=1

tiny_corpus "$bin" "$work" 400
{ tiny_model_table 32; cat <<TOML; } > "$work/run.toml"
[data]
train = "data_train.bin"
[training]
steps = 10
micro_batch_size = 2
global_batch_size = 4
seq_len = 16
[parallelism]
dp = 2
zero = 1
[logging]
peak_tflops = 1
TOML
common=(--config "$work/run.toml" --threads 1)
"${mpi[@]}" "$bin" train "${common[@]}" --save-hf "$work/ref" 2>"$work/ref.log" \
  || { cat "$work/ref.log"; fail "the uninterrupted run"; }

# first_half NAME: disk step 4, snapshots up to 6, then rank 1 killed after step 7.
first_half() {
  "${mpi[@]}" "$bin" train "${common[@]}" --save "$work/ck-$1" --save-interval 4 \
    --snapshot "$shm/$1" --snapshot-interval 1 --plant-failures kill@7:1 >/dev/null 2>&1 \
    && fail "the planted kill did not end the first half"
  [ "$(cat "$work/ck-$1/latest")" = step-0000004 ] || fail "disk latest: $(cat "$work/ck-$1/latest")"
  snap=$(cat "$shm/$1/latest")
  case "$snap" in step-0000006|step-0000005) ;; *) fail "snapshot latest: $snap" ;; esac
  [ -f "$shm/$1/$snap/manifest.json" ] || fail "the latest snapshot $snap is not complete"
}
resume() {
  "${mpi[@]}" "$bin" train "${common[@]}" --save "$work/ck-$1" --save-interval 4 \
    --snapshot "$shm/$1" --snapshot-interval 1 --resume --save-hf "$work/hf-$1" 2>"$work/$1.log" \
    || { cat "$work/$1.log"; fail "the resume ($1)"; }
}

first_half a
resume a
grep -q "resumed from $shm/a/$snap (step ${snap#step-000000}" "$work/a.log" || fail "not resumed from snapshot $snap: $(grep resumed "$work/a.log")"
cmp "$work/ref/model.safetensors" "$work/hf-a/model.safetensors" || fail "the run resumed from the snapshot differs"
echo "ok: resumed from the newest complete snapshot (memory, $snap) over the disk's step 4, bit for bit"

first_half b
printf '\xff' | dd of="$shm/b/$snap/shard-00001-of-00002.safetensors" bs=1 seek=300 conv=notrunc status=none
resume b
grep -q "shard-00001-of-00002.safetensors fails its checksum .*resuming from the next newest, $work/ck-b" "$work/b.log" \
  || fail "the corrupt snapshot was not named: $(cat "$work/b.log")"
grep -q "resumed from $work/ck-b/step-0000004 (step 4" "$work/b.log" || fail "not resumed from disk step 4"
cmp "$work/ref/model.safetensors" "$work/hf-b/model.safetensors" || fail "the run resumed from disk differs"
echo "ok: a snapshot failing its digest gave way to the disk checkpoint, bit for bit"
