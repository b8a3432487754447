#!/bin/bash
# MoE composed with other features (docs/moe.md), as whole training jobs of
# a tiny LLaMA MoE (gshard router, capacity 1, aux and z losses), 6 steps
# each against one process: pp 2, pp 2 x dp 2 x ep 2, ZeRO-1 over dp 2 (no
# ep), tp 2 + sp, tp 2 + sp x dp 2 x ep 2 under ZeRO-1, dp 2 x ep 2 with
# full and with selective recomputation. Losses and
# grad norms within 1e-5 relative, per-expert load equal, the planner's
# per-dispatch ep load (moe.ep_max_load) equal up to summation order.
# usage: ep_compose.sh PARALLM   (the MPI environment comes from ctest)
set -euo pipefail
source "$(dirname "$0")/ep_script_setup.sh" "$1"
cp "$tiny_moe_toml" run.toml
"$exe" train --config run.toml --metrics ref.jsonl > /dev/null
$mpi -np 2 "$exe" train --config run.toml --pp 2 --metrics pp2.jsonl > /dev/null
$mpi -np 4 "$exe" train --config run.toml --pp 2 --dp 2 --ep 2 --metrics pp2_ep2.jsonl > /dev/null
$mpi -np 2 "$exe" train --config run.toml --dp 2 --zero 1 --metrics zero1.jsonl > /dev/null
$mpi -np 2 "$exe" train --config run.toml --tp 2 --sequence-parallel --metrics tp2sp.jsonl \
  > /dev/null
$mpi -np 4 "$exe" train --config run.toml --tp 2 --sequence-parallel --dp 2 --ep 2 --zero 1 \
  --metrics tp2sp_ep2_zero1.jsonl > /dev/null
$mpi -np 2 "$exe" train --config run.toml --dp 2 --ep 2 --recompute full --metrics full.jsonl > /dev/null
$mpi -np 2 "$exe" train --config run.toml --dp 2 --ep 2 --recompute selective \
  --metrics selective.jsonl > /dev/null
python3 - <<'PY'
import json, sys
def read(p):
    return [json.loads(l) for l in open(p)]
ref = read("ref.jsonl")
bad = 0
for name in ("pp2", "pp2_ep2", "zero1", "tp2sp", "tp2sp_ep2_zero1", "full", "selective"):
    got = read(name + ".jsonl")
    assert len(got) == len(ref) == 6, (name, len(got))
    for g, r in zip(got, ref):
        for k in ("loss", "grad_norm"):
            if abs(g[k] - r[k]) > 1e-5 * abs(r[k]):
                bad += 1
                print(f"{name} step {r['step'] + 1} {k}: {g[k]} vs {r[k]}")
        if g["moe"]["expert_load"] != r["moe"]["expert_load"]:
            bad += 1
            print(f"{name} step {r['step'] + 1}: expert load differs")
        # the planner's ep load: the same dispatches, summed in another order
        ge, re_ = g["moe"]["ep_max_load"], r["moe"]["ep_max_load"]
        if ge.keys() != re_.keys() or any(abs(ge[e] - re_[e]) > 1e-12 * re_[e] for e in re_):
            bad += 1
            print(f"{name} step {r['step'] + 1}: ep_max_load {ge} vs {re_}")
    print(f"{name}: {'ok' if not bad else 'DIFFERENT'}")
sys.exit(1 if bad else 0)
PY
