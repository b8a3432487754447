"""Packed documents in `parallm eval` (docs/context_parallel.md): with
--reset-attention-mask --reset-position-ids --eod-mask-loss a window of
several documents must score as its documents run one by one. The judge is
transformers: each document piece of each window (up to and including its
EOD) goes through the model alone, and the loss sums the cross-entropy of
every position whose input is not the EOD, predicting the window's next
token. GPT-2 (learned positions) and LLaMA (RoPE, GQA), 1e-5 relative. Also:
without the flags the loss differs (they act), and the flags without
--eod-token, or an EOD outside the vocabulary, fail with a message naming it.

usage: eval_packed.py PARALLM WORKDIR
"""
import os
import subprocess
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from eval_windows import B, BATCHES, T, close, parallm_eval, write_shard

VOCAB, EOD = 300, 7


def packed_shard(work):
    """Random tokens with an EOD about every 5 tokens: 1 to 5 documents a window."""
    g = torch.Generator().manual_seed(2)
    tokens = torch.randint(8, VOCAB, (B * BATCHES * T + 64,), generator=g)
    tokens[torch.rand(tokens.shape, generator=g) < 0.2] = EOD
    tokens = tokens.tolist()
    shard = os.path.join(work, "packed.bin")
    write_shard(shard, tokens)
    return tokens, shard


def documents_loss(model, tokens):
    """Mean loss over the windows, each document piece run alone."""
    total, count = 0.0, 0
    with torch.no_grad():
        for w in range(B * BATCHES):
            x, y = tokens[w * T:w * T + T], tokens[w * T + 1:w * T + T + 1]
            start = 0
            for p in range(T):
                if x[p] != EOD and p != T - 1:
                    continue
                piece = torch.tensor(x[start:p + 1]).unsqueeze(0)
                logits = model(input_ids=piece).logits.double()[0]
                for i in range(p + 1 - start):
                    if x[start + i] == EOD:
                        continue
                    target = torch.tensor([y[start + i]])
                    total += torch.nn.functional.cross_entropy(logits[i:i + 1], target,
                                                               reduction="sum").item()
                    count += 1
                start = p + 1
    return total / count


def expect_error(exe, model_dir, shard, extra, needle):
    p = subprocess.run([exe, "eval", "--model", model_dir, "--data", shard, "--seq-len", str(T),
                        *extra], capture_output=True, text=True)
    ok = p.returncode != 0 and needle in p.stderr
    print(f"refused {' '.join(extra)}: {'ok' if ok else 'NOT AS EXPECTED'}: "
          f"{p.stderr.strip().splitlines()[-1] if p.stderr.strip() else '(no message)'}")
    return ok


def main():
    exe, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    tokens, shard = packed_shard(work)
    flags = ["--reset-attention-mask", "--reset-position-ids", "--eod-mask-loss",
             "--eod-token", str(EOD)]
    models = {
        "gpt2": GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=32,
                                           n_layer=2, n_head=4, initializer_range=0.2)),
        "llama": LlamaForCausalLM(LlamaConfig(vocab_size=VOCAB, hidden_size=32,
                                              intermediate_size=64, num_hidden_layers=2,
                                              num_attention_heads=4, num_key_value_heads=2,
                                              max_position_embeddings=64, rms_norm_eps=1e-5,
                                              initializer_range=0.2, tie_word_embeddings=False)),
    }
    ok = True
    for name, model in models.items():
        model = model.float().eval()
        src = os.path.join(work, name)
        model.save_pretrained(src, safe_serialization=True)
        packed = parallm_eval(exe, src, shard, *flags)
        ok = close(packed, documents_loss(model, tokens), f"{name} packed documents") and ok
        plain = parallm_eval(exe, src, shard)
        acts = abs(plain - packed) > 1e-4 * abs(packed)  # 10x the agreement bound
        print(f"{name} without the flags: {plain:.6f} ({'differs' if acts else 'SAME'})")
        ok = ok and acts
    src = os.path.join(work, "gpt2")
    ok = expect_error(exe, src, shard, ["--reset-attention-mask"], "--eod-token") and ok
    ok = expect_error(exe, src, shard, ["--eod-mask-loss", "--eod-token", "300"],
                      "--eod-token 300") and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
