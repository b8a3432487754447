#!/usr/bin/env python3
"""An EOS id past the vocabulary is a warning, not an error, as in transformers.

A tiny GPT-2 saved by transformers with GPT2Config's default
eos_token_id / bos_token_id 50256 on a vocabulary of 600 (config.json and
generation_config.json both say 50256), once without a tokenizer (parallm's
byte tokenizer; the id reaches it through config.json) and once with a
byte-level BPE tokenizer.json that names no EOS token of its own (the id
also reaches it through generation_config.json, which stopped `parallm
generate` with an error before). Each time `parallm generate` must generate,
print one warning line naming the id and the vocabulary size, run its
MAX_NEW tokens (finish "length": no stop token is left), and give
transformers' greedy tokens.

Usage: eos_outside_vocab_check.py WORK_DIR PARALLM
"""
import json
import os
import shutil
import subprocess
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

MAX_NEW = 24
PROMPT = "Hello there"
WARNING = "warning: EOS id 50256 is outside the vocabulary (600 ids); generation will not stop at it"


def build_tokenizer(model_dir):
    """A byte-level BPE tokenizer.json (about 400 ids) with no EOS token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(["hello there, the quick brown fox jumps over the lazy dog."] * 50,
                            trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok)
    fast.save_pretrained(model_dir)
    return fast


def check(model, model_dir, ids, parallm, what):
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), max_new_tokens=MAX_NEW, do_sample=False,
                             pad_token_id=0)
    want = out[0, len(ids):].tolist()
    res = subprocess.run([parallm, "generate", "--model", model_dir, "--prompt", PROMPT,
                          "--temperature", "0", "--max-new-tokens", str(MAX_NEW), "--json",
                          "--threads", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    if res.returncode != 0:
        print(f"{what}: parallm generate failed ({res.returncode}):\n{res.stderr}")
        return False
    ok = True
    warnings = [l for l in res.stderr.splitlines() if "warning" in l]
    if warnings != [WARNING]:
        print(f"{what}: expected exactly the warning line\n  {WARNING}\ngot:\n{res.stderr}")
        ok = False
    got = json.loads(res.stdout.splitlines()[0])
    if got["finish_reason"] != "length" or len(got["tokens"]) != MAX_NEW:
        print(f"{what}: expected {MAX_NEW} tokens ending by length, got {got}")
        ok = False
    if got["tokens"] != want:
        print(f"{what}: tokens differ:\n  parallm      {got['tokens']}\n  transformers {want}")
        ok = False
    print(f"{what}: {len(got['tokens'])} tokens, "
          f"{'same as' if got['tokens'] == want else 'NOT'} transformers'; warning: {warnings}")
    return ok


def main():
    work, parallm = sys.argv[1:3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    model_dir = os.path.join(work, "model")
    torch.manual_seed(7)
    cfg = GPT2Config(vocab_size=600, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    assert cfg.eos_token_id == 50256, cfg.eos_token_id  # GPT2Config's default
    model = GPT2LMHeadModel(cfg)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.3)  # well-separated logits: no near-ties
    model.eval()
    model.save_pretrained(model_dir, safe_serialization=True)
    for name in ("config.json", "generation_config.json"):
        with open(os.path.join(model_dir, name)) as f:
            assert json.load(f)["eos_token_id"] == 50256, name

    # No tokenizer.json: parallm's byte tokenizer, whose ids are the bytes.
    ok = check(model, model_dir, list(PROMPT.encode()), parallm, "byte tokenizer")
    tok = build_tokenizer(model_dir)
    ids = tok(PROMPT)["input_ids"]
    ok = check(model, model_dir, ids, parallm, "tokenizer.json") and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
