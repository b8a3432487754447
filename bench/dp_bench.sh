#!/usr/bin/env bash
# Data-parallel benchmark at dp 2, one thread per rank (2 ranks x 1 thread on
# this 2-core machine): DDP with and without overlap, ZeRO-1/2/3 and the
# parameter server, then PyTorch DDP (gloo, Debian's torch) on the same model
# shape, batch and accumulation, side by side. Per layout: median step ms over
# the timed steps, exposed comm ms, comm bytes per step and rank 0's peak
# bytes by tag, from parallm's metrics file.
# Usage: bench/dp_bench.sh [BUILD_DIR] [STEPS]   (default build, 8 steps, first 2 untimed)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
steps="${2:-8}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data="$PWD/runs/data/fortunes_train.bin"
[ -f "$data" ] || { echo "missing $data: run scripts/demo.sh once to tokenize the corpus" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
cat > "$work/run.toml" <<TOML
[model]
preset = "gpt2-tiny"
[data]
train = "$data"
[training]
steps = $steps
micro_batch_size = 4
global_batch_size = 16
seq_len = 128
clip_grad = 1.0
seed = 1234
[optimizer]
lr = 1e-3
[lr_schedule]
warmup = 2
[logging]
log_interval = 1000
TOML
mpi=(mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1 -np 2)
run() {  # name, flags...
  local name="$1"; shift
  "${mpi[@]}" "$build/parallm" train --config "$work/run.toml" --dp 2 --threads 1 \
    --bucket-mb 1 --metrics "$work/$name.jsonl" "$@" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log" >&2; exit 1; }
}
run ddp
run ddp_no_overlap --no-overlap
run zero1 --zero 1
run zero2 --zero 2
run zero3 --zero 3
run ps --dp-mode ps
torch=$(/usr/bin/python3 bench/dp_torch_ddp.py --dp 2 --threads 1 --warmup 2 --steps $((steps - 2)))
/usr/bin/python3 - "$work" "$torch" <<'PY'
import json, statistics, sys
work, torch = sys.argv[1], json.loads(sys.argv[2])
mb = lambda b: b / 2**20
print(f"{'layout':16} {'step ms':>8} {'exposed':>8} {'comm MB':>8} {'param':>7} {'grad':>7} "
      f"{'optim':>7} {'comm':>7} {'total':>7}  (rank 0 peak MiB)   vs torch DDP")
for name in ["ddp", "ddp_no_overlap", "zero1", "zero2", "zero3", "ps"]:
    recs = [json.loads(l) for l in open(f"{work}/{name}.jsonl")][2:]
    step = statistics.median(r["step_ms"] for r in recs)
    exp = statistics.median(r["exposed_comm_ms"] for r in recs)
    cb = statistics.median(r["comm_bytes"] for r in recs)
    m = recs[-1]["memory"]
    peak = lambda t: mb(m[t]["peak"])
    print(f"{name:16} {step:8.1f} {exp:8.1f} {mb(cb):8.2f} {peak('parameter'):7.2f} "
          f"{peak('gradient'):7.2f} {peak('optimizer'):7.2f} {peak('communication'):7.2f} "
          f"{mb(m['total']['peak']):7.2f}   {torch['step_ms_median'] / step:.2f}x")
print(f"{'torch DDP gloo':16} {torch['step_ms_median']:8.1f}  (torch {torch['torch']}, "
      f"peak RSS per rank {[round(mb(b)) for b in torch['peak_rss_bytes']]} MiB)")
PY
