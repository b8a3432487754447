#!/usr/bin/python3
"""PyTorch peer of optimizer_bench: the same shapes, torch.optim.SGD (with and
without momentum), Adam, AdamW (foreach, the default) and a float32 Muon after
Keller Jordan's reference (Newton-Schulz on the block matrices, AdamW for the
rest), median step time in ms. Usage: optimizer_torch_peer.py HIDDEN LAYERS VOCAB STEPS
"""
import json
import sys
import time

import torch


def ns5(g, steps=5):
    a, b, c = (3.4445, -4.7750, 2.0315)
    x = g.mT if g.size(-2) > g.size(-1) else g
    x = x / (x.norm() + 1e-7)
    for _ in range(steps):
        A = x @ x.mT
        B = b * A + c * A @ A
        x = a * x + B @ x
    return x.mT if g.size(-2) > g.size(-1) else x


def main():
    C, L, V, steps = (int(x) for x in sys.argv[1:5])
    torch.set_num_threads(1)
    shapes = [("embed", (V, C), True, False)]
    for l in range(L):
        shapes += [(f"{l}.n1", (C,), False, False)]
        for m in "qkvo":
            shapes += [(f"{l}.{m}", (C, C), True, True), (f"{l}.{m}b", (C,), False, False)]
        shapes += [(f"{l}.n2", (C,), False, False), (f"{l}.fc", (4 * C, C), True, True),
                   (f"{l}.fcb", (4 * C,), False, False), (f"{l}.proj", (C, 4 * C), True, True),
                   (f"{l}.pb", (C,), False, False)]
    for name in ("sgd", "momentum", "adam", "adamw", "muon"):
        torch.manual_seed(0)
        params = [torch.nn.Parameter(torch.randn(s) * 0.02) for _, s, _, _ in shapes]
        for p in params:
            p.grad = torch.randn_like(p) * 1e-2
        decay = [p for p, (_, _, d, _) in zip(params, shapes) if d]
        nodecay = [p for p, (_, _, d, _) in zip(params, shapes) if not d]
        groups = [{"params": decay, "weight_decay": 0.1}, {"params": nodecay, "weight_decay": 0.0}]
        mats = [p for p, (_, _, _, m) in zip(params, shapes) if m]
        if name == "sgd":
            opt = torch.optim.SGD(groups, lr=1e-3)
        elif name == "momentum":
            opt = torch.optim.SGD(groups, lr=1e-3, momentum=0.9)
        elif name == "adam":
            opt = torch.optim.Adam(groups, lr=1e-3, betas=(0.9, 0.95))
        elif name == "adamw":
            opt = torch.optim.AdamW(groups, lr=1e-3, betas=(0.9, 0.95))
        else:
            others = [p for p, (_, _, _, m) in zip(params, shapes) if not m]
            opt = torch.optim.AdamW(others, lr=1e-3, betas=(0.9, 0.95))
            bufs = [torch.zeros_like(p) for p in mats]

        def step():
            with torch.no_grad():
                opt.step()
                if name == "muon":
                    for p, buf in zip(mats, bufs):
                        buf.lerp_(p.grad, 0.05)
                        u = ns5(p.grad.lerp(buf, 0.95))
                        u *= max(1, p.size(-2) / p.size(-1)) ** 0.5
                        p.add_(u, alpha=-0.02)

        step()
        ms = []
        for _ in range(steps):
            t0 = time.perf_counter()
            step()
            ms.append((time.perf_counter() - t0) * 1e3)
        ms.sort()
        n = sum(p.numel() for p in params)
        print(json.dumps({"optimizer": name, "params": n, "ms": round(ms[len(ms) // 2], 3)}))


if __name__ == "__main__":
    main()
