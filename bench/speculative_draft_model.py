"""A draft model for bench/speculative_bench.sh: the target GPT-2 directory cut
to its first N transformer blocks, keeping its embeddings, final norm and
(tied) head, so the draft shares the target's vocabulary and most of its
function on text the embeddings dominate (a random-weight model's output).
No training: the draft is what self-speculative "layer skipping" drafts are
(Zhang et al. 2023, Draft & Verify), the cheapest draft one can have.
Usage: speculative_draft_model.py TARGET_DIR OUT_DIR N_LAYERS (skipped when OUT_DIR exists).
"""
import json
import os
import shutil
import sys

from safetensors.torch import load_file, save_file

src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if os.path.isdir(dst):
    sys.exit(0)
cfg = json.load(open(os.path.join(src, "config.json")))
cfg["n_layer"] = n
weights = load_file(os.path.join(src, "model.safetensors"))
keep = {}
for name, t in weights.items():
    parts = name.split(".")
    if "h" in parts:  # transformer.h.<i>.*
        i = int(parts[parts.index("h") + 1])
        if i >= n:
            continue
    keep[name] = t.contiguous()
tmp = dst + ".tmp"
shutil.rmtree(tmp, ignore_errors=True)
os.makedirs(tmp)
json.dump(cfg, open(os.path.join(tmp, "config.json"), "w"), indent=2)
save_file(keep, os.path.join(tmp, "model.safetensors"), metadata={"format": "pt"})
for f in os.listdir(src):
    if f.startswith("tokenizer") or f in ("generation_config.json", "vocab.json", "merges.txt"):
        shutil.copy(os.path.join(src, f), tmp)
os.replace(tmp, dst)
