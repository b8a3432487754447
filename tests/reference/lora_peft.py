"""LoRA adapters against the peft package (docs/lora.md), on a tiny
LlamaForCausalLM made by transformers:
1. adapters made by peft (non-zero B, so they matter; plain and rsLoRA
   scaling) are read by `parallm eval --lora-adapter` with the same loss
   (1e-5 relative);
2. parallm trains adapters from one of them (`parallm train --lora-adapter
   ... --save-hf`), and peft loads what parallm wrote with no missing or
   unexpected keys and the same config, giving parallm's loss;
3. `parallm export --merge-lora` writes a merged HF directory whose logits
   (transformers) equal the unmerged peft model's within 1e-5.

usage: lora_peft.py PARALLM WORKDIR
"""
import json
import os
import sys

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from peft.utils import load_peft_weights, set_peft_model_state_dict
from transformers import LlamaConfig, LlamaForCausalLM

from eval_windows import B, T, hf_loss, random_shard, run, windows
from eval_windows import close as close_to
from eval_windows import parallm_eval as eval_of

TARGETS = ["q_proj", "v_proj", "o_proj", "down_proj"]


def hf_logits(model, tokens):
    with torch.no_grad():
        return torch.cat([model(input_ids=x).logits[0] for x, _ in windows(tokens)])


def parallm_eval(exe, model_dir, shard, adapter=None):
    return eval_of(exe, model_dir, shard, *(["--lora-adapter", adapter] if adapter else []))


def close(a, b, what):
    return close_to(a, b, what, "peft")


def base_model(src):
    return LlamaForCausalLM.from_pretrained(src).float().eval()


def main():
    exe, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=300, hidden_size=48, intermediate_size=80, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                      rms_norm_eps=1e-5, rope_theta=10000.0, initializer_range=0.1,
                      tie_word_embeddings=False)
    src = os.path.join(work, "base")
    LlamaForCausalLM(cfg).float().save_pretrained(src, safe_serialization=True)
    tokens, shard = random_shard(work, cfg.vocab_size)
    base_loss = hf_loss(base_model(src), tokens)
    ok = True

    # 1. peft's adapters read by parallm.
    for rslora in (False, True):
        torch.manual_seed(2)
        lc = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.05, target_modules=TARGETS,
                        use_rslora=rslora, task_type="CAUSAL_LM")
        pm = get_peft_model(base_model(src), lc)
        with torch.no_grad():
            for name, p in pm.named_parameters():
                if "lora_B" in name:
                    p.normal_(0.0, 0.2)
        pm.eval()
        ref = hf_loss(pm, tokens)
        assert abs(ref - base_loss) > 1e-3, "the adapter must change the loss"
        ad = os.path.join(work, "peft_rslora" if rslora else "peft")
        pm.save_pretrained(ad)
        what = f"peft adapter{' (rslora)' if rslora else ''} read by parallm eval"
        ok = close(parallm_eval(exe, src, shard, ad), ref, what) and ok

    # 2. parallm trains from peft's adapter and writes its own.
    ours = os.path.join(work, "ours")
    run([exe, "train", "--init-from", src, "--lora-adapter", os.path.join(work, "peft"),
         "--data", shard, "--steps", "3", "--lr", "1e-2", "--seq-len", str(T),
         "--micro-batch-size", str(B), "--global-batch-size", str(B), "--save-hf", ours])
    with open(os.path.join(ours, "adapter_config.json")) as f:
        conf = json.load(f)
    conf_ok = (conf["peft_type"] == "LORA" and conf["r"] == 4 and conf["lora_alpha"] == 8 and
               sorted(conf["target_modules"]) == sorted(TARGETS) and not conf["use_rslora"] and
               conf["base_model_name_or_path"] == src)
    print("adapter_config.json:", "ok" if conf_ok else f"WRONG {conf}")
    ok = ok and conf_ok
    ours_loss = parallm_eval(exe, src, shard, ours)
    pm = PeftModel.from_pretrained(base_model(src), ours).eval()
    fresh = get_peft_model(base_model(src), LoraConfig(r=4, lora_alpha=8, target_modules=TARGETS))
    res = set_peft_model_state_dict(fresh, load_peft_weights(ours))
    lora_keys = [k for k in fresh.state_dict() if "lora_" in k]
    missing = [k for k in res.missing_keys if "lora_" in k]
    bad = missing + list(res.unexpected_keys)
    print(f"parallm's adapter in peft: {len(lora_keys)} lora tensors, missing/unexpected:",
          bad or "none")
    ok = ok and not bad and len(lora_keys) == 4 * 2 * cfg.num_hidden_layers
    moved = abs(ours_loss - parallm_eval(exe, src, shard, os.path.join(work, "peft"))) > 1e-4
    print("training moved the adapters:", "ok" if moved else "NO")
    ok = ok and moved
    ok = close(ours_loss, hf_loss(pm, tokens), "parallm's adapter in peft") and ok

    # 3. Merged: parallm's export against peft's unmerged logits.
    merged = os.path.join(work, "merged")
    run([exe, "export", "--merge-lora", "--base", src, "--lora-adapter", ours, "--out", merged])
    lm = hf_logits(base_model(merged), tokens)
    lu = hf_logits(pm, tokens)
    diff = (lm - lu).abs().max().item()
    print(f"merged (parallm export) vs unmerged (peft) logits: max |diff| {diff:.3g}",
          "ok" if diff <= 1e-5 else "DIFFERENT")
    ok = ok and diff <= 1e-5
    ok = close(parallm_eval(exe, merged, shard), ours_loss, "merged eval vs unmerged") and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
