#!/usr/bin/env python3
"""The PyTorch peer of bench/gpt2_train_bench.cpp --device cuda: the same GPT-2 (124M, llm.c's
padded vocabulary 50304, tied embeddings, tanh GELU, LayerNorm), the same
step (forward + backward + clip 1.0 + AdamW lr 6e-4, betas 0.9/0.95, decay
0.1 on matrices and embeddings), bf16 autocast with fp32 master weights, TF32
off, flash attention through scaled_dot_product_attention; eager or
torch.compile. Prints one JSON line.

  python3 bench/gpu/gpt2_torch.py [--compile] [--batch B] [--seq T] [--steps S]
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H = H
        self.ln1 = nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)
        self.o = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C)
        self.fc = nn.Linear(C, 4 * C)
        self.proj = nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(B, T, C))
        return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, V=50304, C=768, L=12, H=12, P=1024):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(P, C)
        self.blocks = nn.ModuleList(Block(C, H) for _ in range(L))
        self.lnf = nn.LayerNorm(C)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * L) if name.endswith(("o.weight", "proj.weight")) else 0.02
                nn.init.normal_(p, std=std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.blocks:
            x = b(x)
        logits = F.linear(self.lnf(x), self.wte.weight)
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--peak-tflops", type=float, default=989.4)
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda"
    torch.manual_seed(0)
    model = GPT().to(dev)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": other, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)
    step_model = torch.compile(model) if a.compile else model
    g = torch.Generator().manual_seed(12345)
    data = torch.randint(0, 50257, (a.batch * a.seq + 1,), generator=g)
    x = data[:-1].view(a.batch, a.seq).to(dev)
    y = data[1:].view(a.batch, a.seq).to(dev)
    losses, seconds = [], 0.0
    for s in range(a.warmup + a.steps):
        if s == a.warmup:
            torch.cuda.reset_peak_memory_stats()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = step_model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())  # a host sync per step, as gpt2_train_bench has
        t1 = time.perf_counter()
        if s >= a.warmup:
            seconds += t1 - t0
    # Model FLOPs as plan/flops.h counts them: 6N + 12LHQT, N = every weight
    # matrix and the (tied) head, position table excluded.
    n_matmul = sum(p.numel() for n, p in model.named_parameters()
                   if p.dim() == 2 and not n.startswith("wpe"))
    L, H, Q, T = 12, 12, 64, a.seq
    flops_per_token = 6 * n_matmul + 12 * L * H * Q * T
    tok_s = a.batch * a.seq * a.steps / seconds
    tflops = tok_s * flops_per_token / 1e12
    print(json.dumps({
        "bench": "gpt2_train", "impl": "torch.compile" if a.compile else "torch eager",
        "torch": torch.__version__, "device": torch.cuda.get_device_name(),
        "model": "gpt2-124m-padded", "precision": "bf16 autocast", "batch": a.batch,
        "seq": a.seq, "steps": a.steps, "ms_per_step": round(1e3 * seconds / a.steps, 2),
        "tokens_per_s": round(tok_s), "tflops": round(tflops, 1),
        "mfu": round(tflops / a.peak_tflops, 4), "loss_first": round(losses[0], 4),
        "loss_last": round(losses[-1], 4),
        "peak_total": torch.cuda.max_memory_allocated()}))


if __name__ == "__main__":
    main()
