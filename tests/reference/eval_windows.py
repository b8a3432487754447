"""What the Hugging Face interop checks (hf_family_check.py, mixtral_eval.py,
lora_peft.py) share: the llm.c shard of random tokens they write, the windows `parallm eval`
reads from it (window w: tokens [wT, wT + T) predicting the next ones, B x
BATCHES of them), transformers' mean token loss over those windows, parallm
eval's loss, and the 1e-5 relative comparison of the two."""
import json
import os
import struct
import subprocess
import sys

import torch

T, B, BATCHES = 16, 2, 3


def write_shard(path, tokens):
    header = [20240520, 1, len(tokens)] + [0] * 253
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *header))
        f.write(struct.pack("<%dH" % len(tokens), *tokens))


def random_shard(work, vocab_size):
    """Random tokens enough for every window, written as WORK/tokens.bin;
    returns (tokens, the shard's path)."""
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, vocab_size, (B * BATCHES * T + 64,), generator=g).tolist()
    shard = os.path.join(work, "tokens.bin")
    write_shard(shard, tokens)
    return tokens, shard


def windows(tokens):
    for w in range(B * BATCHES):
        x = torch.tensor(tokens[w * T:w * T + T]).unsqueeze(0)
        y = torch.tensor(tokens[w * T + 1:w * T + T + 1]).unsqueeze(0)
        yield x, y


def hf_loss(model, tokens):
    """Mean token loss of a transformers model over the windows."""
    total, count = 0.0, 0
    with torch.no_grad():
        for x, y in windows(tokens):
            logits = model(input_ids=x).logits.double()
            total += torch.nn.functional.cross_entropy(logits[0], y[0], reduction="sum").item()
            count += T
    return total / count


def run(cmd, env=None):
    """stdout of cmd; on failure its output's tail, then exit 1."""
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        print("FAILED:", " ".join(cmd))
        print(p.stdout[-3000:], p.stderr[-3000:])
        sys.exit(1)
    return p.stdout


def parallm_eval(exe, model_dir, shard, *extra):
    out = run([exe, "eval", "--model", model_dir, "--data", shard, "--seq-len", str(T),
               "--micro-batch-size", str(B), "--batches", str(BATCHES), *extra])
    return json.loads(out.strip().splitlines()[-1])["loss"]


def close(a, b, what, peer="transformers"):
    ok = abs(a - b) <= 1e-5 * abs(b)
    print(f"{what}: parallm {a:.8f} {peer} {b:.8f} {'ok' if ok else 'DIFFERENT'}")
    return ok
