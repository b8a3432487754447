#!/usr/bin/env bash
# parallm vs PyTorch (Debian's python3-torch) training a GPT-2 124M-shaped
# model, same shapes, same thread count, measured in the same run.
# Usage: bench/gpt2_vs_torch.sh [THREADS] [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
threads="${1:-2}"
steps="${2:-3}"
./scripts/build.sh >/dev/null
export OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads"
ours=$(./build/bench/gpt2_train_bench --steps "$steps")
peer=$(/usr/bin/python3 bench/torch_gpt2_peer.py --threads "$threads" --steps "$steps")
echo "parallm: $ours"
echo "pytorch: $peer"
/usr/bin/python3 - "$ours" "$peer" <<'PY'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"tokens/s parallm {a['tokens_per_s']:.1f}  pytorch {b['tokens_per_s']:.1f}  "
      f"ratio {a['tokens_per_s'] / b['tokens_per_s']:.2f}x  "
      f"MFU parallm {100 * a['mfu']:.1f}% (GEMM peak {a['gemm_peak_gflops']:.1f} GFLOP/s)  "
      f"pytorch {100 * a['mfu'] * b['tokens_per_s'] / a['tokens_per_s']:.1f}%")
PY
