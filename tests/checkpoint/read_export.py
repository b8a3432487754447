"""Reads HF directories with the `safetensors` package and checks that every
one holds the same tensors (names, shapes, dtypes, values) as the first.
Usage: read_export.py REFERENCE_DIR DIR..."""
import json
import os
import sys

import numpy as np
from safetensors.numpy import load_file


def load_dir(d):
    index = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
        assert len(files) > 1, f"{d}: a sharded export with one file"
    else:
        files = ["model.safetensors"]
    out = {}
    for name in files:
        for k, v in load_file(os.path.join(d, name)).items():
            assert k not in out, f"{d}: {k} twice"
            out[k] = v
    return out


ref = load_dir(sys.argv[1])
with open(os.path.join(sys.argv[1], "config.json")) as f:
    cfg = json.load(f)
emb = ref["model.embed_tokens.weight"]
assert emb.shape == (cfg["vocab_size"], cfg["hidden_size"]), emb.shape
for d in sys.argv[2:]:
    got = load_dir(d)
    assert sorted(got) == sorted(ref), f"{d}: other tensor names"
    for k, v in ref.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape, (d, k)
        assert np.array_equal(got[k], v), f"{d}: {k} differs"
    print(f"ok: {d}: {len(got)} tensors read by safetensors, identical")
