#!/usr/bin/python3
"""PyTorch peer for bench/dp_bench.sh: DistributedDataParallel, gloo backend, CPU, fp32.

Two processes (torch.multiprocessing, init_method env:// on 127.0.0.1) train
tests/reference/torch_model.py's GPT-2 with the shapes parallm uses in the same
run: each rank takes its rows of the global batch in micro-batches, the first
micro-batches under no_sync() (one all-reduce per step, as parallm), clip to 1.0,
AdamW. Prints one JSON line: median step ms over the timed steps, peak RSS per
rank. Invariant: shapes, threads per rank and accumulation match parallm's.
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time


def worker(rank, args, q):
    os.environ.pop("OPENBLAS_CORETYPE", None)
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                    "reference"))
    import torch_model
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=args.dp)
    cfg = {"model_type": "gpt2", "n_embd": args.hidden, "n_layer": args.layers,
           "n_head": args.heads, "n_positions": max(args.positions, args.seq),
           "vocab_size": args.vocab, "layer_norm_epsilon": 1e-5}
    torch.manual_seed(1234)
    model = torch_model.build(cfg).init_random(1234)
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_mb)
    params = list(model.parameters())
    opt = torch.optim.AdamW(
        [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
         {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
        lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    g = torch.Generator().manual_seed(rank)
    rows = args.global_batch // args.dp
    accum = rows // args.micro
    times = []
    for step in range(args.warmup + args.steps):
        tokens = torch.randint(0, args.vocab, (rows, args.seq + 1), generator=g)
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        for m in range(accum):
            x = tokens[m * args.micro:(m + 1) * args.micro, :-1]
            y = tokens[m * args.micro:(m + 1) * args.micro, 1:]
            scale = 1.0 / (args.global_batch * args.seq)
            def fb():
                logits = ddp(x)
                loss = F.cross_entropy(logits.reshape(-1, args.vocab), y.reshape(-1),
                                       reduction="sum") * scale
                loss.backward()
            if m + 1 < accum:
                with ddp.no_sync():
                    fb()
            else:
                fb()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step >= args.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    q.put((rank, statistics.median(times), rss))
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dp", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=192)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--vocab", type=int, default=320)
    ap.add_argument("--positions", type=int, default=256)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--global-batch", type=int, default=16)
    ap.add_argument("--micro", type=int, default=4)
    ap.add_argument("--bucket-mb", type=float, default=1.0)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=6)
    args = ap.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    import torch
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, args, q)) for r in range(args.dp)]
    for p in procs:
        p.start()
    res = sorted(q.get() for _ in procs)
    for p in procs:
        p.join()
    print(json.dumps({"step_ms_median": max(r[1] for r in res),
                      "peak_rss_bytes": [r[2] for r in res], "torch": torch.__version__,
                      "dp": args.dp, "threads": args.threads}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
