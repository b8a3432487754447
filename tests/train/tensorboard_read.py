"""Every numeric leaf of every JSONL metrics record must be a TensorBoard
scalar of the same '/'-joined name at the record's step, with the record's
value rounded to float32, and TensorBoard must hold no step the JSONL lacks.
Usage: tensorboard_read.py METRICS.jsonl TB_DIR"""
import json
import struct
import sys

from tensorboard.backend.event_processing import event_accumulator


def leaves(value, name, out):
    if isinstance(value, bool):
        out[name] = 1.0 if value else 0.0
    elif isinstance(value, (int, float)):
        out[name] = float(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            leaves(v, f"{name}/{k}" if name else k, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            leaves(v, f"{name}/{i}", out)


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def main():
    metrics, tb_dir = sys.argv[1], sys.argv[2]
    records = [json.loads(line) for line in open(metrics)]
    acc = event_accumulator.EventAccumulator(tb_dir, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    seen = {t: {e.step: e.value for e in acc.Scalars(t)} for t in tags}
    errors, checked = [], 0
    for t in tags:  # a step logged twice (not purged on resume) shows here
        if len(acc.Scalars(t)) != len(seen[t]):
            errors.append(f"'{t}': {len(acc.Scalars(t))} events for {len(seen[t])} steps")
    wanted = set()
    for rec in records:
        want = {}
        leaves({k: v for k, v in rec.items() if k != "step"}, "", want)
        for tag, value in want.items():
            wanted.add(tag)
            got = seen.get(tag, {}).get(rec["step"])
            if got is None:
                errors.append(f"step {rec['step']}: no scalar '{tag}'")
            elif got != f32(value):
                errors.append(f"step {rec['step']} '{tag}': tensorboard {got} != jsonl {value}")
            checked += 1
    steps = {r["step"] for r in records}
    for tag in tags:
        extra = set(seen[tag]) - steps
        if extra:
            errors.append(f"'{tag}' has steps the JSONL lacks: {sorted(extra)}")
        if tag not in wanted:
            errors.append(f"'{tag}' is not in the JSONL")
    for name in ("loss", "lr", "grad_norm", "tokens_per_s", "mfu", "val_loss",
                 "memory/activation/peak", "comm_ms_by_group/dp"):
        if name not in tags:
            errors.append(f"expected scalar '{name}' is missing")
    if len(records) != 6 or sorted(steps) != list(range(6)):
        errors.append(f"expected steps 0-5 in the JSONL, got {sorted(steps)}")
    for e in errors[:20]:
        print("FAIL:", e)
    if errors:
        sys.exit(1)
    print(f"ok: {checked} scalars at {len(steps)} steps, {len(tags)} tags")


main()
