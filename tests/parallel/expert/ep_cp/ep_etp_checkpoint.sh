#!/bin/bash
# Experts split over tp (--expert-tp 2) through the CLI (docs/moe.md): a tiny
# LLaMA MoE (gshard router, capacity 1, aux and z losses, 4 experts) trained
# 6 steps on one process is the reference.
#  1. under tp 2 + sp x dp 2 x ep 2 x expert tp 2 (np 4), saved after step 4:
#     steps 1-4 as the reference; resumed under tp 2 + sp with experts whole
#     (expert tp 1, np 2) and on one process, steps 5-6 as the reference;
#  2. 6 steps under tp 2 + sp x expert tp 2 (np 2) with --save-hf: the same
#     losses, and the Mixtral export holds the same tensors (every expert's
#     w1 / w2 / w3 gathered over tp) within 1e-5 relative of the one-process
#     export; that export read back (--init-from) under tp 2 + sp x expert
#     tp 2 (each rank its rows / columns of every expert) trains 2 steps as
#     one process does from it;
#  3. 4 steps each under pp 2 x tp 2 + sp x expert tp 2 (1F1B, np 4) and
#     under tp 2 + sp x expert tp 2 with full recomputation.
# Losses and grad norms within 1e-5 relative, loads and dropped fractions equal.
# usage: ep_etp_checkpoint.sh PARALLM   (the MPI environment comes from ctest)
set -euo pipefail
source "$(dirname "$0")/../ep_script_setup.sh" "$1"
cat > run.toml <<'TOML'
[model]
arch = "llama"
vocab_size = 320
hidden_size = 48
num_layers = 2
num_heads = 4
num_kv_heads = 2
intermediate_size = 64
num_experts = 4
moe_router_preset = "mixtral"
moe_capacity_factor = 1.0
moe_layer_freq = 1
moe_aux_loss_coeff = 0.01
moe_z_loss_coeff = 0.001
[data]
train = "d_train.bin"
[training]
steps = 6
micro_batch_size = 1
global_batch_size = 8
seq_len = 32
TOML
etp="--tp 2 --sequence-parallel --expert-tp 2"
"$exe" train --config run.toml --metrics ref.jsonl --save-hf hf1 > /dev/null
$mpi -np 4 "$exe" train --config run.toml $etp --dp 2 --ep 2 --save ck --exit-interval 4 \
  --metrics etp.jsonl > /dev/null
$mpi -np 2 "$exe" train --config run.toml --tp 2 --sequence-parallel --expert-tp 1 --dp 1 \
  --ep 1 --load ck --metrics tp_whole.jsonl > /dev/null
"$exe" train --config run.toml --tp 1 --expert-tp 1 --dp 1 --ep 1 --load ck/step-0000004 \
  --metrics one.jsonl > /dev/null
$mpi -np 2 "$exe" train --config run.toml $etp --metrics etp_hf.jsonl --save-hf hf2 > /dev/null
$mpi -np 4 "$exe" train --config run.toml $etp --pp 2 --steps 4 --metrics etp_pp.jsonl > /dev/null
$mpi -np 2 "$exe" train --config run.toml $etp --recompute full --steps 4 \
  --metrics etp_recompute.jsonl > /dev/null
"$exe" train --config run.toml --init-from hf1 --steps 2 --metrics init_one.jsonl > /dev/null
$mpi -np 2 "$exe" train --config run.toml $etp --init-from hf1 --steps 2 \
  --metrics init_etp.jsonl > /dev/null
PYTHONPATH="$ep_tests_dir" /usr/bin/python3 - <<'PY'
import os, sys
import numpy as np
from safetensors.numpy import load_file
from moe_steps import compare, read
bad = 0
for name, steps in (("etp.jsonl", [0, 1, 2, 3]), ("tp_whole.jsonl", [4, 5]), ("one.jsonl", [4, 5]),
                    ("etp_hf.jsonl", [0, 1, 2, 3, 4, 5]), ("init_etp.jsonl", [0, 1]),
                    ("etp_pp.jsonl", [0, 1, 2, 3]), ("etp_recompute.jsonl", [0, 1, 2, 3])):
    ref = read("init_one.jsonl" if name.startswith("init") else "ref.jsonl")
    bad += compare(name, ref, steps)
assert any(r["moe"]["dropped_fraction"] > 0 for r in ref.values()), "capacity 1 drops nothing"
assert sorted(os.listdir("hf1")) == sorted(os.listdir("hf2")), (os.listdir("hf1"), os.listdir("hf2"))
experts = 0
for f in sorted(os.listdir("hf1")):
    if not f.endswith(".safetensors"):
        continue
    a, b = load_file(f"hf1/{f}"), load_file(f"hf2/{f}")
    assert sorted(a) == sorted(b), f
    for k in a:
        assert a[k].shape == b[k].shape and a[k].dtype == b[k].dtype, k
        x, y = a[k].astype(np.float64), b[k].astype(np.float64)
        d = np.linalg.norm(x - y) / max(np.linalg.norm(x), 1e-30)
        experts += ".experts." in k
        if d > 1e-5:
            bad += 1
            print(f"{f} {k}: relative distance {d:.3g} DIFFERENT")
assert experts == 2 * 4 * 3, f"{experts} expert tensors exported, 24 wanted"
print(f"HF export: {experts} expert tensors compared")
sys.exit(1 if bad else 0)
PY
