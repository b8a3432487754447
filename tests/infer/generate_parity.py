#!/usr/bin/env python3
"""Greedy generation parity with transformers' generate.

transformers builds a GPT-2, a LLaMA with grouped-query attention
(n_kv_heads < n_heads; llama_dynamic: with dynamic NTK rope scaling, run
past its max_position_embeddings), a Gemma (one key/value head, head_dim
apart from hidden / heads, tied head), a Qwen2 (the LLaMA shape with q/k/v
biases) or a Mistral (the LLaMA with a sliding window of WINDOW tokens,
shorter than every prompt plus its 64 new tokens, so the KV-cached decode
must drop the oldest keys) with random weights, saves it with save_pretrained
(safetensors), and generates 64 tokens greedily from prompts of different
lengths, each prompt alone. parallm then generates from the same directory,
all prompts in one batch (generate_dump, in the LAYOUT given: tp1, tp2 or
pp2, under the launcher), and must give the same tokens, and at every step logits equal to
transformers' within a stated tolerance. The weights are drawn with a
large standard deviation so the logits are well separated; the smallest
top-1/top-2 margin of every prompt is printed, and a margin not well above
the largest logit difference seen fails the test as a tie rather than
passing by luck.
Finally `parallm generate --json` (the CLI) must give the same tokens.

Usage: generate_parity.py CASE WORK_DIR GENERATE_DUMP PARALLM LAYOUT [LAUNCHER...]
  CASE: gpt2 | llama | llama_dynamic | gemma | qwen2 | mistral; LAYOUT: tp1 | tp2 | pp2;
  LAUNCHER: e.g. mpirun ... -np 2
"""
import json
import os
import shutil
import subprocess
import sys

import torch
from transformers import (GemmaConfig, GemmaForCausalLM, GPT2Config, GPT2LMHeadModel, LlamaConfig,
                          LlamaForCausalLM, MistralConfig, MistralForCausalLM, Qwen2Config,
                          Qwen2ForCausalLM)

MAX_NEW = 64
# Mistral's window: less than the shortest prompt plus MAX_NEW and than the
# longest prompt (prefill is windowed too).
WINDOW = 16
PROMPTS = ["Hello", "The quick brown fox jumps over", "a", "Once upon a time, in a land far away, "]
# |parallm - transformers| <= ATOL + RTOL * max|logit| per step: fp32 sums in
# another order (blocked GEMMs, flash-style attention) differ by rounding.
RTOL, ATOL = 2e-5, 2e-5
# A top-1/top-2 margin below this many times the largest logit difference
# seen (at least 1e-6) counts as a tie: rounding could then pick the other id.
TIE_FACTOR = 10


def build(case, path):
    torch.manual_seed(1234)
    if case == "gpt2":
        cfg = GPT2Config(vocab_size=300, n_positions=128, n_embd=64, n_layer=2, n_head=4,
                         resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                         bos_token_id=None, eos_token_id=None)
        model = GPT2LMHeadModel(cfg)
    elif case == "gemma":
        cfg = GemmaConfig(vocab_size=300, hidden_size=64, intermediate_size=160,
                          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
                          head_dim=32, max_position_embeddings=128, rms_norm_eps=1e-6,
                          rope_theta=10000.0, hidden_activation="gelu_pytorch_tanh",
                          tie_word_embeddings=True, bos_token_id=None, eos_token_id=None,
                          pad_token_id=None)
        model = GemmaForCausalLM(cfg)
    else:  # qwen2: LLaMA's shape; its q/k/v biases are drawn with the weights below
        config, causal_lm = {"qwen2": (Qwen2Config, Qwen2ForCausalLM),
                             "mistral": (MistralConfig, MistralForCausalLM)}.get(
                                 case, (LlamaConfig, LlamaForCausalLM))
        # llama_dynamic: dynamic NTK rope scaling with a 32-position context,
        # so every prompt generates past it (the frequencies stretch each step).
        extra = {"llama_dynamic": {"max_position_embeddings": 32,
                                   "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}},
                 "mistral": {"sliding_window": WINDOW}}.get(case, {})
        cfg = config(**dict(dict(vocab_size=300, hidden_size=64, intermediate_size=160,
                                 num_hidden_layers=2, num_attention_heads=8,
                                 num_key_value_heads=2, max_position_embeddings=128,
                                 rms_norm_eps=1e-5, rope_theta=10000.0,
                                 tie_word_embeddings=False, bos_token_id=None,
                                 eos_token_id=None, pad_token_id=None), **extra))
        model = causal_lm(cfg)
    # Large random weights (norm gains around 1; Gemma's gain is 1 + weight): logits far apart.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "ln" in name or "norm" in name:
                one = 1.0 if name.endswith("weight") and case != "gemma" else 0.0
                p.copy_(one + 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.3 * torch.randn_like(p))
    model.eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    model.save_pretrained(path, safe_serialization=True)
    return model


def reset_rotary(model):
    """transformers' dynamic NTK rotary embedding keeps the table it grew to
    until a sequence is shorter than max_position_embeddings again, so a
    prompt would depend on the one before; parallm's frequencies depend on
    the sequence alone. Each prompt starts from the unscaled table."""
    for m in model.modules():
        if hasattr(m, "original_inv_freq"):
            m.inv_freq = m.original_inv_freq
            m.max_seq_len_cached = m.original_max_seq_len


def reference(model, prompts):
    out = []
    for ids in prompts:
        reset_rotary(model)
        g = model.generate(torch.tensor([ids]), max_new_tokens=MAX_NEW, do_sample=False,
                           num_beams=1, output_logits=True, return_dict_in_generate=True,
                           pad_token_id=0, eos_token_id=None)
        tokens = g.sequences[0, len(ids):].tolist()
        logits = torch.stack([l[0] for l in g.logits]).double()
        out.append((tokens, logits))
    return out


def main():
    case, work, dump, parallm, layout = sys.argv[1:6]
    launcher = sys.argv[6:]
    tp, pp = {"tp1": (1, 1), "tp2": (2, 1), "pp2": (1, 2)}[layout]
    grid = ["--tp", str(tp), "--pp", str(pp)]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    model_dir = os.path.join(work, "model")
    model = build(case, model_dir)
    prompts = [list(p.encode()) for p in PROMPTS]
    ref = reference(model, prompts)

    req = os.path.join(work, "prompts.json")
    with open(req, "w") as f:
        json.dump({"prompts": prompts, "max_new_tokens": MAX_NEW}, f)
    got_path = os.path.join(work, "parallm.json")
    subprocess.run(launcher + [dump, model_dir, req, got_path, str(tp), str(pp)], check=True)
    with open(got_path) as f:
        got = json.load(f)

    ok = True
    for i, (tokens, logits) in enumerate(ref):
        mine = got["tokens"][i]
        mlog = torch.tensor(got["logits"][i], dtype=torch.float64)
        steps = min(len(mine), len(tokens))
        tol = ATOL + RTOL * logits[:steps].abs().max().item()
        err = (mlog[:steps] - logits[:steps]).abs().max().item()
        top2 = logits.topk(2, dim=-1).values
        margin = (top2[:, 0] - top2[:, 1]).min().item()
        same = sum(1 for a, b in zip(mine, tokens) if a == b)
        matched = mine == tokens
        print(f"{case} {layout} prompt {i} ({len(prompts[i])} tokens): {same}/{len(tokens)} tokens "
              f"match{'' if matched else ' MISMATCH'}; max |logit diff| {err:.2e} "
              f"(tol {tol:.2e}); min top-1/top-2 margin {margin:.3f}")
        if not matched:
            first = next((j for j, (a, b) in enumerate(zip(mine, tokens)) if a != b), steps)
            print(f"  first difference at step {first}: parallm {mine[first:first + 5]} "
                  f"transformers {tokens[first:first + 5]}")
            ok = False
        if err > tol:
            print("  logits differ beyond the tolerance")
            ok = False
        if margin < TIE_FACTOR * max(err, 1e-6):
            print(f"  near tie: margin {margin:.2e} < {TIE_FACTOR} x the logit difference; the "
                  "comparison of tokens is not meaningful")
            ok = False

    # The CLI on the same directory (byte prompts are the byte tokenizer's ids).
    cmd = launcher + [parallm, "generate", "--model", model_dir, "--temperature", "0",
                      "--max-new-tokens", str(MAX_NEW), "--json"] + grid
    for p in PROMPTS:
        cmd += ["--prompt", p]
    res = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
    lines = [json.loads(l) for l in res.stdout.splitlines() if l.startswith("{")]
    for i, (tokens, _) in enumerate(ref):
        if lines[i]["tokens"] != tokens:
            print(f"CLI prompt {i}: tokens differ from transformers")
            ok = False
    print(f"CLI: {len(lines)} prompts, tokens {'match' if ok else 'checked'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
