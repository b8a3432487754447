#!/usr/bin/python3
"""Bytes one decoded token reads from a GGUF file's weights (issue 44's bytes/token).
Every tensor is read once per token except the embedding tables, of which decode reads
one row: token_embd (unless the file has no output.weight, when it is the tied output
matrix and read whole) and GPT-2's position_embd. The KV cache is not counted (a few
MB at these contexts). Prints one JSON line per file. Needs the gguf package
(gguf==0.19.0, the version llama.cpp's gguf-py carries; pip-installed or on PYTHONPATH).
Usage: gguf_bytes.py FILE.gguf...
"""
import json
import os
import sys

from gguf import GGUFReader

ROW_ONLY = ("token_embd.weight", "position_embd.weight")


def weight_bytes_per_token(path):
    tensors = {t.name: int(t.n_bytes) for t in GGUFReader(path).tensors}
    read = sum(b for n, b in tensors.items() if n not in ROW_ONLY)
    tied = "output.weight" not in tensors
    if tied:
        read += tensors["token_embd.weight"]
    return {"file": os.path.basename(path), "file_bytes": os.path.getsize(path),
            "tensor_bytes": sum(tensors.values()), "bytes_per_token": read,
            "tied_output": tied}


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(json.dumps(weight_bytes_per_token(p)))
