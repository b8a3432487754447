"""Pure-PyTorch reference models: HF GPT2LMHeadModel and LlamaForCausalLM forward.

Our own nanoGPT-style code, built from an HF directory (config.json in the HF
schema + model.safetensors with HF parameter names). The module tree mirrors HF
naming, so named_parameters() yields exactly the HF names (tied weights appear
once, under the embedding's name): gradients and optimizer state can be matched
name by name against parallm's output. Everything runs in the dtype passed in
(float32 by default; float64 for a higher-precision oracle). With bf16_gemm
the linear layers and the LM head round their GEMM operands to bf16 as
parallm's --precision bf16 does (see _RoundedMatmul).
"""
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import safetensors_np


def _causal_softmax(scores):
    """scores: (B, H, T, T) -> row-wise softmax with future positions masked out."""
    t = scores.shape[-1]
    mask = torch.ones(t, t, dtype=torch.bool, device=scores.device).triu(1)
    return F.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)


def _bf16(x):
    """Round to nearest even bf16, kept in x's dtype."""
    return x.to(torch.bfloat16).to(x.dtype)


class _RoundedMatmul(torch.autograd.Function):
    """a (..., K) @ b (K, N) as parallm computes it under --precision bf16
    (docs/mixed_precision.md): both operands rounded to bf16, the gradient
    flowing back rounded once and used by both backward GEMMs, every product
    and sum in fp32. This is exact emulation, not autocast: autocast would also
    round the outputs, which parallm keeps in fp32."""

    @staticmethod
    def forward(ctx, a, b):
        ar, br = _bf16(a), _bf16(b)
        ctx.save_for_backward(ar, br)
        return ar @ br

    @staticmethod
    def backward(ctx, g):
        ar, br = ctx.saved_tensors
        gr = _bf16(g)
        da = gr @ br.t()
        db = ar.reshape(-1, ar.shape[-1]).t() @ gr.reshape(-1, gr.shape[-1])
        return da, db


def gemm(module, a, b):
    """a @ b, rounded like parallm's bf16 GEMMs when module.bf16_gemm is set."""
    return _RoundedMatmul.apply(a, b) if getattr(module, "bf16_gemm", False) else a @ b


class Linear(nn.Linear):
    """nn.Linear whose GEMM follows gemm()."""

    def forward(self, x):
        if not getattr(self, "bf16_gemm", False):
            return super().forward(x)
        y = gemm(self, x, self.weight.t())
        return y if self.bias is None else y + self.bias


# ----------------------------------------------------------------------------- GPT-2


class Conv1D(nn.Module):
    """HF GPT-2 linear layer: weight stored (in, out), y = x @ W + b."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return gemm(self, x, self.weight) + self.bias  # the bias gradient stays unrounded


class Gpt2Attention(nn.Module):
    def __init__(self, c, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = Conv1D(c, 3 * c)
        self.c_proj = Conv1D(c, c)

    def forward(self, x):
        b, t, c = x.shape
        hd = c // self.n_head
        q, k, v = self.c_attn(x).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.n_head, hd).transpose(1, 2) for z in (q, k, v))
        att = _causal_softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd)))
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        return self.c_proj(y)


class Gpt2Mlp(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = Conv1D(c, 4 * c)
        self.c_proj = Conv1D(4 * c, c)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Gpt2Block(nn.Module):
    def __init__(self, c, n_head, eps):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c, eps=eps)
        self.attn = Gpt2Attention(c, n_head)
        self.ln_2 = nn.LayerNorm(c, eps=eps)
        self.mlp = Gpt2Mlp(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Gpt2Transformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        c, eps = cfg["n_embd"], cfg.get("layer_norm_epsilon", 1e-5)
        self.wte = nn.Embedding(cfg["vocab_size"], c)
        self.wpe = nn.Embedding(cfg["n_positions"], c)
        self.h = nn.ModuleList(Gpt2Block(c, cfg["n_head"], eps) for _ in range(cfg["n_layer"]))
        self.ln_f = nn.LayerNorm(c, eps=eps)


class Gpt2LMHead(nn.Module):
    """tokens (B, T) int -> logits (B, T, V); lm head tied to wte."""

    def __init__(self, cfg):
        super().__init__()
        self.config = dict(cfg)
        self.transformer = Gpt2Transformer(cfg)

    def forward(self, tokens):
        tr = self.transformer
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = tr.wte(tokens) + tr.wpe(pos)
        for block in tr.h:
            x = block(x)
        return gemm(self, tr.ln_f(x), tr.wte.weight.t())

    def init_random(self, seed, std=0.02):
        """GPT-2 style init: N(0, std) matrices, residual projections scaled by
        1/sqrt(2*n_layer), zero biases, unit LayerNorm gains."""
        g = torch.Generator().manual_seed(seed)
        proj_std = std / math.sqrt(2 * self.config["n_layer"])
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or "ln_f.weight" in name:
                    p.fill_(1.0)
                elif p.dim() == 1:
                    p.zero_()
                else:
                    s = proj_std if name.endswith("c_proj.weight") else std
                    p.copy_(torch.randn(p.shape, generator=g) * s)
        return self


# ----------------------------------------------------------------------------- LLaMA


class RmsNorm(nn.Module):
    def __init__(self, c, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(c))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope_cos_sin(t, head_dim, theta, dtype):
    """HF-style tables: (T, head_dim) each, the half-size frequencies duplicated.
    Computed in float32 as HF does, or in float64 when the model runs in float64."""
    calc = torch.float64 if dtype == torch.float64 else torch.float32
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).to(calc) / head_dim))
    freqs = torch.outer(torch.arange(t, dtype=calc), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


class LlamaAttention(nn.Module):
    def __init__(self, c, n_head, n_kv, head_dim, theta):
        super().__init__()
        self.n_head, self.n_kv, self.head_dim, self.theta = n_head, n_kv, head_dim, theta
        self.q_proj = Linear(c, n_head * head_dim, bias=False)
        self.k_proj = Linear(c, n_kv * head_dim, bias=False)
        self.v_proj = Linear(c, n_kv * head_dim, bias=False)
        self.o_proj = Linear(n_head * head_dim, c, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        hd = self.head_dim
        q = self.q_proj(x).view(b, t, self.n_head, hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.n_kv, hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.n_kv, hd).transpose(1, 2)
        cos, sin = rope_cos_sin(t, hd, self.theta, x.dtype)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        # GQA: query head h reads kv head h // (n_head / n_kv).
        rep = self.n_head // self.n_kv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        att = _causal_softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd)))
        y = (att @ v).transpose(1, 2).reshape(b, t, self.n_head * hd)
        return self.o_proj(y)


class LlamaMlp(nn.Module):
    def __init__(self, c, inter):
        super().__init__()
        self.gate_proj = Linear(c, inter, bias=False)
        self.up_proj = Linear(c, inter, bias=False)
        self.down_proj = Linear(inter, c, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        c, eps = cfg["hidden_size"], cfg.get("rms_norm_eps", 1e-6)
        n_head = cfg["num_attention_heads"]
        n_kv = cfg.get("num_key_value_heads") or n_head
        head_dim = cfg.get("head_dim") or c // n_head
        self.input_layernorm = RmsNorm(c, eps)
        self.self_attn = LlamaAttention(c, n_head, n_kv, head_dim, cfg.get("rope_theta", 10000.0))
        self.post_attention_layernorm = RmsNorm(c, eps)
        self.mlp = LlamaMlp(c, cfg["intermediate_size"])

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaBody(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList(LlamaBlock(cfg) for _ in range(cfg["num_hidden_layers"]))
        self.norm = RmsNorm(cfg["hidden_size"], cfg.get("rms_norm_eps", 1e-6))


class LlamaLM(nn.Module):
    """tokens (B, T) int -> logits (B, T, V); lm_head exists only when untied."""

    def __init__(self, cfg):
        super().__init__()
        self.config = dict(cfg)
        self.tied = bool(cfg.get("tie_word_embeddings", False))
        self.model = LlamaBody(cfg)
        if not self.tied:
            self.lm_head = Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)

    def forward(self, tokens):
        x = self.model.embed_tokens(tokens)
        for layer in self.model.layers:
            x = layer(x)
        x = self.model.norm(x)
        w = self.model.embed_tokens.weight if self.tied else self.lm_head.weight
        return gemm(self, x, w.t())

    def init_random(self, seed, std=0.02):
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for _, p in self.named_parameters():
                if p.dim() == 1:
                    p.fill_(1.0)
                else:
                    p.copy_(torch.randn(p.shape, generator=g) * std)
        return self


# ----------------------------------------------------------------------------- HF directories


def model_type(cfg):
    t = cfg.get("model_type")
    if t in ("gpt2", "llama"):
        return t
    return "gpt2" if "n_embd" in cfg else "llama"


def build(cfg):
    """Uninitialised model of the family named by an HF config dict."""
    return Gpt2LMHead(cfg) if model_type(cfg) == "gpt2" else LlamaLM(cfg)


def hf_params(model):
    """{hf name: nn.Parameter}, each shared tensor once."""
    return dict(model.named_parameters())


def load_hf_dir(path, dtype=torch.float32, bf16_gemm=False):
    """Model from path/config.json + path/model.safetensors; every HF tensor must be
    used and every parameter provided (a mismatch raises KeyError). bf16_gemm:
    the GEMMs round their operands to bf16 (_RoundedMatmul)."""
    with open(os.path.join(path, "config.json")) as f:
        cfg = json.load(f)
    weights = safetensors_np.load(os.path.join(path, "model.safetensors"))
    model = build(cfg)
    params = hf_params(model)
    # HF may also store a tied lm_head; it is the embedding, so it is dropped here.
    if cfg.get("tie_word_embeddings", model_type(cfg) == "gpt2"):
        weights.pop("lm_head.weight", None)
    missing = sorted(set(params) - set(weights))
    extra = sorted(set(weights) - set(params))
    if missing or extra:
        raise KeyError(f"{path}: missing weights {missing}, unexpected weights {extra}")
    with torch.no_grad():
        for name, p in params.items():
            w = torch.from_numpy(np.asarray(weights[name], dtype=np.float32))
            if tuple(w.shape) != tuple(p.shape):
                raise KeyError(f"{path}: {name} has shape {tuple(w.shape)}, want {tuple(p.shape)}")
            p.copy_(w)
    for m in model.modules():
        m.bf16_gemm = bf16_gemm
    return model.to(dtype)


def write_hf_dir(path, cfg, model):
    """Writes config.json and model.safetensors (F32) for a model of ours."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    tensors = {n: p.detach().to(torch.float32).numpy() for n, p in hf_params(model).items()}
    safetensors_np.save(os.path.join(path, "model.safetensors"), tensors, metadata={"format": "pt"})
