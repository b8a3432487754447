#!/bin/bash
# Checkpoints reshard across ep sizes (docs/moe.md): a tiny LLaMA MoE (gshard
# router, capacity 1, aux and z losses) trained 6 steps on one process is the
# reference; the same run saved after step 4 under dp 4 x ep 2 (expert-dp 2)
# and resumed under dp 2 x ep 2 and on one process must give steps 5 and 6
# with the same losses and grad norms (1e-5 relative). The same under ZeRO-1
# (expert optimizer state sharded over expert-dp, each rank writing its
# spans): saved under dp 4 x ep 2 ZeRO-1, resumed under dp 2 x ep 2 ZeRO-1
# and on one process. And a model with a gated shared expert (Qwen2-MoE
# style): saved under tp 2 + sp x dp 2 x ep 2, resumed on one process.
# usage: ep_checkpoint.sh PARALLM   (the MPI environment comes from ctest)
set -euo pipefail
source "$(dirname "$0")/ep_script_setup.sh" "$1"
cp "$tiny_moe_toml" run.toml
"$exe" train --config run.toml --metrics ref.jsonl > /dev/null
$mpi -np 4 "$exe" train --config run.toml --dp 4 --ep 2 --save ck --exit-interval 4 > /dev/null
$mpi -np 2 "$exe" train --config run.toml --dp 2 --ep 2 --load ck --metrics ep2.jsonl > /dev/null
"$exe" train --config run.toml --dp 1 --load ck/step-0000004 --metrics one.jsonl > /dev/null
$mpi -np 4 "$exe" train --config run.toml --dp 4 --ep 2 --zero 1 --save ckz --exit-interval 4 \
  > /dev/null
$mpi -np 2 "$exe" train --config run.toml --dp 2 --ep 2 --zero 1 --load ckz \
  --metrics ep2_zero1.jsonl > /dev/null
"$exe" train --config run.toml --dp 1 --load ckz/step-0000004 --metrics one_zero1.jsonl > /dev/null
sed 's/^moe_z_loss_coeff = 0.001$/&\nmoe_shared_expert_intermediate_size = 32\nmoe_shared_expert_gate = true/' \
  run.toml > shared.toml
grep -q shared_expert_gate shared.toml
"$exe" train --config shared.toml --metrics ref_shared.jsonl > /dev/null
$mpi -np 4 "$exe" train --config shared.toml --tp 2 --sequence-parallel --dp 2 --ep 2 \
  --save cks --exit-interval 4 > /dev/null
"$exe" train --config shared.toml --dp 1 --load cks --metrics one_shared.jsonl > /dev/null
python3 - <<'PY'
import json, sys
def read(p):
    return {r["step"]: r for r in map(json.loads, open(p))}
ref = read("ref.jsonl")
bad = 0
for name in ("ep2.jsonl", "one.jsonl", "ep2_zero1.jsonl", "one_zero1.jsonl", "one_shared.jsonl"):
    got = read(name)
    ref = read("ref_shared.jsonl" if "shared" in name else "ref.jsonl")
    assert sorted(got) == [4, 5], (name, sorted(got))
    for s in (4, 5):
        for k in ("loss", "grad_norm"):
            a, b = got[s][k], ref[s][k]
            ok = abs(a - b) <= 1e-5 * abs(b)
            bad += not ok
            print(f"{name} step {s + 1} {k}: {a:.8f} vs {b:.8f} {'ok' if ok else 'DIFFERENT'}")
        assert got[s]["moe"]["expert_load"] == ref[s]["moe"]["expert_load"], name
sys.exit(1 if bad else 0)
PY
