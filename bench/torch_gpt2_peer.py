#!/usr/bin/python3
"""PyTorch peer for parallm's end-to-end training benchmark (GPT-2 124M shape, fp32).

Times forward + backward + AdamW step of tests/reference/torch_model.py's GPT-2
(masked-softmax attention: torch 1.13 has no fused SDPA) on random tokens with a
fixed seed, after untimed warmup steps. Prints one JSON line:
{"tokens_per_s", "step_ms_median", "threads", "params", ...}. Invariant: the
shapes and thread count are the only knobs, so runs are comparable to parallm's.
Debian's torch does its GEMMs in OpenBLAS (libblas.so.3), which obeys
OPENBLAS_CORETYPE; this workplace sets it to Haswell (AVX2 kernels, half speed on
AVX-512 CPUs), so by default the override is dropped before torch loads and the
peer runs at its best (see docs/gemm.md); --openblas-coretype keep leaves it.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time


def set_blas_threads(n):
    """Pins OpenBLAS's own pthread pool to n threads (torch.set_num_threads covers only
    OpenMP); returns the OpenBLAS kernel family in use, or "unknown"."""
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_set_num_threads(ctypes.c_int(n))
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib.openblas_get_corename().decode()
    except (OSError, AttributeError):
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--positions", type=int, default=1024)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--openblas-coretype", default="auto",
                    help="auto: let OpenBLAS detect the CPU; keep: leave OPENBLAS_CORETYPE as "
                         "it is; anything else: set OPENBLAS_CORETYPE to it")
    args = ap.parse_args()

    # Must happen before torch (and so OpenBLAS) is loaded: OpenBLAS reads it once.
    if args.openblas_coretype == "auto":
        os.environ.pop("OPENBLAS_CORETYPE", None)
    elif args.openblas_coretype != "keep":
        os.environ["OPENBLAS_CORETYPE"] = args.openblas_coretype
    global torch, F, torch_model
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                    "reference"))
    import torch_model
    blas_core = set_blas_threads(args.threads)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    cfg = {"model_type": "gpt2", "n_embd": args.hidden, "n_layer": args.layers,
           "n_head": args.heads, "n_positions": max(args.positions, args.seq),
           "vocab_size": args.vocab, "layer_norm_epsilon": 1e-5}
    model = torch_model.build(cfg).init_random(args.seed)
    params = torch_model.hf_params(model)
    n_params = sum(p.numel() for p in params.values())
    opt = torch.optim.AdamW(
        [{"params": [p for p in params.values() if p.dim() >= 2], "weight_decay": 0.1},
         {"params": [p for p in params.values() if p.dim() < 2], "weight_decay": 0.0}],
        lr=6e-4, betas=(0.9, 0.95), eps=1e-8)
    g = torch.Generator().manual_seed(args.seed)
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=g)
    x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    times_ms, losses = [], []
    for i in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, args.vocab), y.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        dt = (time.perf_counter() - t0) * 1e3
        losses.append(float(loss))
        if i >= args.warmup:
            times_ms.append(dt)

    med = statistics.median(times_ms)
    print(json.dumps({
        "tokens_per_s": args.batch * args.seq / (med / 1e3),
        "step_ms_median": med,
        "step_ms_min": min(times_ms),
        "threads": args.threads,
        "params": n_params,
        "batch": args.batch, "seq": args.seq, "layers": args.layers, "hidden": args.hidden,
        "heads": args.heads, "vocab": args.vocab, "steps": args.steps,
        "loss_first": losses[0], "torch": torch.__version__, "openblas_core": blas_core,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
