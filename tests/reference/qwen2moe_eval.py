"""Qwen2-MoE interop (docs/moe.md): tiny Qwen2MoeForCausalLM models made by
transformers are read by `parallm eval` with the same loss (1e-5 relative),
then written back by parallm (`parallm train --init-from ... --lr 1e-30
--save-hf`) and loaded by transformers with no missing or unexpected keys,
the same layer rule and router, and the same loss again. The cases cover
dense and sparse layers (decoder_sparse_step, mlp_only_layers), experts
narrower than the dense MLP (moe_intermediate_size), both values of
norm_topk_prob and a model without a shared expert; the first case also
makes the round trip under expert parallelism (mpirun -np 2, --ep 2).

usage: qwen2moe_eval.py PARALLM WORKDIR
"""
import os
import subprocess
import sys

import torch
from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM

from eval_windows import B, T, close, hf_loss, parallm_eval, random_shard

# name: (config overrides, also at ep 2)
CASES = {
    # layers 1 and 3 sparse; softmax, top 2, no renormalisation
    "step2": (dict(decoder_sparse_step=2, mlp_only_layers=[], norm_topk_prob=False,
                   num_experts=6, shared_expert_intermediate_size=40), True),
    # layers 0, 1 and 3 sparse; the top 2 renormalised
    "mlp_only": (dict(decoder_sparse_step=1, mlp_only_layers=[2], norm_topk_prob=True,
                      num_experts=4, shared_expert_intermediate_size=32), False),
    # every layer sparse, no shared expert (transformers keeps empty tensors)
    "no_shared": (dict(decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=False,
                       num_experts=4, shared_expert_intermediate_size=0), False),
}
# What the written config.json must say as transformers wrote it.
KEPT = ["decoder_sparse_step", "mlp_only_layers", "norm_topk_prob", "num_experts",
        "num_experts_per_tok", "moe_intermediate_size", "intermediate_size",
        "shared_expert_intermediate_size"]


def make_model(work, overrides):
    torch.manual_seed(0)
    cfg = Qwen2MoeConfig(vocab_size=300, hidden_size=32, intermediate_size=48,
                         moe_intermediate_size=24, num_hidden_layers=4, num_attention_heads=4,
                         num_key_value_heads=2, max_position_embeddings=64, num_experts_per_tok=2,
                         rms_norm_eps=1e-5, rope_theta=10000.0, initializer_range=0.2,
                         tie_word_embeddings=False, use_sliding_window=False, **overrides)
    model = Qwen2MoeForCausalLM(cfg).float().eval()
    with torch.no_grad():  # biases and norms start at 0 and 1: make them count
        for name, p in model.named_parameters():
            if name.endswith(".bias") or "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    src = os.path.join(work, "hf")
    model.save_pretrained(src, safe_serialization=True)
    return cfg, model, src


def train_back(exe, src, shard, out, ranks=1):
    """parallm reads src, takes one step at lr 1e-30 (every fp32 weight stays
    as it was) and writes out."""
    cmd = [exe, "train", "--init-from", src, "--data", shard, "--steps", "1", "--lr", "1e-30",
           "--seq-len", str(T), "--micro-batch-size", str(B), "--global-batch-size",
           str(ranks * B), "--save-hf", out]
    env = None
    if ranks > 1:
        cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader",
               "-np", str(ranks)] + cmd + ["--dp", str(ranks), "--ep", str(ranks)]
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMP_NUM_THREADS="1")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        print("FAILED:", " ".join(cmd))
        print(p.stdout[-3000:], p.stderr[-3000:])
        sys.exit(1)


def check_case(exe, work, name, overrides, ep2):
    work = os.path.join(work, name)
    os.makedirs(work, exist_ok=True)
    cfg, model, src = make_model(work, overrides)
    tokens, shard = random_shard(work, cfg.vocab_size)
    ref = hf_loss(model, tokens)
    ok = close(parallm_eval(exe, src, shard), ref, f"{name}: eval of the transformers model")

    out = os.path.join(work, "out")
    train_back(exe, src, shard, out)
    back, info = Qwen2MoeForCausalLM.from_pretrained(out, output_loading_info=True)
    missing = info["missing_keys"] + info["unexpected_keys"] + info["mismatched_keys"]
    print(f"{name}: written back: missing/unexpected/mismatched keys:", missing or "none")
    ok = ok and not missing
    for key in KEPT:
        if getattr(back.config, key) != getattr(cfg, key):
            print(f"{name}: written back {key} = {getattr(back.config, key)}, "
                  f"transformers wrote {getattr(cfg, key)}")
            ok = False
    ok = close(hf_loss(back.float().eval(), tokens), ref,
               f"{name}: transformers on parallm's output") and ok
    if ep2:  # each of 2 ranks loads and writes back its half of the experts
        out2 = os.path.join(work, "out_ep2")
        train_back(exe, src, shard, out2, ranks=2)
        ok = close(parallm_eval(exe, out2, shard), ref, f"{name}: eval of the ep 2 round trip") and ok
    return ok


def main():
    exe, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    ok = True
    for name, (overrides, ep2) in CASES.items():
        ok = check_case(exe, work, name, overrides, ep2) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
