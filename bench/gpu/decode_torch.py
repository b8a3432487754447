#!/usr/bin/env python3
"""The PyTorch peers of bench/infer_bench.cpp --device cuda: the same GPT-2 shapes
(transformers' GPT2LMHeadModel, 124M, vocabulary 50257, random weights, bf16,
SDPA attention) generating greedily with its KV cache: B rows of a P-token
prompt, N new tokens. Three ways, one JSON line each:
  hf_generate          model.generate(), the dynamic cache (what users run)
  torch_loop           a bare loop of forward calls with past_key_values and a
                       device argmax, no host sync per step (eager's best)
  hf_generate_compiled generate() with the static cache and torch.compile
                       (mode reduce-overhead: CUDA graphs), where this
                       transformers supports it; else a line with the error
Prefill is timed as generate(max_new_tokens=1); decode as the rest.

  python3 bench/gpu/decode_torch.py [--batch B] [--prompt P] [--new N] [--repeats R]
"""
import argparse
import json
import statistics
import time

import torch


def timed(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t0, out


def measure(name, a, prefill, full):
    """prefill(): the prompt and one token; full(): the prompt and N tokens."""
    for _ in range(2):  # warm-up (and, compiled, the graphs' capture)
        full()
    pre, dec = [], []
    for _ in range(a.repeats):
        tp, _ = timed(prefill)
        tf, _ = timed(full)
        pre.append(tp)
        dec.append(max(tf - tp, 1e-9))
    p, d = statistics.median(pre), statistics.median(dec)
    steps = a.new - 1
    return {"bench": "decode", "impl": name, "device": torch.cuda.get_device_name(),
            "model": "gpt2-124m", "precision": "bf16", "batch": a.batch, "prompt": a.prompt,
            "new": a.new, "repeats": a.repeats, "torch": torch.__version__,
            "prefill_tokens_per_s": round(a.batch * a.prompt / p),
            "decode_tokens_per_s": round(a.batch * steps / d),
            "ms_per_decode_step": round(1e3 * d / steps, 3)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    cfg = GPT2Config(attn_implementation="sdpa")
    model = GPT2LMHeadModel(cfg).to("cuda", torch.bfloat16).eval()
    ids = torch.randint(0, cfg.vocab_size, (a.batch, a.prompt), device="cuda")
    mask = torch.ones_like(ids)

    def gen(n, **kw):
        return lambda: model.generate(ids, attention_mask=mask, max_new_tokens=n,
                                      min_new_tokens=n, do_sample=False, pad_token_id=0, **kw)

    def loop(n):
        def run():
            out = model(ids, use_cache=True)
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            past = out.past_key_values
            for _ in range(n - 1):
                out = model(nxt, past_key_values=past, use_cache=True)
                past = out.past_key_values
                nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            return nxt
        return run

    with torch.inference_mode():
        print(json.dumps(measure("hf_generate", a, gen(1), gen(a.new)) |
                         {"transformers": transformers.__version__}), flush=True)
        print(json.dumps(measure("torch_loop", a, loop(1), loop(a.new))), flush=True)
        try:
            model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
            static = {"cache_implementation": "static"}
            print(json.dumps(measure("hf_generate_compiled", a, gen(1, **static),
                                     gen(a.new, **static))), flush=True)
        except Exception as e:  # an older transformers without GPT-2 static caches
            print(json.dumps({"bench": "decode", "impl": "hf_generate_compiled",
                              "error": f"{type(e).__name__}: {str(e)[:300]}"}), flush=True)


if __name__ == "__main__":
    main()
