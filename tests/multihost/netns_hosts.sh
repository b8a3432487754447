#!/usr/bin/env bash
# Two hosts on one machine (scripts/netns-hosts.sh: network namespaces, a
# bridge, Open MPI over TCP between them): `parallm train` with tp 2 inside
# each host and dp 2 across them follows one process within the bounds every
# layout test uses (`parallm verify`), and a plain shared-memory run of the
# same layout bit for bit (losses, gradient norms, every checkpoint shard),
# also over a link with 2 ms delay at 1 Gbit/s. A host whose link is cut
# mid-run ends the job, non-zero, within 30 s, by parallm's watchdog or by
# Open MPI's daemon keepalive naming the lost host. `parallm calibrate` sees
# the two link kinds and `parallm plan` keeps tp and cp inside a host; under
# `parallm launch` a cut host is dropped and the job finishes on the host
# left at dp 1 with the same global batch. Needs root; else skips.
# Usage: netns_hosts.sh PARALLM NETNS_HOSTS_SH
set -u
bin="$1"; hosts="$2"
[ "$(id -u)" = 0 ] || { echo "SKIP: network namespaces need root"; exit 77; }
unshare --net true 2>/dev/null || { echo "SKIP: cannot create a network namespace here"; exit 77; }
# Our own names, so a developer's hosts (prefix px) survive the test; the
# lock makes concurrent runs of this test take turns over them.
export PX_NETNS_PREFIX=pxtest
exec 9>/tmp/parallm-netns-test.lock
flock -w 120 9 || { echo "FAIL: another run of this test holds the hosts"; exit 1; }
work=$(mktemp -d)
trap '"$hosts" down; rm -rf "$work"' EXIT
trap 'exit 1' TERM INT  # a ctest timeout still removes the hosts
fail() { echo "FAIL: $*"; exit 1; }
py=/usr/bin/python3
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
now() { date +%s.%N; }
since() { awk "BEGIN { printf \"%.1f\", $(now) - $1 }"; }

yes "the cat sat on the mat and the dog sat on the log." | head -n 400 > "$work/doc.txt"
"$bin" tokenize "$work/doc.txt" --out "$work/data" >/dev/null || fail "tokenize"
cat > "$work/model.toml" <<TOML
[model]
preset = "gpt2-tiny"
hidden_size = 32
num_layers = 2
num_heads = 4
intermediate_size = 64
max_positions = 64
TOML
run=(--config "$work/model.toml" --data "$work/data_train.bin" --seq-len 32 --micro-batch-size 2
     --global-batch-size 8)
# ranks 0,1 on host0 and 2,3 on host1: tp (fastest in the grid) inside a
# host, dp across the link.
on_hosts=("$hosts" mpirun --map-by ppr:2:node)

"$hosts" up 2 || fail "bringing up two hosts"
placement=$("${on_hosts[@]}" -np 4 sh -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname)"' 2>&1 |
  grep -v setpgid | sort)
[ "$placement" = "$(printf '0 pxtest-host0\n1 pxtest-host0\n2 pxtest-host1\n3 pxtest-host1')" ] ||
  fail "ranks placed as: $placement"
echo "ok: ranks 0,1 on pxtest-host0 and 2,3 on pxtest-host1"

# verify_layout NAME LAUNCHER...: `parallm verify` of tp 2 x dp 2 against one
# process under LAUNCHER, its files kept in $work/NAME.
verify_layout() {
  local name=$1 t0
  shift
  mkdir -p "$work/$name"
  t0=$(now)
  TMPDIR="$work/$name" "$bin" verify "${run[@]}" --layout "tp=2 dp=2" --steps 6 --keep-files \
    --mpirun "$*" > "$work/$name.out" 2>&1 || { cat "$work/$name.out"; fail "$name: verify"; }
  grep -q "^verdict: PASS" "$work/$name.out" || { cat "$work/$name.out"; fail "$name: verdict"; }
  echo "ok: $name: tp 2 x dp 2 follows one process, $(grep "^worst measured" "$work/$name.out") ($(since "$t0") s)"
}
# same_bits A B: the layout runs of two verify calls, bit for bit.
same_bits() {
  local a b f
  a=$(echo "$work/$1"/parallm-verify-*) b=$(echo "$work/$2"/parallm-verify-*)
  "$py" - "$a/layout.jsonl" "$b/layout.jsonl" "$1" "$2" <<'PY' || exit 1
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
if len(a) != 6 or len(b) != 6:
    sys.exit(f"FAIL: {len(a)} and {len(b)} steps logged, expected 6")
for x, y in zip(a, b):
    for key in ("loss", "grad_norm"):
        if x[key] != y[key]:
            sys.exit(f"FAIL: step {x['step']}: {key} {x[key]!r} ({sys.argv[3]}), {y[key]!r} ({sys.argv[4]})")
PY
  for f in "$a"/layout-ck/step-0000006/shard-*.safetensors; do
    cmp -s "$f" "$b/layout-ck/step-0000006/$(basename "$f")" || fail "$1 and $2: $(basename "$f") differs"
  done
  echo "ok: $1 equals $2 bit for bit: 6 losses and gradient norms, 4 checkpoint shards"
}
step_ms() {  # the median step time of a kept layout run, first step (start-up) left out
  "$py" -c 'import json, statistics, sys
ms = [json.loads(l)["step_ms"] for l in open(sys.argv[1])][1:]
print(f"{statistics.median(ms):.1f}")' "$(echo "$work/$1"/parallm-verify-*)/layout.jsonl"
}
rtt_ms() {  # host0 -> host1 TCP connect time (a refused connect is one round trip)
  "$hosts" exec host0 "$py" -c 'import socket, time
best = 1e9
for _ in range(5):
    s, t = socket.socket(), time.perf_counter()
    try:
        s.connect(("10.77.0.2", 9))
    except ConnectionRefusedError:
        pass
    best = min(best, time.perf_counter() - t)
print(f"{best * 1e3:.2f}")'
}
tx_bytes() { "$hosts" exec host1 cat /sys/class/net/eth0/statistics/tx_bytes; }

# 1. tp 2 x dp 2 over two hosts: against one process, and against the same
# layout on the plain machine (shared memory only), bit for bit.
tx0=$(tx_bytes)
verify_layout hosts "${on_hosts[@]}"
sent=$(( $(tx_bytes) - tx0 ))
# Each step, each of host1's ranks all-reduces its tp half of the gradients
# (~59 KB) with its dp partner on host0: 6 steps send over 600 KB.
[ "$sent" -gt 300000 ] || fail "host1 sent only $sent bytes on its link: dp did not cross it"
echo "ok: host1 sent $sent bytes over its link"
verify_layout plain mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1
same_bits hosts plain

# 2. The same over a shaped link: 2 ms each way at 1 Gbit/s.
rtt0=$(rtt_ms)
"$hosts" shape --delay 2 --rate 1000 || fail "shaping the links"
rtt1=$(rtt_ms)
awk "BEGIN { exit !($rtt1 >= 4) }" || fail "round trip $rtt1 ms under a 2 ms delay each way"
verify_layout shaped "${on_hosts[@]}"
same_bits hosts shaped
echo "ok: round trip host0 -> host1 $rtt0 ms unshaped, $rtt1 ms shaped;" \
  "median step $(step_ms plain) ms plain, $(step_ms hosts) ms on two hosts, $(step_ms shaped) ms shaped"
"$hosts" shape --clear >/dev/null

# cut_run NAME PATTERN MPIRUN_FLAGS TRAIN_FLAGS: a long run, host1's link cut
# after 3 steps; the job must end non-zero within 30 s with PATTERN in its output.
cut_run() {
  local name=$1 pattern=$2 mpi_flags=$3 train_flags=$4 pid t0 rc elapsed
  # shellcheck disable=SC2086
  "${on_hosts[@]}" $mpi_flags -np 4 "$bin" train "${run[@]}" --tp 2 --dp 2 --steps 100000 \
    --threads 1 --peak-tflops 1 --log-interval 1000 --metrics "$work/$name.jsonl" $train_flags \
    > "$work/$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    [ -f "$work/$name.jsonl" ] && [ "$(wc -l < "$work/$name.jsonl")" -ge 3 ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/$name.log"; fail "$name: the job ended before the cut"; }
    sleep 0.1
  done
  [ "$(wc -l < "$work/$name.jsonl" 2>/dev/null)" -ge 3 ] 2>/dev/null ||
    { kill "$pid"; cat "$work/$name.log"; fail "$name: no 3 steps in 60 s"; }
  t0=$(now)
  "$hosts" cut host1 >/dev/null || fail "cutting host1"
  for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    cat "$work/$name.log"
    fail "$name: the job still ran 60 s after host1's link was cut"
  fi
  wait "$pid"
  rc=$?
  elapsed=$(since "$t0")
  [ "$rc" -ne 0 ] || { cat "$work/$name.log"; fail "$name: the job exited 0 after the cut"; }
  awk "BEGIN { exit !($elapsed <= 30) }" || { cat "$work/$name.log"; fail "$name: ended $elapsed s after the cut"; }
  grep -Eq "$pattern" "$work/$name.log" || { cat "$work/$name.log"; fail "$name: no line matches $pattern"; }
  echo "ok: $name: host1 cut after $(wc -l < "$work/$name.jsonl") steps; the job ended (exit $rc)" \
    "$elapsed s later: $(grep -Eo "$pattern" "$work/$name.log" | head -n 1)"
}

# 3. A lost host: host0's ranks wait on a dp all-reduce that cannot finish
# (or on their tp partner stuck in it); parallm's watchdog names the
# collective and ends the job.
cut_run cut.watchdog "all_reduce #[0-9]+ on group '[a-z]+\[[0-9]\]' \(rank [0-9] of 2\) did not complete within 5 s" \
  "" "--comm-timeout 5"

# 4. The launcher's view of the same: Open MPI's keepalive on its daemon
# links notices the silent host first and names it (the watchdog is set far
# beyond the test's 30 s).
"$hosts" up 2 >/dev/null || fail "bringing the hosts up again"
cut_run cut.keepalive "Remote daemon: .* on node 10\.77\.0\.2" \
  "--mca oob_tcp_keepalive_time 1 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 3" \
  "--comm-timeout 300"

# 5. The planner sees the two link kinds: `parallm calibrate` measures the
# link inside a host (--mpirun, 2 ranks on one host) and the shaped one
# between hosts (--inter-node-mpirun, a rank on each); `parallm plan` fed by
# that profile keeps the chatty dimensions (tp, cp) inside a host.
"$hosts" up 2 >/dev/null || fail "bringing the hosts up again"
"$hosts" shape --delay 2 --rate 1000 >/dev/null || fail "shaping the links"
"$bin" calibrate --quick --devices-per-node 2 --link-ranks 2 --out "$work/profile.json" \
  --mpirun "$hosts mpirun --map-by ppr:2:node" --inter-node-mpirun "$hosts mpirun --map-by ppr:1:node" \
  > "$work/calibrate.log" 2>&1 || { cat "$work/calibrate.log"; fail "calibrate over the two link kinds"; }
"$py" - "$work/profile.json" <<'PY' || fail "the profile's links (above)"
import json, sys
p = json.load(open(sys.argv[1]))
intra, inter = p["intra_node"], p["inter_node"]
print(f"ok: calibrated links: inside a host alpha {intra['alpha_s']*1e6:.1f} us, "
      f"{intra['bytes_per_s']/1e9:.2f} GB/s; between hosts alpha {inter['alpha_s']*1e6:.1f} us, "
      f"{inter['bytes_per_s']/1e9:.2f} GB/s")
# 2 ms each way: the link between hosts costs far more per message.
assert inter["alpha_s"] > 10 * intra["alpha_s"], "the two links were not told apart"
PY
"$bin" plan --model gpt2-124m --devices 4 --devices-per-node 2 --seq-len 256 --global-batch-size 16 \
  --profile "$work/profile.json" --top 1 --json "$work/plan.json" > "$work/plan.log" 2>&1 \
  || { cat "$work/plan.log"; fail "plan"; }
"$py" - "$work/plan.json" <<'PY' || { cat "$work/plan.log"; fail "the plan crosses hosts with tp or cp"; }
import json, sys
best = json.load(open(sys.argv[1]))["best"][0]
tp, cp = best["tp"], best["cp"]
print(f"ok: plan's leader: tp {tp} cp {cp} pp {best['pp']} dp {best['dp']}: tp x cp = {tp*cp} inside a host of 2")
assert tp * cp <= 2
PY
"$hosts" shape --clear >/dev/null

# 6. A host lost for good: the supervisor restarts on the host left. Host1's
# link is cut mid-run; the watchdog ends the attempt, host1 fails its probe,
# and the job finishes on host0 at dp 1 with the same global batch.
cat > "$work/elastic.toml" <<TOML
[model]
preset = "gpt2-tiny"
hidden_size = 32
num_layers = 2
num_heads = 4
intermediate_size = 64
max_positions = 64
[data]
train = "$work/data_train.bin"
[training]
steps = 60
micro_batch_size = 2
global_batch_size = 8
seq_len = 32
[logging]
peak_tflops = 1
log_interval = 1
TOML
(
  for _ in $(seq 600); do
    [ -f "$work/elastic.jsonl" ] && [ "$(wc -l < "$work/elastic.jsonl")" -ge 5 ] && break
    sleep 0.1
  done
  "$hosts" cut host1 >/dev/null
) &
cutter=$!
t0=$(now)
"$bin" launch --max-restarts 2 --backoff 0.5 --hosts 10.77.0.1:2,10.77.0.2:2 --dp-per-host 1 \
  --host-probe "$hosts probe {host}" -- \
  "$hosts" mpirun --map-by ppr:2:node --host '{hosts}' -np '{np}' \
  "$bin" train --config "$work/elastic.toml" --threads 1 --tp 2 --dp '{dp}' --save "$work/elastic-ck" \
  --save-interval 5 --resume --comm-timeout 5 --metrics "$work/elastic.jsonl" \
  > "$work/elastic.log" 2>&1 || { cat "$work/elastic.log"; fail "the elastic run did not finish"; }
wait "$cutter"
grep "^parallm launch:" "$work/elastic.log"
grep -q "host 10.77.0.2 (ranks 2-3 of the last attempt) is lost" "$work/elastic.log" || fail "host1 was not named lost"
grep -q "elastic: going on with 1 of 2 hosts (10.77.0.1:2), dp 2 -> 1" "$work/elastic.log" || fail "no elastic restart"
grep -q "steps of 8 x 32 tokens (micro-batch 2, accumulation 4)" "$work/elastic.log" \
  || fail "the restart did not keep the global batch (accumulation 4 at dp 1)"
grep -q "step    60/60" "$work/elastic.log" || fail "the run did not finish its 60 steps"
echo "ok: host1 cut mid-run; the job finished on host0 at dp 1, the same global batch ($(since "$t0") s)"
echo "netns hosts: ok"
