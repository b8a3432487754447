#!/usr/bin/env bash
# Context-parallel benchmark (docs/context_parallel.md): one GPT-2 shaped
# model (hidden 256, 8 heads, 2 layers, byte vocabulary) at long sequences,
# cp 1 (one rank) against cp 2 and cp 4 with ring, a2a (Ulysses) and
# a2a+ring (U 2, cp 4 only). Per run, from parallm's metrics file: median
# step ms and tokens/s over the timed steps, cp bytes per step, and the
# time blocked in cp communication (cp_comm_ms: what attention did not hide).
# On a 2-core machine cp 4 is oversubscribed (4 ranks on 2 cores), so its
# tokens/s measure the code path, not scaling.
# Usage: bench/cp_bench.sh [BUILD_DIR] [STEPS] [SEQ_LENS]
#        (default build, 4 steps with the first untimed, "4096 8192")
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
steps="${2:-4}"
seqs="${3:-4096 8192}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source bench/cp_corpus.sh
names=()
for T in $seqs; do
  cat > "$work/run$T.toml" <<TOML
[model]
preset = "gpt2-tiny"
hidden_size = 256
num_layers = 2
num_heads = 8
max_positions = $T
[data]
train = "$work/data_train.bin"
[training]
steps = $steps
micro_batch_size = 1
global_batch_size = 1
seq_len = $T
seed = 1234
[optimizer]
lr = 1e-3
[logging]
log_interval = 1000
TOML
  run() {  # name, ranks, flags...
    local name="$1" np="$2"; shift 2
    OMP_NUM_THREADS=1 "${mpi[@]}" -np "$np" "$build/parallm" train --config "$work/run$T.toml" \
      --threads 1 --peak-tflops 1 --metrics "$work/$name.jsonl" "$@" >"$work/$name.log" 2>&1 ||
      { cat "$work/$name.log" >&2; exit 1; }
    names+=("$name")
  }
  run "seq${T}_cp1" 1
  for cp in 2 4; do
    run "seq${T}_cp${cp}_ring" $cp --cp $cp --cp-comm ring
    run "seq${T}_cp${cp}_a2a" $cp --cp $cp --cp-comm a2a
  done
  run "seq${T}_cp4_hybrid" 4 --cp 4 --cp-comm a2a+ring --ulysses-degree 2
done
python3 - "$work" "${names[@]}" <<'PY'
import json, statistics, sys
work, names = sys.argv[1], sys.argv[2:]
print(f"{'run':24} {'step ms':>9} {'tokens/s':>9} {'cp MB/step':>10} {'cp blocked ms':>13} {'blocked %':>9}")
for n in names:
    rows = [json.loads(l) for l in open(f"{work}/{n}.jsonl")][1:]  # first step untimed
    ms = statistics.median(r["step_ms"] for r in rows)
    tps = statistics.median(r["tokens_per_s"] for r in rows)
    cpb = statistics.median(r["comm_bytes_by_group"].get("cp", 0) for r in rows) / 1e6
    cpms = statistics.median(r.get("cp_comm_ms", 0.0) for r in rows)
    print(f"{n:24} {ms:9.1f} {tps:9.1f} {cpb:10.2f} {cpms:13.1f} {100 * cpms / ms:8.1f}%")
PY
