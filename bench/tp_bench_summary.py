"""Summarises bench/tp_bench.sh's metrics files: median step ms, tokens/s,
tp and sp bytes per step, the MEASURED time inside tp collectives per step
(`tp_comm_ms`: they are blocking, so it is all exposed, waiting for the
slower rank included) and, beside it, an estimate from the analytical
collective count (the count tests/parallel/tensor/tp_comm_volume_dist.cpp
checks) priced at the 2-rank blocking timings of docs/comm.md, scaled from
the 1 MiB row (the bench's N*C*4 is exactly 1 MiB): the difference between
the two is time spent waiting for the other rank, not moving bytes.
Usage: tp_bench_summary.py WORK_DIR NAME...
"""
import json
import statistics
import sys

# docs/comm.md, 2 ranks, 1 MiB (total bytes for all_gather/reduce_scatter): us
US_PER_MIB = {"all_reduce": 113.2, "all_gather": 51.1, "reduce_scatter": 162.1}
LAYERS, HIDDEN, MICRO, SEQ, GLOBAL = 4, 512, 2, 256, 4


def estimate_ms(sp, tp=2):
    mib = MICRO * SEQ * HIDDEN * 4 / 2**20  # one B x T x hidden fp32 buffer
    micro_batches = GLOBAL // MICRO
    if not sp:  # 4 per layer, embedding, head input gradient (+ the tiny loss ones)
        us = (4 * LAYERS + 2) * US_PER_MIB["all_reduce"] * mib
    else:  # per sublayer 3 all-gathers + 2 reduce-scatters; embedding and head 1 + 1 each
        ag = 2 * LAYERS * 3 + 2
        rs = 2 * LAYERS * 2 + 2
        us = (ag * US_PER_MIB["all_gather"] + rs * US_PER_MIB["reduce_scatter"]) * mib
    return us * micro_batches / 1e3


def main():
    work, names = sys.argv[1], sys.argv[2:]
    print(f"{'layout':14} {'step ms':>8} {'tokens/s':>9} {'tp MB':>7} {'sp MB':>7} "
          f"{'tp comm ms':>11} {'share':>6} {'est. ms':>8}")
    for name in names:
        recs = [json.loads(l) for l in open(f"{work}/{name}.jsonl")][2:]
        step = statistics.median(r["step_ms"] for r in recs)
        tps = statistics.median(r["tokens_per_s"] for r in recs)
        by = recs[-1]["comm_bytes_by_group"]
        est = estimate_ms(sp=name.endswith("sp")) if name.startswith("tp2") else 0.0
        comm = statistics.median(r.get("tp_comm_ms", 0.0) for r in recs)
        print(f"{name:14} {step:8.1f} {tps:9.0f} {by['tp'] / 2**20:7.2f} {by['sp'] / 2**20:7.2f} "
              f"{comm:11.1f} {comm / step:6.1%} {est:8.1f}")


if __name__ == "__main__":
    main()
