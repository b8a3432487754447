#!/usr/bin/env bash
# Resume with --load alone (docs/checkpoints.md): a 6-step run with a
# non-default setup (dp 2, ZeRO-1, seq 32, accumulation, lr schedule with
# warmup and linear decay, clipping, dropout, --metrics) stopped at step 3
# continues from `parallm train --load CKPT` with nothing repeated, and its
# steps 3-5 have the losses and gradient norms of an uninterrupted run, bit
# for bit. A flag given on resume overrides the saved value; a finished run
# says there is nothing to do and exits 0; another world size needs a
# layout flag; a checkpoint written before the run record existed still
# resumes with its own model; `--init-from X --save D --resume` starts and
# restarts a job.
# Usage: resume_load_only.sh PARALLM
set -u
bin="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mpi=(mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1 -np 2)
export OMP_NUM_THREADS=1
py=/usr/bin/python3

yes "the cat sat on the mat and the dog sat on the log." | head -n 400 > "$work/doc.txt"
"$bin" tokenize "$work/doc.txt" --out "$work/data" >/dev/null || fail "tokenize"
# The model only: everything else is given as flags, so the resume has
# nothing to fall back on but the checkpoint's record.
cat > "$work/model.toml" <<TOML
[model]
preset = "gpt2-tiny"
hidden_size = 32
num_layers = 2
num_heads = 4
intermediate_size = 64
max_positions = 64
TOML
setup=(--config "$work/model.toml" --data "$work/data_train.bin" --dp 2 --zero 1 --seq-len 32
       --micro-batch-size 2 --global-batch-size 8 --lr 3e-3 --warmup 2 --lr-decay-style linear
       --min-lr-ratio 0.2 --clip-grad 0.5 --hidden-dropout 0.1 --seed 77 --steps 6
       --log-interval 1 --peak-tflops 1)

# (step, loss, grad_norm) of every record, one line each, exactly as written.
records() {
  "$py" - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r["step"], repr(r["loss"]), repr(r["grad_norm"]))
PY
}

"${mpi[@]}" "$bin" train "${setup[@]}" --metrics "$work/ref.jsonl" --save-hf "$work/hf" 2>"$work/ref.log" \
  || { cat "$work/ref.log"; fail "the uninterrupted run"; }
"${mpi[@]}" "$bin" train "${setup[@]}" --metrics "$work/run.jsonl" --save "$work/ck" \
  --exit-interval 3 2>"$work/first.log" || { cat "$work/first.log"; fail "the first half"; }
[ "$(cat "$work/ck/latest")" = "step-0000003" ] || fail "the first half did not stop at step 3"
[ "$(records "$work/run.jsonl" | wc -l)" = 3 ] || fail "the first half wrote $(records "$work/run.jsonl" | wc -l) steps"

# 1. --load alone continues bit-exactly.
"${mpi[@]}" "$bin" train --load "$work/ck" 2>"$work/resume.log" \
  || { cat "$work/resume.log"; fail "parallm train --load CKPT alone"; }
grep -q "resuming with the run settings of .*step-0000003" "$work/resume.log" \
  || fail "no resume note: $(cat "$work/resume.log")"
grep -q "resumed from .*step-0000003 (step 3" "$work/resume.log" || fail "did not resume step 3"
grep -q "ZeRO stage 1" "$work/resume.log" || fail "the layout was not the checkpoint's"
records "$work/ref.jsonl" > "$work/ref.txt"
records "$work/run.jsonl" > "$work/run.txt"
[ "$(wc -l < "$work/ref.txt")" = 6 ] || fail "the reference has $(wc -l < "$work/ref.txt") steps"
diff "$work/ref.txt" "$work/run.txt" \
  || fail "steps 0-5 after --load alone differ from the uninterrupted run (above)"
[ "$(cat "$work/ck/latest")" = "step-0000006" ] || fail "the recorded --save was not used"
echo "ok: --load alone continued steps 3-5 bit-exactly (losses and gradient norms)"

# 2. Flags given on resume override the saved values (the saved
# --exit-interval 3 would stop this longer run after step 6).
"${mpi[@]}" "$bin" train --load "$work/ck/step-0000003" --steps 8 --metrics "$work/more.jsonl" \
  --save "$work/ck8" --exit-interval 0 2>"$work/more.log" || { cat "$work/more.log"; fail "--load with --steps 8"; }
grep -q "8 steps of 8 x 32 tokens" "$work/more.log" || fail "--steps 8 did not win: $(cat "$work/more.log")"
[ "$(records "$work/more.jsonl" | tail -n 1 | cut -d' ' -f1)" = 7 ] || fail "the run did not reach step 7"
[ "$(records "$work/more.jsonl" | head -n 1)" = "$(sed -n 4p "$work/ref.txt")" ] \
  || fail "step 3 under --steps 8 differs from the reference's step 3"
[ -f "$work/ck8/step-0000008/manifest.json" ] || fail "--save on the command line was not used"
echo "ok: --steps 8 on resume overrode the saved 6 and kept the rest (step 3 equal)"

# 3. A finished run: nothing to do, exit 0, no loss printed.
"${mpi[@]}" "$bin" train --load "$work/ck" >"$work/done.out" 2>"$work/done.log" \
  || { cat "$work/done.log"; fail "resuming a finished run failed"; }
grep -q "nothing to do: the checkpoint .*step-0000006 is at step 6 of 6" "$work/done.log" \
  || fail "no nothing-to-do message: $(cat "$work/done.log")"
! grep -q "loss" "$work/done.log" || fail "a finished run printed a loss: $(cat "$work/done.log")"
echo "ok: resuming at the last step said: $(grep "nothing to do" "$work/done.log")"

# Another number of ranks: refused without a layout flag (naming the saved
# layout), resharded with one (the other settings still the checkpoint's).
if err=$("$bin" train --load "$work/ck/step-0000003" 2>&1); then fail "a 1-rank resume of dp 2 ran"; fi
echo "$err" | grep -qF "on 2 ranks and this job has 1: give the layout" || fail "said: $err"
"$bin" train --load "$work/ck/step-0000003" --dp 1 --metrics "$work/one.jsonl" --save "$work/ck1" \
  2>"$work/one.log" || { cat "$work/one.log"; fail "the 1-rank resume with --dp 1"; }
grep -q "resumed from .*step-0000003 (step 3, saved under dp 2" "$work/one.log" || fail "no reshard"
# The same weights and batch, summed in another order: equal within 1e-5.
"$py" -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-5 * abs(b))" \
  "$(records "$work/one.jsonl" | head -n 1 | cut -d' ' -f2)" "$(sed -n 4p "$work/ref.txt" | cut -d' ' -f2)" \
  || fail "step 3's loss on one rank is not the reference's within 1e-5"
echo "ok: another world size needs a layout flag, and reshards with --dp 1"

# 4. A checkpoint without the run record (written before it existed): the
# record is removed and the manifest's checksum of train_state.json redone.
mkdir -p "$work/old" && cp -r "$work/ck/step-0000003" "$work/old/"
"$py" - "$work/old/step-0000003" <<'PY' || fail "making the old-style checkpoint"
import hashlib, json, os, sys
d = sys.argv[1]
st = json.load(open(os.path.join(d, "train_state.json")))
assert "run" in st, "the new checkpoint has no run record"
del st["run"]
data = json.dumps(st, indent=2).encode()
open(os.path.join(d, "train_state.json"), "wb").write(data)
m = json.load(open(os.path.join(d, "manifest.json")))
for e in m["files"]:
    if e["file"] == "train_state.json":
        e["bytes"], e["sha256"] = len(data), hashlib.sha256(data).hexdigest()
json.dump(m, open(os.path.join(d, "manifest.json"), "w"), indent=2)
PY
"${mpi[@]}" "$bin" train --load "$work/old" --data "$work/data_train.bin" --peak-tflops 1 \
  --metrics "$work/old.jsonl" 2>"$work/old.log" || { cat "$work/old.log"; fail "the old-style checkpoint"; }
grep -q "an older checkpoint" "$work/old.log" || fail "no older-checkpoint note"
grep -q "resumed from .*step-0000003 (step 3" "$work/old.log" || fail "the old checkpoint did not resume"
[ "$(records "$work/old.jsonl" | cut -d' ' -f1 | tr '\n' ' ')" = "3 4 5 " ] \
  || fail "the old-style resume trained steps $(records "$work/old.jsonl" | cut -d' ' -f1)"
echo "ok: a checkpoint without the run record resumed with its own model (hidden 32)"
# 5. `--init-from X --save D --resume` is one command line that starts the
# job and, given again, restarts it from D; once finished, it has nothing
# to do.
once=(train --init-from "$work/hf" --data "$work/data_train.bin" --dp 2 --micro-batch-size 2
      --global-batch-size 4 --seq-len 32 --steps 4 --exit-interval 2 --peak-tflops 1
      --save "$work/job" --resume)
"${mpi[@]}" "$bin" "${once[@]}" 2>"$work/job1.log" || { cat "$work/job1.log"; fail "the job's start"; }
[ "$(cat "$work/job/latest")" = "step-0000002" ] || fail "the job did not stop at step 2"
"${mpi[@]}" "$bin" "${once[@]}" 2>"$work/job2.log" || { cat "$work/job2.log"; fail "the job's restart"; }
grep -q "resumed from .*job/step-0000002 (step 2" "$work/job2.log" || fail "the restart did not resume: $(cat "$work/job2.log")"
[ "$(cat "$work/job/latest")" = "step-0000004" ] || fail "the restarted job did not finish"
"${mpi[@]}" "$bin" "${once[@]}" 2>"$work/job3.log" || { cat "$work/job3.log"; fail "the finished job"; }
grep -q "nothing to do: the checkpoint .*step-0000004 is at step 4 of 4" "$work/job3.log" \
  || fail "the finished job did not say nothing to do: $(cat "$work/job3.log")"
echo "ok: --init-from X --save D --resume started, restarted and finished the job"
echo "resume with --load alone: all checks passed"
