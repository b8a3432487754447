#!/usr/bin/env bash
# --deepspeed end to end: seed 003's DeepSpeed JSON (train_batch_size 16,
# fp16, ZeRO-3 with cpu offload, gradient accumulation 4, gradient
# checkpointing) on dp 2 follows exactly the trajectory of the equivalent
# flags (--global-batch-size 16 --micro-batch-size 2 --precision fp16
# --zero 3 --recompute full): every step's loss, grad norm, lr and loss scale
# equal. A second config's WarmupDecayLR gives DeepSpeed's lr at every step.
# Usage: deepspeed_check.sh PARALLM
set -u
bin="$1"
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
yes "the cat sat on the mat and the dog sat on the log." | head -n 300 > "$work/doc.txt"
"$bin" tokenize "$work/doc.txt" --out "$work/data" >/dev/null || fail "tokenize"
cat > "$work/seed003.json" <<'JSON'
{
  "train_batch_size": 16,
  "fp16": {
    "enabled": true
  },
  "zero_optimization": {
    "stage": 3,
    "offload_optimizer": {
      "device": "cpu"
    },
    "offload_param": {
      "device": "cpu"
    }
  },
  "gradient_accumulation_steps": 4,
  "gradient_checkpointing": true
}
JSON
cat > "$work/decay.json" <<'JSON'
{
  "train_micro_batch_size_per_gpu": 2,
  "gradient_clipping": 0.5,
  "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "weight_decay": 0.01}},
  "scheduler": {"type": "WarmupDecayLR",
                "params": {"warmup_min_lr": 1e-4, "warmup_max_lr": 2e-3, "warmup_num_steps": 3,
                           "total_num_steps": 8}}
}
JSON
train() {  # name, np, flags...
  local name="$1" np="$2"; shift 2
  mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1 -np "$np" \
    "$bin" train --model gpt2-tiny --data "$work/data_train.bin" --steps 6 --seq-len 16 \
    --threads 1 --peak-tflops 1 --metrics "$work/$name.jsonl" "$@" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log"; fail "train $name"; }
}
train ds 2 --dp 2 --deepspeed "$work/seed003.json"
grep -q "offload_param to cpu" "$work/ds.log" || { cat "$work/ds.log"; fail "no offload note"; }
train flags 2 --dp 2 --global-batch-size 16 --micro-batch-size 2 --precision fp16 --zero 3 \
  --recompute full
train decay 1 --deepspeed "$work/decay.json" --global-batch-size 2
"$py" - "$work" <<'PY' || fail "comparison"
import json, math, sys
work = sys.argv[1]
load = lambda n: [json.loads(l) for l in open(f"{work}/{n}.jsonl")]
ds, flags, decay = load("ds"), load("flags"), load("decay")
assert len(ds) == len(flags) == 6, (len(ds), len(flags))
for a, b in zip(ds, flags):
    for k in ("loss", "grad_norm", "lr", "loss_scale", "skipped"):
        assert a[k] == b[k], f"step {a['step']} {k}: deepspeed {a[k]} != flags {b[k]}"
for r in decay:  # DeepSpeed WarmupDecayLR, log warmup (its default)
    s = r["step"]
    g = math.log(s + 1) / math.log(3) if s < 3 else max(0.0, (8 - s) / (8 - 3))
    want = 1e-4 + (2e-3 - 1e-4) * g
    assert abs(r["lr"] - want) <= 1e-12 * want + 1e-18, f"step {s}: lr {r['lr']} != {want}"
print(f"ok: {len(ds)} steps equal (final loss {ds[-1]['loss']:.6f}); WarmupDecayLR lr at 6 steps")
PY
