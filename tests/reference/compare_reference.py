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

# Element-wise: every element must satisfy |a - b| <= atol + rtol * |b|, b the
# reference. rtol does the work; the floor atol = floor * (max |b| over the
# element's row, the last axis; over the whole tensor when 1-D) only covers
# elements that cancel to near zero, whose fp32 error scales with the row's
# summands rather than with the result. Per row, not per tensor: a token
# table's gradient has rows of very different size (a token used once next
# to one used often) and, untied, all-zero rows for unused tokens, which
# therefore must match exactly; a norm or max over the tensor would hide a
# wrong small row (the comparison before this one did).
kTol = {
    # fp32, one pass: the sides differ by summation order only. Measured with
    # the self-test (float64 against float32, no worse than two float32
    # orders): worst element 4.6e-5 relative but 1.7e-6 of its row's max (a
    # weight gradient summing terms that cancel), so the floor is 1e-5 of the
    # row max and rtol 1e-5 (about 100 float32 ulps).
    ("fp32", "forward"): (1e-5, 1e-5),
    ("fp32", "grad"): (1e-5, 1e-5),
    # After 5 AdamW steps: Adam divides by sqrt(v) + eps, so an element whose
    # gradient is near eps carries its gradient's rounding noise into the
    # update amplified (self-test: 6.8e-7 on a 3.8e-3 weight whose step-0
    # gradient was 3e-7): 1e-4 relative, floor 1e-4 of the row max.
    ("fp32", "loss_at_step"): (1e-4, 1e-4),
    ("fp32", "step"): (1e-4, 1e-4),
    # bf16: both sides round the same GEMM operands to bf16 (8-bit mantissa,
    # unit roundoff u = 2^-8 = 3.9e-3) and keep everything else fp32, so two
    # correct implementations differ only where a summation-order difference
    # flips a rounding; a flipped gradient element changes the next GEMM's
    # result, whose rounding then flips more elements, so the differences grow
    # along the backward pass. Measured on both families, as worst ratios at
    # rtol = floor = 1e-3, against the same emulation in float64 (two correct
    # implementations): logits 1.9, gradients 5.5, losses along the steps 1.7,
    # parameters after 5 steps 50; GEMMs left unrounded (plain fp32 PyTorch)
    # reach 9, 34, 2-5 and 147. So forward and losses at u, gradients at 4u
    # (2x from either side), and the parameters at 32u = 1/8: Adam turns a
    # gradient whose sign the rounding leaves open into a difference of one
    # lr-sized step (1e-2 measured; a weight row's max is ~0.2), so this last
    # check is coarse; it still fails 3.5-4x on bf16 weight copies not
    # refreshed after each update, which the per-step losses catch 40x over.
    # parallm itself sits far closer than the float64 emulation: its logits
    # are within 5e-7 of the float32 emulation.
    ("bf16", "forward"): (2.0 ** -8, 2.0 ** -8),
    ("bf16", "grad"): (2.0 ** -6, 2.0 ** -6),
    ("bf16", "loss_at_step"): (2.0 ** -8, 2.0 ** -8),
    ("bf16", "step"): (2.0 ** -3, 2.0 ** -3),
}
kTrainKeys = ("lr", "warmup", "total_steps", "min_lr_ratio", "weight_decay",
              "beta1", "beta2", "eps", "clip", "steps", "precision")
# The token tables whose gradient is sparse when untied (rows of unused tokens 0).
kTokenTables = ("model.embed_tokens.weight", "transformer.wte.weight")


class MissingInput(Exception):
    """A file, a key or a tensor name that must be there is not."""


def elem_check(a, b, rtol, floor):
    """Worst ratio |a-b| / (atol + rtol|b|) (pass: <= 1; 0/0 counts as 0), the
    number of elements over 1, and the worst element's index; inf on a shape
    mismatch."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return math.inf, a.size, None
    if a.size == 0:
        return 0.0, 0, None
    mag = np.abs(b)
    scale = np.max(mag, axis=-1, keepdims=True) if b.ndim >= 2 else np.max(mag)
    bound = floor * scale + rtol * mag
    diff = np.abs(a - b)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(diff == 0, 0.0, diff / bound)  # bound 0: an all-zero row, exact
    worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    return float(ratio[worst]), int(np.sum(ratio > 1.0)), worst


def token_rows_note(b):
    """A token table's gradient: nonzero rows, and the smallest nonzero row's
    max |b| relative to the largest (what a tensor-wide max would blur)."""
    row = np.max(np.abs(np.asarray(b, dtype=np.float64)), axis=1)
    used = row > 0
    small = float(np.min(row[used]) / np.max(row)) if used.any() else 0.0
    return f"{int(used.sum())} of {row.size} rows nonzero, smallest row max {small:.2e} of the largest"


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
    if train["precision"] not in ("fp32", "bf16"):
        raise MissingInput(f"train.json: precision {train['precision']!r} is not fp32 or bf16")
    model = torch_model.load_hf_dir(model_dir, dtype, bf16_gemm=train["precision"] == "bf16")
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


def _where(a, b, i, grad):
    """The worst element; a tiny step-0 gradient there points to Adam amplifying
    rounding noise (see kSelfTestTrain) rather than a real bug."""
    note = f"worst at {tuple(int(x) for x in i)}: parallm {a[i]:.6e} reference {b[i]:.6e}"
    if grad is not None:
        note += f"; step-0 grad there {grad[i]:.3e} (max |grad| {np.max(np.abs(grad)):.3e})"
    return note


def tolerance(name, precision):
    """(rtol, floor) for a tensor name (kTol)."""
    kind = name.split(".")[0]
    if kind.startswith("step"):
        kind = "step"
    elif kind not in ("grad", "loss_at_step"):
        kind = "forward"
    return kTol[(precision, kind)]


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
    precision = train["precision"]
    for name in sorted(ref):
        if name not in ours:
            say(f"MISSING  {name}: not in parallm.safetensors")
            failed += 1
            continue
        rtol, floor = tolerance(name, precision)
        ratio, bad, at = elem_check(ours[name], ref[name], rtol, floor)
        ok = ratio <= 1.0
        shape_note = "" if ours[name].shape == ref[name].shape else \
            f"  shape {ours[name].shape} != reference {ref[name].shape}"
        say(f"{'PASS' if ok else 'FAIL'}  {name}  worst |a-b|/(atol+rtol|b|)={ratio:.3e}"
            f"  rtol={rtol:.1e} floor={floor:.1e}{shape_note}")
        if name.split(".", 1)[-1] in kTokenTables and name.startswith("grad."):
            say("      " + token_rows_note(ref[name]))
        if not ok and at is not None:
            say(f"      {bad} of {ref[name].size} elements out; " +
                _where(ours[name], ref[name], at, ref.get("grad." + name.split(".", 1)[-1])
                       if name.startswith("step") else None))
        kind = name.split(".")[0]
        worst[kind] = max(worst.get(kind, 0.0), ratio)
        passed, failed = passed + ok, failed + (not ok)
    extra = sorted(set(ours) - set(ref))
    for name in extra:
        say(f"MISSING  {name}: in parallm.safetensors but not produced by the reference")
        failed += 1
    say(f"precision {precision}; worst ratio to the tolerance by kind: " +
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
                  "steps": 5, "precision": "fp32"}


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
            table = next((f"grad.{t}" for t in kTokenTables if f"grad.{t}" in fake), None)
            if table is not None:  # a wrong small row of the token table's gradient
                bad = dict(fake)
                g = bad[table].copy()
                rows = np.max(np.abs(g), axis=1)
                r = int(np.argmin(np.where(rows > 0, rows, np.inf)))
                c = int(np.argmax(np.abs(g[r])))
                g[r, c] += 20 * kTol[("fp32", "forward")][0] * abs(g[r, c])
                old_metric = abs(g[r, c] - fake[table][r, c]) / np.max(np.abs(fake[table]))
                bad[table] = g
                safetensors_np.save(out, bad)
                _check(f"{name} row {r} of {table} off by 20 rtol (max-normalised "
                       f"{old_metric:.1e})", compare(d, quiet=True), 1, results)
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
