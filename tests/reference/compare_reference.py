#!/usr/bin/python3
"""Checks parallm's forward, backward and optimizer steps against PyTorch.

Usage: compare_reference.py DIR      (DIR written by parallm, layout below)
       compare_reference.py --self-test
DIR holds model/ (HF dir), batch.safetensors (tokens, targets: I32 (B, T), -1 =
ignore), train.json and parallm.safetensors (logits, loss, grad.<hf name>,
step<K>.<hf name>, loss_at_step.<k>). Invariant: the tensor names on the two
sides must match exactly; a missing or extra name is a failure (exit 2), a
tensor out of tolerance is a failure (exit 1); exit 0 only when all pass.
"""
import argparse
import json
import math
import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402
import torch_model  # noqa: E402

kTolForward = 1e-5  # logits, loss, gradients: one pass, fp32 reduction-order noise only
kTolTrain = 1e-4  # parameters and losses along the optimizer trajectory
kTrainKeys = ("lr", "warmup", "total_steps", "min_lr_ratio", "weight_decay",
              "beta1", "beta2", "eps", "clip", "steps")


class MissingInput(Exception):
    """A file, a key or a tensor name that must be there is not."""


def rel_err(a, b):
    """max|a - b| / max(max|b|, 1e-6), b being the reference."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return math.inf
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-6))


def lr_at(step, train):
    """llm.c schedule, 0-based step: linear warmup, then cosine to lr * min_lr_ratio."""
    lr, warmup = train["lr"], train["warmup"]
    if step < warmup:
        return lr * (step + 1) / warmup
    min_lr = lr * train["min_lr_ratio"]
    span = max(1, train["total_steps"] - warmup)
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + math.cos(math.pi * (step - warmup) / span))


def run_reference(model_dir, tokens, targets, train, dtype=torch.float32):
    """Returns {name: np.ndarray} with the same names parallm writes."""
    model = torch_model.load_hf_dir(model_dir, dtype)
    params = torch_model.hf_params(model)
    decay = [p for p in params.values() if p.dim() >= 2]
    no_decay = [p for p in params.values() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": train["weight_decay"]},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=train["lr"], betas=(train["beta1"], train["beta2"]), eps=train["eps"])
    tokens = torch.from_numpy(np.asarray(tokens)).long()
    targets = torch.from_numpy(np.asarray(targets)).long()
    out = {}
    steps = int(train["steps"])
    if steps < 1:
        raise MissingInput("train.json: steps must be >= 1 (step 0 yields logits and grads)")
    for s in range(steps):
        opt.zero_grad(set_to_none=True)
        logits = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                               ignore_index=-1)
        loss.backward()
        if s == 0:
            out["logits"] = logits.detach().numpy().copy()
            out["loss"] = loss.detach().numpy().copy()
            for name, p in params.items():
                out[f"grad.{name}"] = p.grad.detach().numpy().copy()
        out[f"loss_at_step.{s}"] = loss.detach().numpy().copy()
        if train["clip"] > 0:
            torch.nn.utils.clip_grad_norm_(list(params.values()), train["clip"])
        for group in opt.param_groups:
            group["lr"] = lr_at(s, train)
        opt.step()
    for name, p in params.items():
        out[f"step{steps}.{name}"] = p.detach().numpy().copy()
    return {k: v.astype(np.float32) for k, v in out.items()}


def _where(a, b, grad):
    """Locates the worst element; a tiny step-0 gradient there points to Adam
    amplifying rounding noise (see kSelfTestTrain) rather than a real bug."""
    diff = np.abs(a.astype(np.float64) - b)
    i = np.unravel_index(int(np.argmax(diff)), diff.shape)
    note = f"worst at {tuple(int(x) for x in i)}: parallm {a[i]:.6e} reference {b[i]:.6e}"
    if grad is not None:
        note += f"; step-0 grad there {grad[i]:.3e} (max |grad| {np.max(np.abs(grad)):.3e})"
    return note


def tolerance(name):
    if name.startswith("step") or name.startswith("loss_at_step."):
        return kTolTrain
    return kTolForward


def load_inputs(dir_):
    def need(path):
        if not os.path.exists(path):
            raise MissingInput(f"missing file: {path}")
        return path

    model_dir = os.path.join(dir_, "model")
    need(os.path.join(model_dir, "config.json"))
    need(os.path.join(model_dir, "model.safetensors"))
    batch = safetensors_np.load(need(os.path.join(dir_, "batch.safetensors")))
    for key in ("tokens", "targets"):
        if key not in batch:
            raise MissingInput(f"batch.safetensors: missing tensor {key!r}")
    with open(need(os.path.join(dir_, "train.json"))) as f:
        train = json.load(f)
    absent = [k for k in kTrainKeys if k not in train]
    if absent:
        raise MissingInput(f"train.json: missing keys {absent}")
    ours = safetensors_np.load(need(os.path.join(dir_, "parallm.safetensors")))
    return model_dir, batch, train, ours


def compare(dir_, ref_dtype=torch.float32, quiet=False):
    """Returns the exit code: 0 all pass, 1 a tensor is out of tolerance, 2 missing input."""
    say = (lambda *a: None) if quiet else print
    try:
        model_dir, batch, train, ours = load_inputs(dir_)
        ref = run_reference(model_dir, batch["tokens"], batch["targets"], train, ref_dtype)
    except (MissingInput, KeyError) as e:
        say(f"ERROR: {e}")
        return 2
    passed, failed = 0, 0
    worst = {}
    for name in sorted(ref):
        if name not in ours:
            say(f"MISSING  {name}: not in parallm.safetensors")
            failed += 1
            continue
        err, tol = rel_err(ours[name], ref[name]), tolerance(name)
        ok = err <= tol
        shape_note = "" if ours[name].shape == ref[name].shape else \
            f"  shape {ours[name].shape} != reference {ref[name].shape}"
        say(f"{'PASS' if ok else 'FAIL'}  {name}  rel_err={err:.3e}  tol={tol:.0e}{shape_note}")
        if not ok and not shape_note and name.startswith("step"):
            say("      " + _where(ours[name], ref[name], ref.get("grad." + name.split(".", 1)[1])))
        kind = name.split(".")[0]
        worst[kind] = max(worst.get(kind, 0.0), err)
        passed, failed = passed + ok, failed + (not ok)
    extra = sorted(set(ours) - set(ref))
    for name in extra:
        say(f"MISSING  {name}: in parallm.safetensors but not produced by the reference")
        failed += 1
    say("worst relative error by kind: " +
        ", ".join(f"{k}={v:.3e}" for k, v in sorted(worst.items())))
    missing = len([n for n in ref if n not in ours]) + len(extra)
    say(f"{passed} passed, {failed} failed")
    if missing:
        return 2
    return 0 if failed == 0 else 1


# ----------------------------------------------------------------------------- self-test

kSelfTestConfigs = {
    "gpt2": {"model_type": "gpt2", "n_embd": 72, "n_layer": 2, "n_head": 3, "n_positions": 64,
             "vocab_size": 1000, "layer_norm_epsilon": 1e-5},
    "llama": {"model_type": "llama", "hidden_size": 72, "intermediate_size": 200,
              "num_hidden_layers": 2, "num_attention_heads": 6, "num_key_value_heads": 2,
              "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False,
              "vocab_size": 1000},
    "llama_tied": {"model_type": "llama", "hidden_size": 72, "intermediate_size": 200,
                   "num_hidden_layers": 2, "num_attention_heads": 6, "num_key_value_heads": 2,
                   "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": True,
                   "vocab_size": 1000, "head_dim": 16},
}
# eps 1e-6, not 1e-8: Adam maps a gradient element g to about lr * g / (|g| + eps), so
# elements with |g| near eps (~1e-6 of the largest gradient; GPT-2's key bias has g = 0
# exactly) turn fp32 rounding noise into O(lr) differences between two correct
# implementations. Measured worst step error fp64-vs-fp32 on these models: eps 1e-8:
# 8e-4, 1e-7: 8e-5, 1e-6: 2e-5, 1e-5: 1e-5 (tolerance 1e-4).
kSelfTestTrain = {"lr": 1e-3, "warmup": 2, "total_steps": 5, "min_lr_ratio": 0.1,
                  "weight_decay": 0.1, "beta1": 0.9, "beta2": 0.95, "eps": 1e-6, "clip": 1.0,
                  "steps": 5}


def _make_case(dir_, cfg, seed, fake_train=None):
    """Random tiny HF model + batch + train.json; the 'parallm' output is the same
    pipeline in float64 (with fake_train if given, to plant a bug) so the
    tolerances are exercised by real rounding noise."""
    model = torch_model.build(cfg).init_random(seed)
    torch_model.write_hf_dir(os.path.join(dir_, "model"), cfg, model)
    rng = np.random.default_rng(seed)
    b, t = 2, 16
    tokens = rng.integers(0, cfg["vocab_size"], size=(b, t)).astype(np.int32)
    targets = rng.integers(0, cfg["vocab_size"], size=(b, t)).astype(np.int32)
    targets[rng.random((b, t)) < 0.2] = -1
    safetensors_np.save(os.path.join(dir_, "batch.safetensors"),
                        {"tokens": tokens, "targets": targets})
    with open(os.path.join(dir_, "train.json"), "w") as f:
        json.dump(kSelfTestTrain, f)
    fake = run_reference(os.path.join(dir_, "model"), tokens, targets,
                         fake_train or kSelfTestTrain, torch.float64)
    safetensors_np.save(os.path.join(dir_, "parallm.safetensors"), fake)
    return fake


def _check(label, got, want, results):
    status = "ok" if got == want else "WRONG"
    print(f"self-test {label}: exit {got} (want {want}) {status}")
    results.append((label, got == want))


def _self_test_safetensors(results):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.safetensors")
        x = np.array([[1.0, -2.5, 3.14159, 1e-3], [65504.0, -0.0, 7.0, 1e30]], dtype=np.float32)
        data = {"f32": x, "bf16": x, "f16": x[:, :3].astype(np.float16),
                "i32": np.arange(6, dtype=np.int32).reshape(2, 3),
                "i64": np.array([-1, 2 ** 40], dtype=np.int64), "scalar": np.float32(2.0)}
        safetensors_np.save(path, data, bf16_names=["bf16"])
        back = safetensors_np.load(path)
        ok = (np.array_equal(back["f32"], x) and back["f16"].dtype == np.float16
              and np.array_equal(back["i32"], data["i32"]) and back["i64"][1] == 2 ** 40
              and back["scalar"].shape == () and back["bf16"].dtype == np.float32
              and np.max(np.abs(back["bf16"] - x) / np.maximum(np.abs(x), 1e-30)) <= 2 ** -8
              and back["bf16"][0, 0] == 1.0 and back["bf16"][0, 1] == -2.5)
        print(f"self-test safetensors round trip: {'ok' if ok else 'WRONG'}")
        results.append(("safetensors round trip", ok))


def _self_test_causal(cfg, results):
    """Changing a later token must not change earlier logits."""
    model = torch_model.build(cfg).init_random(3)
    tok = torch.randint(0, cfg["vocab_size"], (1, 12), generator=torch.Generator().manual_seed(1))
    tok2 = tok.clone()
    tok2[0, 8] = (tok2[0, 8] + 1) % cfg["vocab_size"]
    with torch.no_grad():
        a, b = model(tok), model(tok2)
    ok = torch.equal(a[:, :8], b[:, :8]) and not torch.equal(a[:, 8:], b[:, 8:])
    print(f"self-test causality {cfg['model_type']}: {'ok' if ok else 'WRONG'}")
    results.append((f"causality {cfg['model_type']}", ok))


def self_test():
    results = []
    _self_test_safetensors(results)
    for seed, (name, cfg) in enumerate(kSelfTestConfigs.items()):
        _self_test_causal(cfg, results)
        with tempfile.TemporaryDirectory() as d:
            fake = _make_case(d, cfg, seed=seed)
            print(f"--- {name}: float64 'parallm' vs float32 reference")
            _check(f"{name} pass", compare(d), 0, results)
            out = os.path.join(d, "parallm.safetensors")
            grad_name = sorted(k for k in fake if k.startswith("grad."))[1]
            bad = dict(fake)
            g = bad[grad_name].copy()
            g.reshape(-1)[0] += 1e-3 * float(np.max(np.abs(g)))
            bad[grad_name] = g
            safetensors_np.save(out, bad)
            _check(f"{name} perturbed {grad_name}", compare(d, quiet=True), 1, results)
            bad = dict(fake)
            del bad[grad_name]
            safetensors_np.save(out, bad)
            _check(f"{name} dropped {grad_name}", compare(d, quiet=True), 2, results)
            bad = dict(fake, **{"grad.not.a.param": np.zeros(3, np.float32)})
            safetensors_np.save(out, bad)
            _check(f"{name} extra name", compare(d, quiet=True), 2, results)
            os.remove(out)
            _check(f"{name} missing file", compare(d, quiet=True), 2, results)
        with tempfile.TemporaryDirectory() as d:  # lr schedule off by one step
            _make_case(d, cfg, seed, dict(kSelfTestTrain, warmup=kSelfTestTrain["warmup"] + 1))
            _check(f"{name} warmup off by one", compare(d, quiet=True), 1, results)
    failed = [label for label, ok in results if not ok]
    if failed:
        print("self-test FAILED: " + ", ".join(failed))
    print(f"self-test: {len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", nargs="?", help="directory written by parallm")
    ap.add_argument("--self-test", action="store_true", help="check this script on tiny models")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.self_test:
        return self_test()
    if not args.dir:
        ap.error("DIR is required (or --self-test)")
    return compare(args.dir)


if __name__ == "__main__":
    sys.exit(main())
