"""Hugging Face model families (docs/model_families.md): a tiny model of one
family made by transformers is read by `parallm eval` with the same loss
(1e-5 relative); trained 3 steps by parallm in one process, at tp 2 and at
pp 2 with the same losses (1e-5), which lower parallm's eval loss of the same
windows (the step losses are of different batches and need not fall);
written back from the tp 2 run and loaded
by transformers with no missing, unexpected or mismatched keys, with the same
loss as parallm's eval of that directory.

usage: hf_family_check.py FAMILY PARALLM WORKDIR
FAMILY: llama3 | llama_linear | llama_dynamic | qwen2 | mistral | gemma
"""
import json
import os
import sys

import torch
import transformers

from eval_windows import B, T, close, hf_loss, parallm_eval, random_shard, run

SMALL = dict(vocab_size=300, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
             rms_norm_eps=1e-5, initializer_range=0.2, tie_word_embeddings=False)

# Each family: its transformers classes and a config that exercises what is
# particular to it at T tokens.
FAMILIES = {
    # llama3: original context 16, so at head_dim 8 one frequency is smoothed
    # and the lower ones divided by the factor.
    "llama3": ("LlamaConfig", "LlamaForCausalLM",
               dict(rope_theta=10000.0, rope_scaling={
                   "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": 16})),
    "llama_linear": ("LlamaConfig", "LlamaForCausalLM",
                     dict(rope_scaling={"type": "linear", "factor": 4.0})),
    # dynamic NTK stretches only beyond max_position_embeddings: 8 < T.
    "llama_dynamic": ("LlamaConfig", "LlamaForCausalLM",
                      dict(max_position_embeddings=8,
                           rope_scaling={"rope_type": "dynamic", "factor": 2.0})),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict()),
    # A window of 5 < T: most queries lose their early keys.
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(sliding_window=5)),
    "gemma": ("GemmaConfig", "GemmaForCausalLM",
              dict(head_dim=16, hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True)),
}

MPI = ["mpirun", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader"]


def parallm_train(exe, src, shard, work, name, layout):
    """3 steps from the transformers model; returns the per-step losses."""
    metrics = os.path.join(work, name + ".jsonl")
    ranks = 2 if layout else 1
    cmd = [exe, "train", "--init-from", src, "--data", shard, "--steps", "3", "--lr", "1e-2",
           "--warmup", "0", "--seq-len", str(T), "--micro-batch-size", str(B),
           "--global-batch-size", str(B), "--threads", "1", "--peak-tflops", "1",
           "--metrics", metrics, "--save-hf", os.path.join(work, name)] + layout
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1")
    run((MPI + ["-np", str(ranks)] if ranks > 1 else []) + cmd, env)
    with open(metrics) as f:
        return [json.loads(line)["loss"] for line in f if '"loss"' in line]


def main():
    family, exe, work = sys.argv[1], sys.argv[2], sys.argv[3]
    cfg_name, model_name, extra = FAMILIES[family]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    cfg = getattr(transformers, cfg_name)(**dict(SMALL, **extra))
    cls = getattr(transformers, model_name)
    model = cls(cfg).float().eval()
    with torch.no_grad():  # biases and Gemma's norm offsets away from their zero init
        for name, p in model.named_parameters():
            if name.endswith("bias") or (family == "gemma" and "norm" in name):
                p.normal_(0.0, 0.2)
    src = os.path.join(work, "hf")
    model.save_pretrained(src, safe_serialization=True)
    tokens, shard = random_shard(work, cfg.vocab_size)
    ref = hf_loss(model, tokens)
    before = parallm_eval(exe, src, shard)
    ok = close(before, ref, f"{family}: eval of the transformers model")

    one = parallm_train(exe, src, shard, work, "one", [])
    for name, layout in (("tp2", ["--tp", "2"]), ("pp2", ["--pp", "2"])):
        got = parallm_train(exe, src, shard, work, name, layout)
        same = len(got) == len(one) == 3 and all(
            abs(a - b) <= 1e-5 * abs(b) for a, b in zip(got, one))
        print(f"{family}: {name} losses {got} vs one process {one}: {'ok' if same else 'DIFFERENT'}")
        ok = ok and same
    out = os.path.join(work, "tp2")
    # The per-step losses are of different batches (a window model's can
    # rise over 3 steps while it learns), so training must lower the eval
    # loss over the same tokens instead.
    after = parallm_eval(exe, out, shard)
    print(f"{family}: training lowered the eval loss: {before:.6f} -> {after:.6f}")
    ok = ok and after < before

    back, info = cls.from_pretrained(out, output_loading_info=True)
    missing = info["missing_keys"] + info["unexpected_keys"] + info["mismatched_keys"]
    print(f"{family}: written back from tp 2: missing/unexpected/mismatched keys:", missing or "none")
    ok = ok and not missing
    ok = close(after, hf_loss(back.float().eval(), tokens),
               f"{family}: parallm's tp 2 output, eval vs transformers") and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
