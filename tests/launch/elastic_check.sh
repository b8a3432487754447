#!/usr/bin/env bash
# Elastic restarts on one machine (docs/resilience.md): `parallm launch
# --hosts a:2,b:2 --dp-per-host 1` runs 4 ranks as tp 2 x dp 2; rank 2 (on
# "host" b) is killed, b then fails its probe, and the supervisor restarts on
# a alone: 2 ranks, dp 1, the same global batch with twice the gradient
# accumulation, resharding the dp 2 checkpoint. The run finishes every step.
# (The namespace harness, docs/multihost.md, makes the hosts real.)
# Usage: elastic_check.sh PARALLM
set -u
bin="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# fail, tiny_corpus, tiny_model_table
. "$(dirname "$0")/../common/cli_checks.sh"
export OMP_NUM_THREADS=1

tiny_corpus "$bin" "$work" 400
{ tiny_model_table 32; cat <<TOML; } > "$work/run.toml"
[data]
train = "data_train.bin"
[training]
steps = 12
micro_batch_size = 2
global_batch_size = 8
seq_len = 16
[logging]
peak_tflops = 1
log_interval = 1
TOML
touch "$work/lost-b"  # probed only before a restart: b answers until the first failure
"$bin" launch --max-restarts 2 --backoff 0.1 --hosts a:2,b:2 --dp-per-host 1 \
  --host-probe "test ! -e $work/lost-{host}" --events "$work/events.jsonl" -- \
  mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1 -np '{np}' \
  "$bin" train --config "$work/run.toml" --threads 1 --tp 2 --dp '{dp}' --save "$work/ck" \
  --save-interval 3 --resume --comm-timeout 10 --plant-failures kill@7:2 2>"$work/launch.log" \
  || { cat "$work/launch.log"; fail "the elastic run did not finish"; }
grep "^parallm launch:" "$work/launch.log"
grep -q "host b (ranks 2-3 of the last attempt) is lost: the probe exited with 1" "$work/launch.log" || fail "b was not dropped"
grep -q "elastic: going on with 1 of 2 hosts (a:2), dp 2 -> 1" "$work/launch.log" || fail "no elastic line"
grep -q "steps of 8 x 16 tokens (micro-batch 2, accumulation 2)" "$work/launch.log" \
  || fail "the restart did not keep the global batch with accumulation 2"
grep -q "resumed from .*step-0000006 (step 6, saved under dp 2 x tp 2" "$work/launch.log" \
  || fail "the dp 1 restart did not reshard the dp 2 checkpoint"
grep -q "step    12/12" "$work/launch.log" || fail "the run did not reach step 12"
echo "ok: a host lost for good, the job finished on the other at dp 1 with the same global batch"
