#!/usr/bin/env bash
# Context-parallel benchmark (docs/context_parallel.md): one GPT-2 shaped
# model (hidden 256, 8 heads, 2 layers, byte vocabulary) at long sequences,
# cp 1 (one rank) against cp 2 and cp 4 with ring, a2a (Ulysses) and
# a2a+ring (U 2, cp 4 only). Per run, from parallm's metrics file: median
# step ms and tokens/s over the timed steps, cp bytes per step, and the
# time blocked in cp communication (cp_comm_ms: what attention did not hide).
# For the ring runs also the share of the ring's transfer time hidden behind
# attention. Exposed transfer is rank 0's blocked time less two parts that
# are not bytes moving: waiting before the peer had posted (cp_peer_wait_ms,
# told apart by the post time each ring message carries) and waiting in
# sends (cp_send_wait_ms: Open MPI's shared-memory transport has the
# receiver copy a large message, so a sender waits for the receiver to get
# to it). The share is 1 - exposed / the time the step's ring bytes take
# alone (bench/ring_shift_bench.cpp at the same hop size and ranks).
# "strict" also counts the time inside polls during attention (cp_poll_ms)
# as not hidden: without a progress thread the copies happen inside them.
# On a 2-core machine cp 4 is oversubscribed (4 ranks on 2 cores), so its
# tokens/s measure the code path, not scaling.
# Usage: bench/cp_bench.sh [BUILD_DIR] [STEPS] [SEQ_LENS]
#        (default build, 6 steps with the first untimed, "4096 8192": the
#        hidden share moves with the ranks' skew from step to step, and a
#        median of 5 steps holds still where one of 2 does not)
#        CP_BENCH_RANKS="2" runs cp 1 and cp 2 only (no oversubscribed cp 4).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
steps="${2:-6}"
seqs="${3:-4096 8192}"
cps="${CP_BENCH_RANKS:-2 4}"
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
  hop() {  # ranks, ring members: one ring hop's bytes alone (keys + values + stamp)
    local bytes=$(( 2 * T / $2 * 256 * 4 + 8 ))
    "${mpi[@]}" -np "$1" "$build/bench/ring_shift_bench" "$bytes" 20 >"$work/hop_${T}_$1.json"
  }
  for cp in $cps; do hop "$cp" "$cp"; done
  run "seq${T}_cp1" 1
  for cp in $cps; do
    run "seq${T}_cp${cp}_ring" $cp --cp $cp --cp-comm ring
    run "seq${T}_cp${cp}_a2a" $cp --cp $cp --cp-comm a2a
  done
  if [[ " $cps " == *" 4 "* ]]; then
    run "seq${T}_cp4_hybrid" 4 --cp 4 --cp-comm a2a+ring --ulysses-degree 2
  fi
done
python3 - "$work" "${names[@]}" <<'PY'
import json, re, statistics, sys
work, names = sys.argv[1], sys.argv[2:]
print(f"{'run':24} {'step ms':>9} {'tokens/s':>9} {'cp MB/step':>10} {'cp blocked ms':>13} "
      f"{'blocked %':>9} {'peer wait':>9} {'send wait':>9} {'poll ms':>8} {'alone ms':>8} "
      f"{'hidden':>7} {'strict':>7}")
for n in names:
    rows = [json.loads(l) for l in open(f"{work}/{n}.jsonl")][1:]  # first step untimed
    med = lambda f: statistics.median(f(r) for r in rows)
    ms = med(lambda r: r["step_ms"])
    tps = med(lambda r: r["tokens_per_s"])
    cpb = med(lambda r: r["comm_bytes_by_group"].get("cp", 0))
    cpms = med(lambda r: r.get("cp_comm_ms", 0.0))
    line = f"{n:24} {ms:9.1f} {tps:9.1f} {cpb / 1e6:10.2f} {cpms:13.1f} {100 * cpms / ms:8.1f}%"
    m = re.fullmatch(r"seq(\d+)_cp(\d+)_ring", n)
    if m:  # every ring message is sent once and received once: half the bytes are sends
        hop = json.load(open(f"{work}/hop_{m[1]}_{m[2]}.json"))
        alone = cpb / 2 / (hop["gb_per_s"] * 1e9) * 1e3
        wait = med(lambda r: r["cp_peer_wait_ms"])
        send = med(lambda r: r["cp_send_wait_ms"])
        poll = med(lambda r: r["cp_poll_ms"])
        exposed = med(lambda r: r["cp_comm_ms"] - r["cp_peer_wait_ms"] - r["cp_send_wait_ms"])
        hidden = 1 - exposed / alone
        strict = 1 - (exposed + poll) / alone
        line += (f" {wait:9.1f} {send:9.1f} {poll:8.1f} {alone:8.1f} {100 * hidden:6.1f}%"
                 f" {100 * strict:6.1f}%")
    print(line)
PY
