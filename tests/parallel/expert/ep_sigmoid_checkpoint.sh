#!/bin/bash
# The expert bias is checkpoint state (docs/moe.md "Sigmoid routing and the
# expert bias"): a tiny LLaMA MoE with sigmoid routing and the bias (rate
# 0.01, so it moves the choice within the run) trained 6 steps on one
# process is the reference; the same run saved after step 4 under dp 2 x
# ep 2 and resumed under dp 2 x ep 2 and on one process must give steps 5
# and 6 with the same losses and grad norms (1e-5 relative) and expert
# loads. The saved train_state.json must hold a moved bias, and a resume
# that drops it (the key removed) must route differently: the check bites.
# The router is DeepSeek-V3's whole: 8 experts in 4 groups of 2, the top-2
# from the best 2 groups only, gates times 2.5 (routed_scaling_factor).
# usage: ep_sigmoid_checkpoint.sh PARALLM   (the MPI environment comes from ctest)
set -euo pipefail
source "$(dirname "$0")/ep_script_setup.sh" "$1"
cat > run.toml <<'TOML'
[model]
arch = "llama"
vocab_size = 320
hidden_size = 48
num_layers = 2
num_heads = 4
num_kv_heads = 2
intermediate_size = 64
num_experts = 8
moe_router_topk = 2
moe_layer_freq = "[1]*2"
moe_router_score_function = "sigmoid"
moe_router_enable_expert_bias = true
moe_router_bias_update_rate = 0.01
moe_router_num_groups = 4
moe_router_group_topk = 2
moe_router_topk_scaling_factor = 2.5
moe_aux_loss_coeff = 0.01
moe_z_loss_coeff = 0.001
[data]
train = "d_train.bin"
[training]
steps = 6
micro_batch_size = 2
global_batch_size = 8
seq_len = 32
TOML
"$exe" train --config run.toml --metrics ref.jsonl > /dev/null
$mpi -np 2 "$exe" train --config run.toml --dp 2 --ep 2 --save ck --exit-interval 4 > /dev/null
$mpi -np 2 "$exe" train --config run.toml --dp 2 --ep 2 --load ck --metrics ep2.jsonl > /dev/null
"$exe" train --config run.toml --dp 1 --load ck/step-0000004 --metrics one.jsonl > /dev/null
# The mutation: the same checkpoint without its bias.
cp -r ck/step-0000004 nobias
python3 - <<'PY'
import hashlib, json, os
p = "nobias/train_state.json"
j = json.load(open(p))
assert any(b != 0 for b in j["moe_expert_bias"]), "the saved bias never moved"
del j["moe_expert_bias"]
json.dump(j, open(p, "w"), indent=2)
m = json.load(open("nobias/manifest.json"))  # re-sign the edited file
for e in m["files"]:
    if e["file"] == "train_state.json":
        e["bytes"] = os.path.getsize(p)
        e["sha256"] = hashlib.sha256(open(p, "rb").read()).hexdigest()
json.dump(m, open("nobias/manifest.json", "w"), indent=2)
PY
"$exe" train --config run.toml --dp 1 --load nobias --metrics nobias.jsonl > /dev/null
python3 - <<'PY'
import json, sys
def read(p):
    return {r["step"]: r for r in map(json.loads, open(p))}
ref = read("ref.jsonl")
bad = 0
for name in ("ep2.jsonl", "one.jsonl"):
    got = read(name)
    assert sorted(got) == [4, 5], (name, sorted(got))
    for s in (4, 5):
        for k in ("loss", "grad_norm"):
            a, b = got[s][k], ref[s][k]
            ok = abs(a - b) <= 1e-5 * abs(b)
            bad += not ok
            print(f"{name} step {s + 1} {k}: {a:.8f} vs {b:.8f} {'ok' if ok else 'DIFFERENT'}")
        assert got[s]["moe"]["expert_load"] == ref[s]["moe"]["expert_load"], name
nb = read("nobias.jsonl")
moved = any(nb[s]["moe"]["expert_load"] != ref[s]["moe"]["expert_load"] for s in (4, 5))
print("without the saved bias the loads", "differ (ok)" if moved else "are THE SAME")
sys.exit(1 if bad or not moved else 0)
PY
