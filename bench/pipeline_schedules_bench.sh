#!/usr/bin/env bash
# Pipeline schedules measured side by side: 1F1B, ZB-H1 and DualPipeV train
# configs/llama-pipeline.toml (LLaMA, 8 layers, hidden 192, m = 8 micro-batches
# of 2 x 64 tokens) at pp 2 and pp 4, one thread per rank, 12 steps each.
# Prints per schedule the median over steps 3-12 of the wall-clock bubble,
# the replayed bubble (the executed lists replayed with the median measured
# F/B/W durations, docs/pipeline.md), the step time, and the peak activation
# bytes each stage's allocator saw; the simulated bubble at F = 1, B = 2
# beside them. Writes the last step's timeline of each run to
# runs/pipeline-bench/<schedule>-pp<N>.svg.
# Usage: bench/pipeline_schedules_bench.sh [steps]
set -euo pipefail
cd "$(dirname "$0")/.."
steps="${1:-12}"
./scripts/build.sh >/dev/null
if [ ! -f runs/data/fortunes_train.bin ]; then
  mapfile -t texts < <(find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' | sort)
  ./build/parallm tokenize "${texts[@]}" --out runs/data/fortunes --val-fraction 0.02
fi
out=runs/pipeline-bench
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc --all) cores, load $(cut -d' ' -f1 /proc/loadavg)"
for pp in 2 4; do
  for s in 1f1b zb dualpipev; do
    mpirun --oversubscribe --bind-to none --mca btl self,vader -np "$pp" ./build/parallm train \
      --config configs/llama-pipeline.toml --pp "$pp" --schedule "$s" --steps "$steps" \
      --threads 1 --peak-tflops 1 --log-interval 1 --metrics "$out/$s-pp$pp.jsonl" \
      --timeline "$out/$s-pp$pp.svg" >"$out/$s-pp$pp.log" 2>&1 ||
      { tail -n 20 "$out/$s-pp$pp.log"; exit 1; }
    sim=$(./build/parallm schedule --pp "$pp" -m 8 --schedule "$s" | grep -o 'simulated bubble [0-9.]*' | cut -d' ' -f3)
    /usr/bin/python3 - "$out/$s-pp$pp.jsonl" "$s" "$pp" "$sim" <<'PY'
import json, statistics as st, sys
recs = [json.loads(l) for l in open(sys.argv[1])][2:]
p = [r["pipeline"] for r in recs]
wall = st.median(x["bubble_fraction"] for x in p)
rep = st.median(x["bubble_fraction_replayed"] for x in p)
ms = st.median(r["step_ms"] if "step_ms" in r else r["time_ms"] for r in recs)
peaks = [max(x["peak_activation_bytes"][k] for x in p) / 2**20 for k in range(int(sys.argv[3]))]
print(f"{sys.argv[2]:>10} pp {sys.argv[3]}: bubble wall {wall:.3f}, replayed {rep:.3f}, "
      f"simulated {float(sys.argv[4]):.3f}; step {ms:.1f} ms; peak activations per stage MiB "
      + " ".join(f"{v:.1f}" for v in peaks))
PY
  done
done
