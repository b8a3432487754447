#!/usr/bin/env bash
# The layouts on the test device (docs/devices.md): `parallm train --device
# test` keeps the model, its gradients, optimizer states and activations in
# memory host code cannot read (any host access faults), stages the groups'
# communication through host buffers, and must follow `--device cpu` bit for
# bit: every step's loss and gradient norm equal, for one process and for
# dp (DDP, parameter server, ZeRO-1/2/3), tp (+ sp), pp (GPipe, 1F1B,
# interleaved, zero-bubble), cp (ring, Ulysses with packed documents, with
# MoE), MoE (one process, ep 2, tp 2 + sp), LoRA (adapter dropout; one
# process and tp 2), QLoRA (bf16; dp 2 ZeRO-2), bf16, fp16, recomputation,
# attention and hidden dropout, and packed documents. A checkpoint the test device saves resumes
# there and on the cpu alike (one process, and ZeRO-3 on dp 2), also
# resharded into another layout (tp 2 to pp 2, ZeRO-3 to tp 2 + sp); its
# Hugging Face export is the cpu's byte for byte, and training from it
# (--init-from) follows the cpu's; a LoRA run's PEFT adapter is the cpu's.
# `parallm verify` locates a planted tp fault there as on the cpu.
# Usage: test_device_layouts.sh PARALLM
set -u
bin="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# fail, expect_error, tiny_corpus
. "$(dirname "$0")/../common/cli_checks.sh"
tiny_corpus "$bin" "$work"

same_run() {  # name ranks flags...: the cpu and test device runs, compared
  local name=$1 np=$2
  shift 2
  for dev in cpu test; do
    mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1 \
      -np "$np" "$bin" train --data "$work/data_train.bin" \
      --steps 3 --micro-batch-size 2 --global-batch-size 4 --seq-len 32 --lr 3e-3 --warmup 2 \
      --threads 1 --device "$dev" --metrics "$work/$name.$dev.jsonl" "$@" \
      >"$work/$name.$dev.log" 2>&1 || { tail -n 20 "$work/$name.$dev.log"; fail "$name on $dev"; }
  done
  grep -q "model on the test device" "$work/$name.test.log" || fail "$name: not on the test device"
  /usr/bin/python3 - "$work/$name.cpu.jsonl" "$work/$name.test.jsonl" "$name" <<'PY' || exit 1
import json, sys
cpu, dev = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
if len(cpu) != 3 or len(dev) != 3:
    sys.exit(f"FAIL: {sys.argv[3]}: {len(cpu)} and {len(dev)} steps logged, expected 3")
for a, b in zip(cpu, dev):
    for key in ("loss", "grad_norm"):
        if a[key] != b[key]:
            sys.exit(f"FAIL: {sys.argv[3]} step {a['step']}: {key} {a[key]!r} on the cpu, "
                     f"{b[key]!r} on the test device")
print(f"{sys.argv[3]}: the test device follows the cpu bit for bit")
PY
}

same_run one.gpt2 1 --model gpt2-tiny
same_run one.llama 1 --model llama-tiny --recompute full
same_run ddp 2 --model gpt2-tiny --dp 2
same_run ps 2 --model gpt2-tiny --dp 2 --dp-mode ps
same_run zero1 2 --model gpt2-tiny --dp 2 --zero 1
same_run zero2 2 --model gpt2-tiny --dp 2 --zero 2
same_run zero3 2 --model llama-tiny --dp 2 --zero 3 --precision bf16
same_run tp 2 --model llama-tiny --tp 2
same_run tp.sp 2 --model gpt2-tiny --tp 2 --sequence-parallel --precision bf16 --recompute selective
same_run pp.1f1b 2 --model llama-tiny --pp 2
same_run pp.gpipe 2 --model gpt2-tiny --pp 2 --schedule gpipe
same_run pp.interleaved 2 --model llama-tiny --pp 2 --schedule interleaved --virtual-stages 2
same_run pp.zb 2 --model llama-tiny --pp 2 --schedule zb
same_run fp16 2 --model gpt2-tiny --dp 2 --precision fp16

resumed() {  # name ranks flags...: saved at step 2 of 4 on the test device, resumed on each
  local name=$1 np=$2
  shift 2
  local train=(mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1
    -np "$np" "$bin" train --data "$work/data_train.bin" --steps 4 --micro-batch-size 2
    --global-batch-size 4 --seq-len 32 --lr 3e-3 --warmup 2 --threads 1 "$@")
  "${train[@]}" --device cpu --metrics "$work/$name.whole.jsonl" >/dev/null 2>&1 ||
    fail "$name: the uninterrupted cpu run"
  "${train[@]}" --device test --save "$work/$name.ck" --save-interval 2 >/dev/null 2>&1 ||
    fail "$name: the test device run that saves"
  rm -rf "$work/$name.ck/step-0000004"
  echo step-0000002 > "$work/$name.ck/latest"  # as if it had stopped after step 2
  cp -r "$work/$name.ck" "$work/$name.ck2"
  "${train[@]}" --device test --save "$work/$name.ck" --resume --metrics "$work/$name.t.jsonl" \
    >/dev/null 2>&1 || fail "$name: the resume on the test device"
  "${train[@]}" --device cpu --save "$work/$name.ck2" --resume --metrics "$work/$name.c.jsonl" \
    >/dev/null 2>&1 || fail "$name: the resume on the cpu"
  /usr/bin/python3 - "$work/$name.whole.jsonl" "$work/$name.t.jsonl" "$work/$name.c.jsonl" \
    "$name" <<'PY' || exit 1
import json, sys
whole = {r["step"]: r for r in map(json.loads, open(sys.argv[1]))}
for path, where in ((sys.argv[2], "test device"), (sys.argv[3], "cpu")):
    rows = [json.loads(l) for l in open(path)]
    if [r["step"] for r in rows] != [2, 3]:
        sys.exit(f"FAIL: {sys.argv[4]}: the resume on the {where} logged steps {[r['step'] for r in rows]}")
    for r in rows:
        w = whole[r["step"]]
        if (r["loss"], r["grad_norm"]) != (w["loss"], w["grad_norm"]):
            sys.exit(f"FAIL: {sys.argv[4]}: resumed on the {where}, step {r['step']} has loss "
                     f"{r['loss']!r} grad norm {r['grad_norm']!r}; uninterrupted "
                     f"{w['loss']!r} {w['grad_norm']!r}")
print(f"{sys.argv[4]}: saved on the test device, resumed on it and on the cpu, bit for bit")
PY
}
resumed resume.one 1 --model gpt2-tiny
resumed resume.zero3 2 --model llama-tiny --dp 2 --zero 3

resharded() {  # name "save flags" "load flags": saved on the test device in one layout at
  # step 2 of 4, resumed in another on the test device and on the cpu: the same bits
  local name=$1 save=$2 load=$3
  local train=(mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1
    -np 2 "$bin" train --model llama-tiny --data "$work/data_train.bin" --steps 4
    --micro-batch-size 2 --global-batch-size 4 --seq-len 32 --lr 3e-3 --warmup 2 --threads 1)
  # shellcheck disable=SC2086
  "${train[@]}" $save --device test --save "$work/$name.ck" --save-interval 2 >/dev/null 2>&1 ||
    fail "$name: the test device run that saves ($save)"
  rm -rf "$work/$name.ck/step-0000004"
  echo step-0000002 > "$work/$name.ck/latest"
  cp -r "$work/$name.ck" "$work/$name.ck2"
  for dev in test cpu; do
    local ck="$work/$name.ck"
    [ $dev = cpu ] && ck="$work/$name.ck2"
    # shellcheck disable=SC2086
    "${train[@]}" $load --device $dev --save "$ck" --resume --metrics "$work/$name.$dev.jsonl" \
      >"$work/$name.$dev.log" 2>&1 || { tail -n 5 "$work/$name.$dev.log"; fail "$name: the resume on $dev ($load)"; }
  done
  /usr/bin/python3 - "$work/$name.cpu.jsonl" "$work/$name.test.jsonl" "$name" <<'PY' || exit 1
import json, sys
cpu, dev = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
steps = [r["step"] for r in dev]
if steps != [2, 3] or [r["step"] for r in cpu] != steps:
    sys.exit(f"FAIL: {sys.argv[3]}: resumed steps {steps} on the test device")
for a, b in zip(cpu, dev):
    if (a["loss"], a["grad_norm"]) != (b["loss"], b["grad_norm"]):
        sys.exit(f"FAIL: {sys.argv[3]}: step {a['step']} resharded on the cpu {a['loss']!r}, "
                 f"on the test device {b['loss']!r}")
print(f"{sys.argv[3]}: saved on the test device, resharded on it and on the cpu, bit for bit")
PY
}
resharded reshard.tp_to_pp "--tp 2" "--pp 2"
resharded reshard.zero3_to_tp "--dp 2 --zero 3" "--tp 2 --sequence-parallel"
same_run packed 1 --model llama-tiny --reset-attention-mask --reset-position-ids --eod-token 10

# Hugging Face export and import (GPT-2's transposed Conv1D weights, LLaMA's
# separate projections).
for model in gpt2-tiny llama-tiny; do
  for dev in cpu test; do
    "$bin" train --model $model --data "$work/data_train.bin" --steps 2 --seq-len 32 --threads 1 \
      --device $dev --save-hf "$work/hf.$model.$dev" >/dev/null 2>&1 || fail "$model --save-hf on $dev"
  done
  cmp -s "$work/hf.$model.cpu/model.safetensors" "$work/hf.$model.test/model.safetensors" ||
    fail "$model: the test device's --save-hf differs from the cpu's"
  same_run "init_from.$model" 1 --init-from "$work/hf.$model.test"
done

# Dropout: attention dropout in the kernels, hidden dropout's mask drawn on
# the host over a copy of the rows; tp 2 + sp.
printf '[model]\npreset = "llama-tiny"\nhidden_dropout = 0.1\nattention_dropout = 0.1\n' \
  > "$work/dropout.toml"
same_run dropout 2 --config "$work/dropout.toml" --tp 2 --sequence-parallel

# Context parallelism: the chunk tiles, the merge of chunk pairs
# (ops::attention_merge), the ring's stamped messages and Ulysses' packing
# run on device buffers; only which pairs to skip is host code.
same_run cp.ring 2 --model llama-tiny --cp 2
same_run cp.a2a.docs 2 --model llama-tiny --cp 2 --cp-comm a2a --reset-attention-mask \
  --reset-position-ids --eod-token 10
same_run cp.moe 2 --model gpt2-tiny --cp 2 --num-experts 4 --recompute full

# MoE: the router and the row bookkeeping are host code over host copies;
# the experts' grouped GEMMs, gather/combine and the ep all-to-all run on
# device buffers (capacity, gated shared expert, sigmoid scores with the
# expert bias, bf16; expert parallelism over dp 2; tp 2 + sp).
moe=(--model llama-tiny --num-experts 4 --moe-router-topk 2)
same_run moe.one 1 "${moe[@]}" --moe-capacity-factor 1.0 --moe-shared-expert-intermediate-size 64 \
  --moe-shared-expert-gate --moe-router-score-function sigmoid --moe-router-enable-expert-bias \
  --precision bf16
same_run moe.ep 2 "${moe[@]}" --dp 2 --ep 2
same_run moe.tp.sp 2 "${moe[@]}" --tp 2 --sequence-parallel

# LoRA: the adapters train on the test device over a frozen base (adapter
# dropout's mask is drawn on the host over a copy of the rows), one process
# and tp 2; the PEFT adapter it saves is the cpu's byte for byte.
same_run lora.one 1 --model llama-tiny --lora-rank 4 --lora-targets all-linear --lora-dropout 0.1
same_run lora.tp 2 --model gpt2-tiny --tp 2 --lora-rank 4 --lora-targets q,v --lora-dropout 0.1
for dev in cpu test; do
  "$bin" train --model llama-tiny --data "$work/data_train.bin" --steps 2 --seq-len 32 --threads 1 \
    --device $dev --lora-rank 4 --lora-targets q,v --save-hf "$work/peft.$dev" >/dev/null 2>&1 ||
    fail "LoRA --save-hf on $dev"
done
cmp -s "$work/peft.cpu/adapter_model.safetensors" "$work/peft.test/adapter_model.safetensors" ||
  fail "the test device's PEFT adapter differs from the cpu's"

# QLoRA: the NF4 base lives on the device; its kernel quantises and reads it
# through the device's addresses (bf16 GEMMs one process; dp 2 ZeRO-2).
same_run qlora.one 1 --model llama-tiny --lora-rank 4 --lora-targets q,v --qlora --precision bf16
same_run qlora.zero2 2 --model llama-tiny --lora-rank 4 --lora-targets all-linear --qlora --dp 2 \
  --zero 2

# parallm verify: its taps copy device rows to the host, its planted tp
# fault is an op; on the test device it locates the fault where the cpu does.
for dev in cpu test; do
  "$bin" verify --model llama-tiny --layout "tp=2" --data "$work/data_train.bin" --seq-len 32 \
    --micro-batch-size 2 --global-batch-size 4 --device $dev --inject-fault tp-reduce-scale \
    --mpirun "mpirun --oversubscribe --bind-to none --mca btl self,vader" 2>&1 |
    grep -E "^first divergence|^verdict" > "$work/verify.$dev.txt"
done
grep -q "op mlp.proj (forward)" "$work/verify.test.txt" || fail "verify on the test device: $(cat "$work/verify.test.txt")"
cmp -s "$work/verify.cpu.txt" "$work/verify.test.txt" || fail "verify differs on the test device"
echo "test device layouts: ok"
