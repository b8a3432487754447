#!/usr/bin/env bash
# Asynchronous checkpoints at the GPT-2 124M shape (fp32 values + AdamW
# moments, 1.5 GB), one process on all cores, saved to memory (/dev/shm, as
# snapshots are; SAVE_ROOT to change), in one run of this script:
#  - the stall a save costs the training thread, synchronous (--save) against
#    asynchronous (--async-save: the copy at the step boundary only);
#  - the slowdown per step with a save every 10 steps, against no saves:
#    wall time from the first step's line to the last's (the background
#    writer shares the cores with training, so this is the honest cost).
# Training takes one thread and leaves the other core to the writer, as a
# GPU job leaves the host's cores: with every core training, a background
# write competes for the same cores and cannot be cheaper than a synchronous
# one (THREADS=2 shows that).
# Usage: bench/async_save_bench.sh [WORK_DIR]   (THREADS=1 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
threads=${THREADS:-1}
yes "the cat sat on the mat and the dog sat on the log." | head -n 2000 > "$work/doc.txt" || true
build/parallm tokenize "$work/doc.txt" --out "$work/data" >/dev/null
save_root=${SAVE_ROOT:-/dev/shm}
# 4 x 128 tokens a step (seconds here): long enough that a write in the
# background ends before the next save; saves after steps 10 and 20 (the end).
common=(--model gpt2-124m --data "$work/data_train.bin" --micro-batch-size 1 --global-batch-size 4
        --seq-len 128 --peak-tflops 1 --threads "$threads" --steps 20 --log-interval 1)

# run NAME FLAGS...: the log with a time stamp on each line.
run() {
  local name=$1; shift
  rm -rf "$save_root/parallm-bench-$name"
  build/parallm train "${common[@]}" "$@" 2>&1 | while IFS= read -r l; do
    printf '%s %s\n' "$(date +%s.%N)" "$l"; done > "$work/$name.log"
}
run none
run sync --save "$save_root/parallm-bench-sync" --save-interval 10 --keep 1
run async --save "$save_root/parallm-bench-async" --save-interval 10 --keep 1 --async-save
rm -rf "$save_root"/parallm-bench-*

/usr/bin/python3 - "$work" "$threads" <<'PY'
import re, sys
work, threads = sys.argv[1], sys.argv[2]
def read(name):
    lines = [l.rstrip("\n").split(" ", 1) for l in open(f"{work}/{name}.log")]
    steps = [(float(t), int(m.group(1))) for t, l in lines
             if (m := re.match(r"step\s+(\d+)/", l))]
    first = next(t for t, s in steps if s == 1); last = next(t for t, s in steps if s == 20)
    per_step = (last - first) / 19  # steps 2-20, the save after step 10 among them
    sync = [float(m.group(1)) for _, l in lines if (m := re.search(r"MB in ([0-9.]+) s\)", l))]
    stall = [float(m.group(1)) for _, l in lines if (m := re.search(r"stalled ([0-9.]+) s", l))]
    bg = [float(m.group(1)) for _, l in lines if (m := re.search(r"background in ([0-9.]+) s", l))]
    return per_step, sync, stall, bg
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
none, _, _, _ = read("none")
s_step, sync, _, _ = read("sync")
a_step, _, stall, bg = read("async")
med = lambda v: sorted(v)[len(v) // 2]
print(f"CPU: {cpu}, {threads} training thread(s); GPT-2 124M, 4 x 128 tokens per step, saves after steps 10 and 20")
print(f"step time over steps 2-20 (the save after step 10 among them): no saves {none*1e3:.0f} ms, "
      f"sync {s_step*1e3:.0f} ms, async {a_step*1e3:.0f} ms")
print(f"synchronous saves: {', '.join(f'{x:.2f}' for x in sync)} s")
print(f"asynchronous saves, the step's stall: {', '.join(f'{x:.3f}' for x in stall)} s; "
      f"written in the background in "
      f"{', '.join(f'{x:.2f}' for x in bg)} s")
print(f"stall / synchronous save, save after step 10: {stall[0]/sync[0]*100:.1f}%; "
      f"after step 20: {stall[1]/sync[1]*100:.1f}%")
print(f"slowdown per step with a save every 10 steps: async {(a_step/none-1)*100:+.1f}%, "
      f"sync {(s_step/none-1)*100:+.1f}%")
PY
[ -n "${1:-}" ] || rm -rf "$work"
