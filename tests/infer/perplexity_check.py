"""`parallm perplexity` against transformers: llama-perplexity's score (the
text encoded whole, one trailing newline dropped, ctx-token chunks, each
chunk's first token the BOS when the tokenizer adds one, the NLL of the
second half of each chunk) computed in Python on the same HF model.
  gpt2: the tiny GPT-2 (no BOS added) from its HF directory and from the same
        weights written to GGUF f32 (tests/io/gguf/gguf_from_hf.py), --chunks
        cutting the text short;
  llama: a tiny LLaMA whose tokenizer adds a BOS (TemplateProcessing), every
        whole chunk of the text.
Usage: perplexity_check.py WORK_DIR PARALLM"""
import json
import math
import os
import shutil
import sys

import torch

here = os.path.dirname(__file__)
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "io", "gguf"))
from gguf_from_hf import write_gguf  # noqa: E402
from script_checks import check, failed, run  # noqa: E402,F401
from tiny_text_model import build  # noqa: E402

work, parallm = sys.argv[1:3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)

WORDS = "hello world, the quick brown fox jumps over the lazy dog. 你好世界".split()



def text_file():
    g = torch.Generator().manual_seed(3)
    idx = torch.randint(len(WORDS), (240,), generator=g).tolist()
    lines = [" ".join(WORDS[i] for i in idx[k:k + 12]) for k in range(0, len(idx), 12)]
    path = os.path.join(work, "text.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")  # the trailing newline is dropped by both
    return path


def reference(model, fast, path, ctx, chunks=None):
    text = open(path, encoding="utf-8").read()
    if text.endswith("\n"):
        text = text[:-1]
    ids = fast(text).input_ids  # add_special_tokens: the BOS when the tokenizer adds one
    adds_bos = fast.bos_token_id is not None and ids[0] == fast.bos_token_id and \
        fast("a").input_ids[0] == fast.bos_token_id
    n = len(ids) // ctx if chunks is None else min(chunks, len(ids) // ctx)
    first = ctx // 2
    nll = []
    with torch.no_grad():
        for c in range(n):
            chunk = ids[c * ctx:(c + 1) * ctx]
            inp = list(chunk)
            if adds_bos:
                inp[0] = fast.bos_token_id
            logp = torch.log_softmax(model(torch.tensor([inp])).logits[0].double(), -1)
            nll += [-logp[t, chunk[t + 1]].item() for t in range(first, ctx - 1)]
    mean = sum(nll) / len(nll)
    var = sum(v * v for v in nll) / len(nll) - mean * mean
    ppl = math.exp(mean)
    return {"ppl": ppl, "ppl_err": ppl * math.sqrt(var / (len(nll) - 1)), "chunks": n,
            "tokens": len(nll), "text_tokens": len(ids), "bos": adds_bos}


def run_parallm(model, path, ctx, chunks=None):
    cmd = [parallm, "perplexity", "--model", model, "--text", path, "--ctx", str(ctx),
           "--threads", "1", "--batch-tokens", "64"]
    if chunks is not None:
        cmd += ["--chunks", str(chunks)]
    lines = run(cmd).splitlines()
    check(lines[0].startswith("Final estimate: PPL = "), f"llama.cpp's line: {lines[0]}")
    return json.loads(lines[1])


def compare(name, got, ref):
    print(name, "parallm", got, "\n", name, "transformers", ref)
    for k in ("chunks", "tokens", "text_tokens"):
        check(got[k] == ref[k], f"{name}: {k} {got[k]} == {ref[k]}")
    check((got["bos"] is not None) == ref["bos"], f"{name}: BOS first {got['bos']} ({ref['bos']})")
    check(abs(got["ppl"] / ref["ppl"] - 1) < 1e-4, f"{name}: ppl {got['ppl']} ~ {ref['ppl']}")
    check(abs(got["ppl_err"] / ref["ppl_err"] - 1) < 1e-3,
          f"{name}: ppl_err {got['ppl_err']} ~ {ref['ppl_err']}")


def gpt2(path):
    d = os.path.join(work, "gpt2")
    model, fast = build(d)
    ref = reference(model, fast, path, 32, chunks=3)
    check(ref["text_tokens"] // 32 > 3, "gpt2: --chunks cuts the text short")
    compare("gpt2", run_parallm(d, path, 32, chunks=3), ref)
    g = os.path.join(work, "gpt2.gguf")
    write_gguf(g, model, "gpt2", gpt2_tokenizer=json.load(open(os.path.join(d, "tokenizer.json"))),
               eos_id=0)
    compare("gpt2.gguf", run_parallm(g, path, 32, chunks=3), ref)


def llama(path):
    from tokenizers import processors
    from transformers import LlamaConfig, LlamaForCausalLM
    d = os.path.join(work, "llama")
    _, fast = build(os.path.join(work, "llama_tok"))
    t = fast.backend_tokenizer
    t.post_processor = processors.TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", 0)])
    fast.save_pretrained(d)
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(hidden_size=64, intermediate_size=128,
                                         num_hidden_layers=2, num_attention_heads=4,
                                         num_key_value_heads=2, vocab_size=len(fast),
                                         max_position_embeddings=128, tie_word_embeddings=False,
                                         bos_token_id=0, eos_token_id=0))
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.1)
    model.eval().save_pretrained(d, safe_serialization=True)
    ref = reference(model, fast, path, 24)
    check(ref["bos"], "llama: the tokenizer adds a BOS")
    compare("llama", run_parallm(d, path, 24), ref)


path = text_file()
gpt2(path)
llama(path)
if failed:
    print(f"{len(failed)} checks failed")
    sys.exit(1)
print("all checks passed")
