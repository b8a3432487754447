#!/usr/bin/python3
"""transformers peer for parallm's single-stream inference benchmark (bench/infer_bench.sh).

`make DIR`: builds the two benchmark models with transformers' own random
initialisation and saves each as a Hugging Face directory (safetensors) under
DIR/gpt2 and DIR/llama, once (an existing directory is kept):
  gpt2:  GPT-2 124M (12 layers, hidden 768, 12 heads, vocab 50257, context 1024)
  llama: LLaMA shape of similar size (12 layers, hidden 768, 12 heads, 4 key/value
         heads (GQA), intermediate 2048, vocab 32000, RoPE, untied head)
`run DIR --dtype fp32|bf16`: times `model.generate` (greedy, batch 1, no EOS, so
every run makes exactly --new tokens) on the prompt that bench/infer_bench.cpp
uses too (prompt_ids below), after an untimed short warmup; prints one JSON line with
the median over --reps runs. Prefill ends at the first call of a logits
processor (the prompt's forward is done, its first token not yet chosen), so
decode tokens/s = (new - 1) / (end - that moment), as parallm counts them.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time


def prompt_ids(n, vocab):
    """The benchmark prompt: a fixed spread of ids, computed alike in bench/infer_bench.cpp."""
    return [(1000 + 7919 * i) % vocab for i in range(n)]


def set_blas_threads(n):
    """Pins OpenBLAS's own pool (Debian torch's GEMMs) to n threads; torch.set_num_threads
    covers its OpenMP pool only."""
    try:
        ctypes.CDLL("libopenblas.so.0").openblas_set_num_threads(ctypes.c_int(n))
    except (OSError, AttributeError):
        pass


def make(root):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
    builders = {
        "gpt2": lambda: GPT2LMHeadModel(GPT2Config(
            vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)),
        "llama": lambda: LlamaForCausalLM(LlamaConfig(
            vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
            num_attention_heads=12, num_key_value_heads=4, max_position_embeddings=1024,
            rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False)),
    }
    for name, build in builders.items():
        path = os.path.join(root, name)
        if os.path.exists(os.path.join(path, "model.safetensors")):
            continue
        torch.manual_seed(1234)
        model = build().eval()
        tmp = path + ".tmp"
        model.save_pretrained(tmp, safe_serialization=True)
        os.replace(tmp, path)  # whole directories only: an interrupted save is redone
        print(f"made {path}", file=sys.stderr)


def run(args):
    # Debian torch's GEMMs are OpenBLAS's, which obeys OPENBLAS_CORETYPE (set to
    # Haswell in some environments: half speed on AVX-512 CPUs); as
    # bench/torch_gpt2_peer.py, let OpenBLAS detect the CPU. Before torch loads.
    os.environ.pop("OPENBLAS_CORETYPE", None)
    import torch
    from transformers import AutoModelForCausalLM, LogitsProcessor, LogitsProcessorList
    torch.set_num_threads(args.threads)
    set_blas_threads(args.threads)
    model = AutoModelForCausalLM.from_pretrained(args.dir, torch_dtype=torch.float32).eval()
    if args.dtype == "bf16":
        model = model.to(torch.bfloat16)
    vocab = model.config.vocab_size
    ids = torch.tensor([prompt_ids(args.prompt_len, vocab)])

    class Mark(LogitsProcessor):
        """Records when the first token's logits exist: the prefill is over."""
        first = None

        def __call__(self, input_ids, scores):
            if self.first is None:
                self.first = time.perf_counter()
            return scores

    def once(new):
        mark = Mark()
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model.generate(ids, attention_mask=torch.ones_like(ids),
                                 max_new_tokens=new, min_new_tokens=new,
                                 do_sample=False, num_beams=1, eos_token_id=None, pad_token_id=0,
                                 logits_processor=LogitsProcessorList([mark]))
        t1 = time.perf_counter()
        assert out.shape[1] == args.prompt_len + new, out.shape
        return args.prompt_len / (mark.first - t0), (new - 1) / (t1 - mark.first)

    once(min(args.new, 4))  # warmup (short): allocator, OpenMP pool, first-call dispatch
    runs = [once(args.new) for _ in range(args.reps)]
    print(json.dumps({
        "impl": "transformers", "model": os.path.basename(os.path.normpath(args.dir)),
        "dtype": args.dtype, "threads": args.threads, "prompt": args.prompt_len, "new": args.new,
        "prefill_tok_s": statistics.median(r[0] for r in runs),
        "decode_tok_s": statistics.median(r[1] for r in runs),
        "decode_tok_s_all": [round(r[1], 2) for r in runs],
        "torch": torch.__version__}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("root")
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--prompt-len", type=int, default=128)
    r.add_argument("--new", type=int, default=128)
    r.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    if args.cmd == "make":
        make(args.root)
    else:
        run(args)


if __name__ == "__main__":
    main()
