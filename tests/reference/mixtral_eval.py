"""Mixtral interop (docs/moe.md): a tiny MixtralForCausalLM made by
transformers is read by `parallm eval` with the same loss (1e-5 relative),
then written back by parallm (`parallm train --init-from ... --lr 1e-30
--save-hf`) and loaded by transformers with no missing or unexpected keys and
the same loss again; and the same round trip under expert parallelism
(mpirun -np 2, --ep 2).

usage: mixtral_eval.py PARALLM WORKDIR
"""
import os
import subprocess
import sys

import torch
from transformers import MixtralConfig, MixtralForCausalLM

from eval_windows import B, T, close, hf_loss, parallm_eval, random_shard



def main():
    exe, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    cfg = MixtralConfig(vocab_size=300, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                        num_local_experts=4, num_experts_per_tok=2, rms_norm_eps=1e-5,
                        rope_theta=10000.0, initializer_range=0.2, tie_word_embeddings=False,
                        sliding_window=None)
    model = MixtralForCausalLM(cfg).float().eval()
    src = os.path.join(work, "hf")
    model.save_pretrained(src, safe_serialization=True)
    tokens, shard = random_shard(work, cfg.vocab_size)
    ref = hf_loss(model, tokens)
    ok = close(parallm_eval(exe, src, shard), ref, "eval of the transformers model")

    # Back out through parallm: one step at lr 1e-30 leaves every fp32 weight as it was.
    out = os.path.join(work, "out")
    subprocess.run([exe, "train", "--init-from", src, "--data", shard, "--steps", "1",
                    "--lr", "1e-30", "--seq-len", str(T), "--micro-batch-size", str(B),
                    "--global-batch-size", str(B), "--save-hf", out],
                   check=True, capture_output=True, text=True)
    back, info = MixtralForCausalLM.from_pretrained(out, output_loading_info=True)
    missing = info["missing_keys"] + info["unexpected_keys"] + info["mismatched_keys"]
    print("written back: missing/unexpected/mismatched keys:", missing or "none")
    ok = ok and not missing
    ok = close(hf_loss(back.float().eval(), tokens), ref, "transformers on parallm's output") and ok

    # The same through expert parallelism: 2 ranks, ep 2, each loading and
    # writing back its half of the experts.
    out2 = os.path.join(work, "out_ep2")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1")
    subprocess.run(["mpirun", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader",
                    "-np", "2", exe, "train", "--init-from", src, "--data", shard, "--steps", "1",
                    "--lr", "1e-30", "--seq-len", str(T), "--micro-batch-size", str(B),
                    "--global-batch-size", str(2 * B), "--dp", "2", "--ep", "2", "--save-hf", out2],
                   check=True, capture_output=True, text=True, env=env)
    ok = close(parallm_eval(exe, out2, shard), ref, "eval of the ep 2 round trip") and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
