#!/usr/bin/python3
"""Runs llama.cpp's own convert_hf_to_gguf.py (from the tree bench/llamacpp/build.sh
unpacked) on a Hugging Face directory; arguments pass through unchanged.

The one addition: the converter names a BPE tokenizer's pre-tokenizer by hashing how
it encodes a fixed string and refuses hashes it does not list (real released models
only). The bench tokenizers (bench/llamacpp/make_gguf.py) are GPT-2's ByteLevel
pre-tokenizer with their own vocabularies, so an unlisted hash is named "gpt-2" here,
which is what convert_hf_to_gguf_update.py would register for them. Also, Debian 12's
torch 1.13 predates the float8 dtypes the converter names in its dtype tables; the bench
models hold none, so stand-ins that nothing equals fill those names. Nothing else of the
converter changes. Needs PYTHONPATH = llama.cpp's root and gguf-py (make_gguf.py).
"""
import runpy
import sys

import torch

for _name in ("float8_e4m3fn", "float8_e5m2"):
    if not hasattr(torch, _name):
        setattr(torch, _name, object())

from conversion import base  # llama.cpp's converter package (on PYTHONPATH)

_listed = base.TextModel.get_vocab_base_pre


def _vocab_base_pre(self, tokenizer):
    try:
        return _listed(self, tokenizer)
    except NotImplementedError:
        pre = tokenizer.backend_tokenizer.pre_tokenizer
        # Only a plain GPT-2 pre-tokenizer may be named gpt-2; anything else stays refused.
        if type(pre).__name__ != "ByteLevel":
            raise
        return "gpt-2"


base.TextModel.get_vocab_base_pre = _vocab_base_pre
sys.argv = [sys.argv[1]] + sys.argv[2:]  # argv[1]: path of convert_hf_to_gguf.py
runpy.run_path(sys.argv[0], run_name="__main__")
