#!/usr/bin/env bash
# Optimizer step time, parallm vs PyTorch on the same shapes in the same run,
# one thread each (OMP_NUM_THREADS=1, torch.set_num_threads(1)).
# Usage: bench/optimizer_bench.sh [BUILD_DIR] [HIDDEN LAYERS VOCAB STEPS]
set -eu
build="${1:-build}"
shape="${2:-256} ${3:-4} ${4:-8192} ${5:-7}"
here="$(cd "$(dirname "$0")" && pwd)"
ours=$(OMP_NUM_THREADS=1 "$build/bench/optimizer_bench" $shape)
peer=$(OMP_NUM_THREADS=1 /usr/bin/python3 "$here/optimizer_torch_peer.py" $shape)
/usr/bin/python3 - "$ours" "$peer" <<'PY'
import json, sys
ours = {r["optimizer"]: r for r in map(json.loads, sys.argv[1].splitlines())}
peer = {r["optimizer"]: r for r in map(json.loads, sys.argv[2].splitlines())}
print(f"{'optimizer':<10} {'params':>10} {'parallm ms':>11} {'torch ms':>9} {'torch/parallm':>14}")
for k, o in ours.items():
    p = peer[k]
    print(f"{k:<10} {o['params']:>10} {o['ms']:>11.2f} {p['ms']:>9.2f} {p['ms'] / o['ms']:>14.2f}")
PY
