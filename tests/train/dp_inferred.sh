#!/usr/bin/env bash
# dp is inferred from the world when no --dp is given, as Megatron and
# torchtitan infer it (ParallelismConfig::infer_dp): `mpirun -np 4 parallm
# train --tp 2` runs dp 2 and `mpirun -np 2 ... --ep 2` (MoE) runs dp 2, each
# with the losses and gradient norms of the same run given `--dp 2`, bit for
# bit; a world the other sizes do not divide still fails, naming the sizes.
# Usage: dp_inferred.sh PARALLM
set -u
bin="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# fail, expect_error, tiny_corpus
. "$(dirname "$0")/../common/cli_checks.sh"
tiny_corpus "$bin" "$work"
mpi=(mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1)
run=("$bin" train --data "$work/data_train.bin" --steps 3 --micro-batch-size 2
     --global-batch-size 4 --seq-len 32 --lr 3e-3 --warmup 2 --threads 1)

same_as_dp2() {  # name ranks flags...: inferred dp against --dp 2
  local name=$1 np=$2
  shift 2
  "${mpi[@]}" -np "$np" "${run[@]}" "$@" --metrics "$work/$name.inferred.jsonl" \
    >"$work/$name.inferred.log" 2>&1 || { tail -n 20 "$work/$name.inferred.log"; fail "$name: inferred dp"; }
  "${mpi[@]}" -np "$np" "${run[@]}" "$@" --dp 2 --metrics "$work/$name.given.jsonl" \
    >"$work/$name.given.log" 2>&1 || { tail -n 20 "$work/$name.given.log"; fail "$name: --dp 2"; }
  /usr/bin/python3 - "$work/$name.inferred.jsonl" "$work/$name.given.jsonl" "$name" <<'PY' || exit 1
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
name = sys.argv[3]
assert len(a) == len(b) == 3, f"{name}: {len(a)} and {len(b)} steps"
for x, y in zip(a, b):
    for k in ("loss", "grad_norm"):
        assert x[k] == y[k], f"{name}: step {x['step']} {k}: inferred {x[k]}, --dp 2 {y[k]}"
print(f"{name}: dp inferred = --dp 2, bit for bit")
PY
}

same_as_dp2 tp2 4 --model gpt2-tiny --tp 2
same_as_dp2 ep2 2 --model llama-tiny --num-experts 4 --moe-router-topk 2 --ep 2
expect_error "world size (3) is not equal to dp (1) x tp (2)" "${mpi[@]}" -np 3 "${run[@]}" --model gpt2-tiny --tp 2
echo "PASS"
