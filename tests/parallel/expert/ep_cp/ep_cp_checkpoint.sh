#!/bin/bash
# MoE under context parallelism through the CLI (docs/moe.md): a tiny LLaMA
# MoE (gshard router, capacity 1, aux and z losses) trained 6 steps on one
# process is the reference; the same run under cp 2 x dp 2 x ep 2 (ring;
# the ep groups are cp pairs) must give its losses and grad norms within
# 1e-5 relative and the same per-expert loads and dropped fractions. It saves
# after step 4; resumed under cp 2 x ep 2 with Ulysses (a2a) and on one
# process, steps 5 and 6 must match the reference the same way; and 4 steps
# under cp 2 x pp 2 (1F1B) match its first 4.
# usage: ep_cp_checkpoint.sh PARALLM   (the MPI environment comes from ctest)
set -euo pipefail
source "$(dirname "$0")/../ep_script_setup.sh" "$1"
cp "$tiny_moe_toml" run.toml
"$exe" train --config run.toml --metrics ref.jsonl > /dev/null
$mpi -np 4 "$exe" train --config run.toml --cp 2 --dp 2 --ep 2 --save ck --exit-interval 4 \
  --metrics cp.jsonl > /dev/null
$mpi -np 2 "$exe" train --config run.toml --dp 1 --cp 2 --cp-comm a2a --ep 2 --load ck \
  --metrics cp_a2a.jsonl > /dev/null
$mpi -np 4 "$exe" train --config run.toml --cp 2 --pp 2 --steps 4 --metrics cp_pp.jsonl > /dev/null
"$exe" train --config run.toml --dp 1 --cp 1 --ep 1 --load ck/step-0000004 \
  --metrics one.jsonl > /dev/null
PYTHONPATH="$ep_tests_dir" python3 - <<'PY'
import sys
from moe_steps import compare, read
ref = read("ref.jsonl")
bad = 0
for name, steps in (("cp.jsonl", [0, 1, 2, 3]), ("cp_a2a.jsonl", [4, 5]), ("one.jsonl", [4, 5]),
                    ("cp_pp.jsonl", [0, 1, 2, 3])):
    bad += compare(name, ref, steps)
assert any(r["moe"]["dropped_fraction"] > 0 for r in ref.values()), "capacity 1 drops nothing"
sys.exit(1 if bad else 0)
PY
