"""Summary of bench/lora_bench.sh: a speed and memory table of full
fine-tuning, LoRA and QLoRA (ratios against full fine-tuning measured in the
same run), the final losses of the fine-tuning runs, and their loss curves as
an SVG picture.
Usage: lora_bench_summary.py WORK "SPEED_RUNS" "CURVE_RUNS" OUT_SVG"""
import json
import os
import platform
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_bench_svg import line_plot  # noqa: E402

LABELS = {"full": "full fine-tuning", "lora": "LoRA r 16, all linears",
          "qlora": "QLoRA r 16, NF4 + double quant"}
TIMED_FROM = 2  # the first steps warm caches and the allocator's pools


def records(work, name):
    with open(os.path.join(work, name + ".jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def cpu_name():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def mib(b):
    return b / 2**20


def speed_table(work, runs):
    if not runs:
        return {}
    rows = {}
    for name in runs:
        recs = records(work, name)
        timed = recs[TIMED_FROM:] or recs
        mem = recs[-1]["memory"]
        rows[name] = {
            "step_ms": statistics.median(r["step_ms"] for r in timed),
            "tokens_per_s": statistics.median(r["tokens_per_s"] for r in timed),
            "mfu": statistics.median(r["mfu"] for r in timed),
            "peak_tflops": recs[-1]["peak_tflops"],
            "peak": {tag: mem[tag]["peak"] for tag in mem},
        }
    full = rows[runs[0]]
    print("| run | step ms | tokens/s | x full (time) | MFU | parameter MiB | gradient MiB | "
          "optimizer MiB | activation MiB | total peak MiB | x full (memory) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        p = r["peak"]
        print(f"| {LABELS.get(name, name)} | {r['step_ms']:.0f} | {r['tokens_per_s']:.0f} | "
              f"{r['step_ms'] / full['step_ms']:.2f} | {100 * r['mfu']:.1f}% | "
              f"{mib(p['parameter']):.1f} | {mib(p['gradient']):.1f} | "
              f"{mib(p['optimizer']):.1f} | {mib(p['activation']):.1f} | "
              f"{mib(p['total']):.1f} | {p['total'] / full['peak']['total']:.2f} |")
    print(f"(GEMM peak measured at start-up: {1e3 * full['peak_tflops']:.1f} GFLOP/s; "
          "LoRA's MFU counts 4N for the frozen base, plan/flops.h)")
    return rows


def smooth(losses, window=10):
    """Means over consecutive windows of steps: (last step of the window, mean)."""
    return [(i + window, statistics.mean(losses[i:i + window]))
            for i in range(0, len(losses) - window + 1, window)]


def curves(work, runs, out_svg):
    if not runs:
        return
    series = []
    print("| fine-tuning run | first loss | last loss (mean of last 10) | validation loss |")
    print("|---|---|---|---|")
    for name in runs:
        recs = records(work, name)
        losses = [r["loss"] for r in recs if "loss" in r]
        val = [r["val_loss"] for r in recs if "val_loss" in r]
        label = LABELS.get(name.removeprefix("ft_"), name)
        series.append((label, smooth(losses)))
        print(f"| {label} | {losses[0]:.4f} | {statistics.mean(losses[-10:]):.4f} | "
              f"{val[-1]:.4f} |" if val else f"| {label} | {losses[0]:.4f} | "
              f"{statistics.mean(losses[-10:]):.4f} | - |")
    svg = line_plot(series, "Fine-tuning llama-tiny from a pretrained base: training loss",
                    "step (means over 10 steps)", "loss (nats per byte)", y_from_zero=False,
                    legend_top=False)
    with open(out_svg, "w") as f:
        f.write(svg)
    print(f"wrote {out_svg}")


def main():
    work, speed_runs, curve_runs, out_svg = sys.argv[1:5]
    load = os.getloadavg()
    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores; load average {load[0]:.2f} "
          f"{load[1]:.2f} {load[2]:.2f}")
    speed_table(work, speed_runs.split())
    print()
    curves(work, curve_runs.split(), out_svg)


if __name__ == "__main__":
    main()
