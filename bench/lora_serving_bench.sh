#!/usr/bin/env bash
# Many LoRA adapters in one serving batch against the base model alone, in
# the same run on the same server (bench/lora_serving_bench.py says what is
# measured). Prints the CPU, the load average before and after (the build
# machine is shared: a high load means noisy numbers), JSON lines per run
# and a markdown table.
# Usage: bench/lora_serving_bench.sh [THREADS] [RANK] [ROUNDS] (env BUILD_DIR, WORK_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
threads="${1:-2}"
rank="${2:-16}"
rounds="${3:-3}"
build="${BUILD_DIR:-build}"
work="${WORK_DIR:-$build/lora_serving_bench}"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
OMP_NUM_THREADS="$threads" /usr/bin/python3 bench/lora_serving_bench.py "$work" "$build/parallm" \
  "$threads" "$rank" "$rounds"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
