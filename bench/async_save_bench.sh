#!/usr/bin/env bash
# Asynchronous checkpoints at the GPT-2 124M shape (fp32 values + AdamW
# moments, 1.5 GB), one process on all cores, in one run of this script:
#  - the stall a save costs the training thread, synchronous (--save) against
#    asynchronous (--async-save: the copy at the step boundary only);
#  - the slowdown per step with a save every 10 steps, against no saves:
#    wall time from the first step's line to the last's (the background
#    writer shares the cores with training, so this is the honest cost).
# Usage: bench/async_save_bench.sh [WORK_DIR]   (THREADS=2 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
threads=${THREADS:-2}
yes "the cat sat on the mat and the dog sat on the log." | head -n 2000 > "$work/doc.txt" || true
build/parallm tokenize "$work/doc.txt" --out "$work/data" >/dev/null
common=(--model gpt2-124m --data "$work/data_train.bin" --micro-batch-size 1 --global-batch-size 1
        --seq-len 64 --peak-tflops 1 --threads "$threads" --steps 31 --log-interval 1)

# run NAME FLAGS...: the log with a time stamp on each line.
run() {
  local name=$1; shift
  rm -rf "$work/ck-$name"
  build/parallm train "${common[@]}" "$@" 2>&1 | while IFS= read -r l; do
    printf '%s %s\n' "$(date +%s.%N)" "$l"; done > "$work/$name.log"
}
run none
run sync --save "$work/ck-sync" --save-interval 10 --keep 1
run async --save "$work/ck-async" --save-interval 10 --keep 1 --async-save

/usr/bin/python3 - "$work" "$threads" <<'PY'
import re, sys
work, threads = sys.argv[1], sys.argv[2]
def read(name):
    lines = [l.rstrip("\n").split(" ", 1) for l in open(f"{work}/{name}.log")]
    steps = [(float(t), int(m.group(1))) for t, l in lines
             if (m := re.match(r"step\s+(\d+)/", l))]
    first = next(t for t, s in steps if s == 1); last = next(t for t, s in steps if s == 31)
    per_step = (last - first) / 30
    sync = [float(m.group(1)) for _, l in lines if (m := re.search(r"MB in ([0-9.]+) s\)", l))]
    stall = [float(m.group(1)) for _, l in lines if (m := re.search(r"stalled ([0-9.]+) s", l))]
    bg = [float(m.group(1)) for _, l in lines if (m := re.search(r"background in ([0-9.]+) s", l))]
    return per_step, sync, stall, bg
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
none, _, _, _ = read("none")
s_step, sync, _, _ = read("sync")
a_step, _, stall, bg = read("async")
med = lambda v: sorted(v)[len(v) // 2]
print(f"CPU: {cpu}, {threads} threads; GPT-2 124M, 64 tokens per step, a save every 10 steps")
print(f"step time over steps 2-31: no saves {none*1e3:.0f} ms, sync saves {s_step*1e3:.0f} ms, "
      f"async saves {a_step*1e3:.0f} ms")
print(f"synchronous save: median {med(sync):.2f} s of the step ({len(sync)} saves)")
print(f"asynchronous save: the step stalls median {med(stall):.3f} s = {med(stall)/med(sync)*100:.1f}% "
      f"of the synchronous save; written in the background in {med(bg):.2f} s")
print(f"slowdown per step with async saves every 10 steps: {(a_step/none-1)*100:+.1f}% "
      f"(sync: {(s_step/none-1)*100:+.1f}%)")
PY
[ -n "${1:-}" ] || rm -rf "$work"
