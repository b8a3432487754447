#!/bin/bash
# Context parallelism through the CLI, with packed documents on
# (--reset-attention-mask --reset-position-ids --eod-mask-loss --eod-token
# 256, the EOD `parallm tokenize` puts between files): a tiny LLaMA trained
# 6 steps on one process is the reference (its first loss differs from the
# run without the flags).
#  1. the same run under --cp 2 (ring) has every step's loss and grad norm
#     within 1e-5 relative, and its --save-hf directory holds the same
#     files, the same config.json and tensors of the same names, shapes and
#     dtypes within 1e-5 relative of the one-process export;
#  2. saved after step 4 under --cp 2 and resumed on one process, steps 5
#     and 6 match the uninterrupted run (1e-5 relative).
# usage: cp_checkpoint.sh PARALLM   (the MPI environment comes from ctest)
set -euo pipefail
exe=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
i=0
for r in 0 1 2 3; do  # one document per file, 12 to about 130 bytes
  for f in "$here"/*.cpp; do
    # tail reads all head writes: no SIGPIPE under pipefail
    head -c $((97 * r + 12 + 5 * i)) "$f" | tail -c $((12 + 5 * i)) > "doc$(printf %02d $i).txt"
    i=$((i + 1))
  done
done
"$exe" tokenize doc*.txt --out d > /dev/null
cat > run.toml <<'TOML'
[model]
arch = "llama"
vocab_size = 320
hidden_size = 48
num_layers = 2
num_heads = 4
num_kv_heads = 2
intermediate_size = 64
[data]
train = "d_train.bin"
[training]
steps = 6
micro_batch_size = 2
global_batch_size = 4
seq_len = 64
TOML
mpi="mpirun --oversubscribe --bind-to none --mca btl self,vader"
packed="--reset-attention-mask --reset-position-ids --eod-mask-loss --eod-token 256"
"$exe" train --config run.toml $packed --metrics ref.jsonl --save-hf hf1 > /dev/null
$mpi -np 2 "$exe" train --config run.toml $packed --cp 2 --metrics cp2.jsonl --save-hf hf2 > /dev/null
$mpi -np 2 "$exe" train --config run.toml $packed --cp 2 --save ck --exit-interval 4 > /dev/null
"$exe" train --config run.toml $packed --cp 1 --load ck --metrics one.jsonl > /dev/null
"$exe" train --config run.toml --steps 1 --metrics plain.jsonl > /dev/null
/usr/bin/python3 - <<'PY'
import json, os, sys
import numpy as np
from safetensors.numpy import load_file
def read(p):
    return {r["step"]: r for r in map(json.loads, open(p))}
ref = read("ref.jsonl")
bad = 0
def close(what, a, b):
    global bad
    ok = abs(a - b) <= 1e-5 * abs(b)
    bad += not ok
    print(f"{what}: {a:.8f} vs {b:.8f} {'ok' if ok else 'DIFFERENT'}")
for name, steps in (("cp2.jsonl", range(6)), ("one.jsonl", (4, 5))):
    got = read(name)
    assert sorted(got) == list(steps), (name, sorted(got))
    for s in steps:
        for k in ("loss", "grad_norm"):
            close(f"{name} step {s + 1} {k}", got[s][k], ref[s][k])
files = sorted(os.listdir("hf1"))
assert files == sorted(os.listdir("hf2")), (files, os.listdir("hf2"))
assert open("hf1/config.json").read() == open("hf2/config.json").read()
for f in files:
    if not f.endswith(".safetensors"):
        continue
    a, b = load_file(f"hf1/{f}"), load_file(f"hf2/{f}")
    assert sorted(a) == sorted(b), f
    for k in a:
        assert a[k].shape == b[k].shape and a[k].dtype == b[k].dtype, k
        x, y = a[k].astype(np.float64), b[k].astype(np.float64)
        err = np.max(np.abs(x - y)) / max(np.max(np.abs(x)), 1e-30)
        bad += not err <= 1e-5
        if err > 1e-5:
            print(f"{f} {k}: max relative difference {err:.3g} DIFFERENT")
    print(f"{f}: {len(a)} tensors checked")
# The flags act: the unpacked run's first loss differs.
plain = read("plain.jsonl")[0]["loss"]
print(f"first loss packed {ref[0]['loss']:.6f}, unpacked {plain:.6f}")
bad += abs(plain - ref[0]["loss"]) <= 1e-4
sys.exit(1 if bad else 0)
PY
