#!/bin/bash
# ZeRO-3 checkpoints under expert parallelism reshard (docs/moe.md): each
# rank writes the values and Adam moments it owns (dense spans of its dp
# shard, expert spans of its expert-dp shard). A tiny LLaMA MoE (gshard
# router, capacity 1, aux and z losses) trained 6 steps on one process is
# the reference. Trained under dp 2 x ep 2 ZeRO-3 (expert-dp 1) it must give
# the same 6 steps; its checkpoint of step 4 resumed under dp 4 x ep 2
# ZeRO-3 (expert-dp 2) and on one process, and a checkpoint saved under
# dp 4 x ep 2 ZeRO-3 (expert values split over expert-dp) resumed under
# dp 2 x ep 2 ZeRO-3 and on one process, must give steps 5 and 6 (losses
# and grad norms within 1e-5 relative, loads equal). `parallm export` of
# the final ZeRO-3 checkpoint gives the bytes --save-hf wrote from the run.
# usage: ep_zero3_checkpoint.sh PARALLM   (the MPI environment comes from ctest)
set -euo pipefail
source "$(dirname "$0")/ep_script_setup.sh" "$1"
cp "$tiny_moe_toml" run.toml
"$exe" train --config run.toml --metrics ref.jsonl > /dev/null
$mpi -np 2 "$exe" train --config run.toml --dp 2 --ep 2 --zero 3 --save ck2 --save-interval 4 \
  --save-hf hf2 --metrics full_ep2.jsonl > /dev/null
"$exe" export --checkpoint ck2 --out exported > /dev/null
cmp exported/model.safetensors hf2/model.safetensors
$mpi -np 4 "$exe" train --config run.toml --dp 4 --ep 2 --zero 3 --load ck2/step-0000004 \
  --metrics from2_ep2x2.jsonl > /dev/null
"$exe" train --config run.toml --dp 1 --load ck2/step-0000004 --metrics from2_one.jsonl > /dev/null
$mpi -np 4 "$exe" train --config run.toml --dp 4 --ep 2 --zero 3 --save ck4 --exit-interval 4 \
  > /dev/null
$mpi -np 2 "$exe" train --config run.toml --dp 2 --ep 2 --zero 3 --load ck4/step-0000004 \
  --metrics from4_ep2.jsonl > /dev/null
"$exe" train --config run.toml --dp 1 --load ck4/step-0000004 --metrics from4_one.jsonl > /dev/null
python3 - <<'PY'
import json, sys
def read(p):
    return {r["step"]: r for r in map(json.loads, open(p))}
ref = read("ref.jsonl")
bad = 0
for name, steps in (("full_ep2.jsonl", range(6)), ("from2_ep2x2.jsonl", (4, 5)),
                    ("from2_one.jsonl", (4, 5)), ("from4_ep2.jsonl", (4, 5)),
                    ("from4_one.jsonl", (4, 5))):
    got = read(name)
    assert sorted(got) == list(steps), (name, sorted(got))
    for s in steps:
        for k in ("loss", "grad_norm"):
            a, b = got[s][k], ref[s][k]
            ok = abs(a - b) <= 1e-5 * abs(b)
            bad += not ok
            print(f"{name} step {s + 1} {k}: {a:.8f} vs {b:.8f} {'ok' if ok else 'DIFFERENT'}")
        assert got[s]["moe"]["expert_load"] == ref[s]["moe"]["expert_load"], (name, s)
sys.exit(1 if bad else 0)
PY
