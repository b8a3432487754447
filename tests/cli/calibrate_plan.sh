#!/bin/bash
# `parallm calibrate` (a small grid) writes a profile that `parallm plan`
# reads: the kernels at 1 and all cores' threads, the all-reduce link fitted
# from a 2-rank sweep (one pair, and one per band of message sizes), the
# ranks' arrival jitter at a collective after GEMM work; plan ranks
# llama-tiny's layouts on 2 ranks of this machine (ties by blocking
# exchanges) and writes them as JSON; `bench comm --work-ms` (the jitter's probe)
# runs and refuses a bad value. A profile with measured ops but no core
# count is refused with a message naming the file. An MoE plan given the
# experts' ep load (--moe-load-from a metrics file) prices the wait.
# usage: calibrate_plan.sh PARALLM
set -euo pipefail
exe=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$exe" calibrate --quick --out prof.json > cal.log
cat cal.log
"$exe" plan --model "$root/configs/llama-tiny.toml" --devices 2 --profile prof.json \
  --seq-len 128 --global-batch-size 16 --top 3 --json plan.json > plan.log
cat plan.log
/usr/bin/python3 - <<'PY'
import json, os
p = json.load(open("prof.json"))
cores = os.cpu_count()
threads = sorted({o["threads"] for o in p["ops"]})
assert threads == sorted({1, cores}), (threads, cores)
assert p["cores"] == cores and p["precision"] == "fp32", p
assert p["intra_node"]["bytes_per_s"] > 0 and p["intra_node"]["alpha_s"] >= 0, p["intra_node"]
# The link per message size: 17 sizes (1 KiB-64 MiB, x2) in bands of three
# (the last takes five), ascending, each priced.
bands = p["intra_node"]["bands"]
assert len(bands) == 5, bands
assert [b["max_bytes"] for b in bands] == sorted(b["max_bytes"] for b in bands), bands
assert all(b["bytes_per_s"] > 0 and b["alpha_s"] >= 0 for b in bands), bands
assert bands[-1]["max_bytes"] == 64 * 2**20 / 2, bands[-1]  # per message: bytes / 2 ranks
for o in p["ops"]:
    assert len(o["linear"]["fwd_s"]) == 2 * 2 * 2 and min(o["linear"]["fwd_s"]) > 0
plan = json.load(open("plan.json"))
best = plan["best"]
assert 1 <= len(best) <= 3 and plan["fit"] >= len(best), plan
assert all(b["step_s"] > 0 and b["compute_s"] > 0 for b in best), best
# Fastest first, except that the layouts predicted within the tie
# tolerance (2%) of the fastest lead by their blocking exchanges per step.
tied = plan["tied"]
assert 1 <= tied and all(b["step_s"] <= min(x["step_s"] for x in best) * 1.02 for b in best[:tied])
lead = best[:tied]
assert [b["syncs"] for b in lead] == sorted(b["syncs"] for b in lead), lead
assert [b["step_s"] for b in best[tied:]] == sorted(b["step_s"] for b in best[tied:]), best
# The arrival jitter: measured (waits after 1 and 2 ms of GEMM) and saved.
assert 0 <= p["arrival_jitter"] < 1, p["arrival_jitter"]
assert "arrival waits (2 ranks" in open("cal.log").read()
assert all(b["tp"] * b["pp"] * b["dp"] * b["cp"] == 2 for b in best)
assert "--config" in best[0]["command"] and "--precision fp32" in best[0]["command"], best[0]
# a profile with ops and no core count
del p["cores"]
json.dump(p, open("bad.json", "w"))
print("profile and plan ok")
PY
if "$exe" plan --model "$root/configs/llama-tiny.toml" --devices 2 --profile bad.json \
  --seq-len 128 --global-batch-size 16 > bad.log 2>&1; then
  echo "a profile without cores was accepted"; exit 1
fi
msg=$(cat bad.log)
[[ "$msg" == *"bad.json: a profile with measured 'ops' needs 'cores'"* ]] || { echo "$msg"; exit 1; }
# bench comm --work-ms: a GEMM before every call, its own time left out;
# the call and its wait remain (positive), and a bad value is refused.
mpirun --oversubscribe -np 2 "$exe" bench comm --ops all_reduce --min-bytes 64K --max-bytes 64K \
  --no-peer --rounds 1 --round-ms 10 --work-ms 2 --json work.json > work.log
/usr/bin/python3 -c "
import json; rows = json.load(open('work.json'))['rows']
assert len(rows) == 1 and rows[0]['op'] == 'all_reduce' and rows[0]['us'] > 0, rows"
if "$exe" bench comm --work-ms -1 --no-peer > badwork.log 2>&1; then
  echo "a negative --work-ms was accepted"; exit 1
fi
grep -q -- "--work-ms -1 out of range" badwork.log || { cat badwork.log; exit 1; }
# MoE: the experts' ep load from a run's metrics lengthens the ep layouts.
printf '%s\n' '{"step":1,"moe":{"ep_max_load":{"2":1.5,"4":2.0}}}' > load.jsonl
moe="$root/bench/plan/validation_moe.toml"
for load in "" "--moe-load-from load.jsonl --moe-load-warmup 0"; do
  # shellcheck disable=SC2086
  "$exe" plan --model "$moe" --devices 2 --profile prof.json --seq-len 256 \
    --global-batch-size 16 --fixed dp=2 ep=2 mb=4 zero=0 --top 1 --json "moe${load:+_load}.json" \
    $load > /dev/null
done
/usr/bin/python3 - <<'PY'
import json
even = json.load(open("moe.json"))["best"][0]
busy = json.load(open("moe_load.json"))["best"][0]
assert even["ep_imbalance_s"] == 0 and busy["ep_imbalance_s"] > 0, (even, busy)
assert busy["step_s"] > even["step_s"] + busy["ep_imbalance_s"] * 0.99, (even, busy)
print("ep load ok:", even["step_s"], "->", busy["step_s"])
PY
echo "ok"
