#!/usr/bin/env bash
# MoE benchmark (docs/moe.md, "Performance"). Three parts:
# 1. step time of an 8-expert top-2 dropless LLaMA model against the dense
#    LLaMA model with the same active parameters per token: the experts have
#    I_e features and the dense MLP I_d = 2 I_e, so a token's two experts do
#    the dense MLP's FLOPs (the MoE model adds only its router, C x 8 per
#    layer); attention, embeddings and head are identical. One process, 2
#    threads (THREADS); the two models alternate, `reps` runs each, and the medians
#    over all timed steps are reported with MFU (model FLOPs, active
#    parameters, against the GEMM peak parallm measured or cached; the
#    model GFLOP/s beside it compare with the GEMM rates of part 2, measured
#    minutes apart under the same load);
# 2. bench/moe_gemm_bench: the grouped expert GEMM against a loop of
#    per-expert GEMMs and one dense GEMM over the same rows, forward and
#    backward, even and skewed loads, at 1 and 2 threads (variants
#    interleaved, medians);
# 3. the MoE model at ep 2 (np 2) and ep 4 (np 4), one thread a rank, and at
#    dp 2 without ep: ep_comm_ms is the time blocked in the ep all-to-alls
#    (blocking calls, so all of it is exposed: transfer plus waiting for the
#    slowest rank). np 4 on a 2-core machine is oversubscribed.
# The machine is shared: the load average is printed beside the numbers.
# Usage: bench/moe_bench.sh [BUILD_DIR] [STEPS] [REPS] [THREADS]   (default build, 5
#        steps of which the first 2 are untimed, 2 runs of each model, part 1 at 2 threads)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
steps="${2:-5}"
reps="${3:-2}"
threads1="${4:-2}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source bench/cp_corpus.sh  # $work/data_train.bin, $mpi
C=256 I_E=512 E=8 K=2 T=256 B=4
cat > "$work/base.toml" <<TOML
[model]
preset = "llama-tiny"
hidden_size = $C
num_layers = 4
num_heads = 4
max_positions = $T
[data]
train = "$work/data_train.bin"
[training]
steps = $steps
micro_batch_size = $B
global_batch_size = $B
seq_len = $T
seed = 1234
[optimizer]
lr = 1e-3
[logging]
log_interval = 1000
TOML
sed "s/^max_positions.*/&\nintermediate_size = $((K * I_E))/" "$work/base.toml" > "$work/dense.toml"
sed "s/^max_positions.*/&\nintermediate_size = $I_E\nnum_experts = $E\nmoe_router_topk = $K/" \
  "$work/base.toml" > "$work/moe.toml"
loads=()
load() { loads+=("$(cut -d' ' -f1 /proc/loadavg)"); }
run() {  # name, model, ranks, threads, flags...
  local name="$1" model="$2" np="$3" threads="$4"; shift 4
  load
  OMP_NUM_THREADS=$threads "${mpi[@]}" -np "$np" "$build/parallm" train --config "$work/$model.toml" \
    --threads "$threads" --metrics "$work/$name.jsonl" "$@" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log" >&2; exit 1; }
}
for r in $(seq 1 "$reps"); do
  run "dense_$r" dense 1 "$threads1"
  run "moe_$r" moe 1 "$threads1"
done
run ep2 moe 2 1 --dp 2 --ep 2 --micro-batch-size $((B / 2))
run dp2 moe 2 1 --dp 2 --micro-batch-size $((B / 2))
run ep4 moe 4 1 --dp 4 --ep 4 --micro-batch-size $((B / 4))
gemm_out="$work/gemm.txt"
: > "$gemm_out"
for threads in 1 2; do
  load
  OMP_NUM_THREADS=$threads "$build/bench/moe_gemm_bench" $((B * T)) $C $I_E $threads 5 >> "$gemm_out"
  OMP_NUM_THREADS=$threads "$build/bench/moe_gemm_bench" 1024 512 1024 $threads 5 >> "$gemm_out"
done
load
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
/usr/bin/python3 - "$work" "$reps" "$cpu" "${loads[*]}" "$threads1" <<'PY'
import json, statistics, sys
work, reps, cpu, loads, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split(), sys.argv[5]

def timed(names):  # every step after the first 2 (start-up, first touches)
    return [json.loads(l) for n in names for l in list(open(f"{work}/{n}.jsonl"))[2:]]

def med(rows, key):
    return statistics.median(r.get(key, 0.0) for r in rows)

print(f"CPU: {cpu}; load average (1 min) before each run: {' '.join(loads)}")
print(f"\n1 process, {threads} threads, 4 x 256 tokens a step (medians over "
      f"{reps} alternating runs of each model)")
print(f"{'model':28} {'step ms':>8} {'tokens/s':>9} {'GFLOP/s':>8} {'MFU':>6} {'peak GFLOP/s':>12}")
rows = {}
for name, label in (("dense", "dense, I 1024"), ("moe", "MoE 8 x I 512, top-2")):
    rs = timed([f"{name}_{r}" for r in range(1, reps + 1)])
    rows[name] = med(rs, "step_ms")
    print(f"{label:28} {rows[name]:8.1f} {med(rs, 'tokens_per_s'):9.0f} "
          f"{1e3 * med(rs, 'tflops'):8.1f} {med(rs, 'mfu'):6.1%} {1e3 * med(rs, 'peak_tflops'):12.1f}")
print(f"MoE / dense step time: {rows['moe'] / rows['dense']:.2f}x (goal: <= 1.3x)")
print("\nMoE model over ranks, 1 thread a rank, same global batch "
      "(ep_comm_ms: blocked in the ep all-to-alls)")
print(f"{'layout':28} {'step ms':>8} {'ep MB':>7} {'ep ms':>8} {'share':>6} {'dp ms':>7}")
for name, label in (("dp2", "dp 2, no ep (np 2)"), ("ep2", "ep 2 (np 2)"),
                    ("ep4", "ep 4 (np 4, oversubscribed)")):
    rs = timed([name])
    step, ep = med(rs, "step_ms"), med(rs, "ep_comm_ms")
    mb = statistics.median(r["comm_bytes_by_group"].get("ep", 0) for r in rs) / 1e6
    print(f"{label:28} {step:8.1f} {mb:7.2f} {ep:8.1f} {ep / step:6.1%} "
          f"{med(rs, 'exposed_comm_ms'):7.1f}")
print("\nmoe_gemm_bench (8 experts, top-2 rows; medians of 5 interleaved repetitions):")
print(open(f"{work}/gemm.txt").read(), end="")
PY
