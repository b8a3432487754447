#!/usr/bin/python3
"""Checks parallm's optimizers against PyTorch over several steps.

Usage: compare_optimizers.py DIR   (DIR written by optimizer_dump)
DIR holds optimizers.json (hyper-parameters, lr per step, parameter names with
their weight-decay and Muon-matrix flags) and optimizers.safetensors (init.<p>,
grad.<step>.<p>, <case>.<p> = parallm's parameters after the last step).
The same gradients are replayed through torch.optim.SGD (momentum, nesterov,
dampening 0), torch.optim.Adam and torch.optim.AdamW in float32 with weight
decay only on the flagged parameters, and through a float64 Muon written here
after Keller Jordan's reference (github.com/KellerJordan/Muon, muon.py:
zeropower_via_newtonschulz5, muon_update; MuonWithAuxAdam's AdamW for the
rest). Exit 0 when every tensor is within tolerance, 1 otherwise, 2 on missing
input.
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402

# fp32 parallm vs fp32 torch (rounding order only) and vs the float64 Muon
# (measured worst: 2e-7 element-wise optimizers, 3e-7 Muon).
kTol = 1e-5


def rel_err(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-12))


def newton_schulz5(g, steps):
    """Keller Jordan's zeropower_via_newtonschulz5, in float64."""
    a, b, c = (3.4445, -4.7750, 2.0315)
    x = g.clone()
    tall = g.size(-2) > g.size(-1)
    if tall:
        x = x.mT
    x = x / (x.norm() + 1e-7)
    for _ in range(steps):
        A = x @ x.mT
        B = b * A + c * A @ A
        x = a * x + B @ x
    if tall:
        x = x.mT
    return x


def run_muon(init, grads, meta, cfg):
    names = [p["name"] for p in meta]
    dt = torch.float64
    params = {n: torch.tensor(init[n], dtype=dt, requires_grad=False) for n in names}
    mats = [p["name"] for p in meta if p["muon_matrix"]]
    others = [p["name"] for p in meta if not p["muon_matrix"]]
    aux = [torch.nn.Parameter(params[n]) for n in others]
    aux_of = dict(zip(others, aux))
    decay = [aux_of[p["name"]] for p in meta if not p["muon_matrix"] and p["weight_decay"]]
    no_decay = [aux_of[p["name"]] for p in meta if not p["muon_matrix"] and not p["weight_decay"]]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=cfg["lr"][0], betas=(cfg["beta1"], cfg["beta2"]), eps=cfg["eps"])
    bufs = {n: torch.zeros_like(params[n]) for n in mats}
    mu = cfg["muon_momentum"]
    for s in range(cfg["steps"]):
        lr = cfg["lr"][s]
        for n in others:
            aux_of[n].grad = torch.tensor(grads[s][n], dtype=dt)
        for group in opt.param_groups:
            group["lr"] = lr
        opt.step()
        lr_m = lr * cfg["muon_lr_ratio"]
        for n in mats:
            g = torch.tensor(grads[s][n], dtype=dt)
            bufs[n].lerp_(g, 1 - mu)
            u = g.lerp(bufs[n], mu)  # nesterov
            u = newton_schulz5(u, cfg["muon_ns_steps"])
            u *= max(1, g.size(-2) / g.size(-1)) ** 0.5
            params[n].mul_(1 - lr_m * cfg["muon_weight_decay"])
            params[n].add_(u, alpha=-lr_m)
    out = {n: params[n].numpy() for n in mats}
    out.update({n: aux_of[n].detach().numpy() for n in others})
    return out


def run_torch(case, init, grads, meta, cfg):
    names = [p["name"] for p in meta]
    params = {n: torch.nn.Parameter(torch.tensor(init[n], dtype=torch.float32)) for n in names}
    decay = [params[p["name"]] for p in meta if p["weight_decay"]]
    no_decay = [params[p["name"]] for p in meta if not p["weight_decay"]]
    groups = [{"params": decay, "weight_decay": cfg["weight_decay"]},
              {"params": no_decay, "weight_decay": 0.0}]
    lr = cfg["lr"][0]
    betas = (cfg["beta1"], cfg["beta2"])
    if case == "sgd":
        opt = torch.optim.SGD(groups, lr=lr)
    elif case in ("momentum", "nesterov"):
        opt = torch.optim.SGD(groups, lr=lr, momentum=cfg["momentum"], dampening=0,
                              nesterov=case == "nesterov")
    elif case == "adam":
        opt = torch.optim.Adam(groups, lr=lr, betas=betas, eps=cfg["eps"])
    elif case == "adamw":
        opt = torch.optim.AdamW(groups, lr=lr, betas=betas, eps=cfg["eps"])
    else:
        raise KeyError(f"unknown case {case}")
    for s in range(cfg["steps"]):
        for n in names:
            params[n].grad = torch.tensor(grads[s][n], dtype=torch.float32)
        for group in opt.param_groups:
            group["lr"] = cfg["lr"][s]
        opt.step()
    return {n: params[n].detach().numpy() for n in names}


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    d = sys.argv[1]
    try:
        with open(os.path.join(d, "optimizers.json")) as f:
            cfg = json.load(f)
        t = safetensors_np.load(os.path.join(d, "optimizers.safetensors"))
        meta = cfg["params"]
        names = [p["name"] for p in meta]
        init = {n: t[f"init.{n}"] for n in names}
        grads = [{n: t[f"grad.{s}.{n}"] for n in names} for s in range(cfg["steps"])]
    except (OSError, KeyError) as e:
        print(f"ERROR: missing input: {e}")
        return 2
    torch.set_num_threads(2)
    failed = 0
    for case in cfg["cases"]:
        ref = run_muon(init, grads, meta, cfg) if case == "muon" else \
            run_torch(case, init, grads, meta, cfg)
        tol = kTol
        for n in names:
            key = f"{case}.{n}"
            if key not in t:
                print(f"MISSING  {key}")
                failed += 1
                continue
            moved = rel_err(ref[n], init[n])  # the test means something only if it moved
            err = rel_err(t[key], ref[n])
            ok = err <= tol and moved > 1e-4
            print(f"{'PASS' if ok else 'FAIL'}  {key}  rel_err={err:.3e} tol={tol:.0e} "
                  f"moved={moved:.2e}")
            failed += not ok
    print(f"{'all passed' if failed == 0 else f'{failed} failed'}")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
