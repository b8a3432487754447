"""Many LoRA adapters in one serving batch against the base model alone
(docs/serving.md, "Many LoRA adapters"): one `parallm serve` with eight
peft-made adapters (rank R on every linear of a LLaMA shaped model, random
weights) answers the same load three ways, alternating, in one run:
  base   every request names the base model (no adapter work at all);
  mixed  requests name the 8 adapters in turn, so each step's batch holds
         all eight (one low-rank GEMM pair per adapter and linear);
  one    every request names adapter a0 (one group per step).
Each load is CONCURRENCY requests at once of PROMPT tokens and NEW greedy
tokens (EOS's head row is zero, so greedy never ends early); tokens/s is
completion tokens over wall time. Prints one JSON line per run and a table.
Usage: lora_serving_bench.py WORKDIR PARALLM [THREADS] [RANK] [ROUNDS]"""
import concurrent.futures
import copy
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "infer"))
from check_support import openai_client  # noqa: E402

import torch  # noqa: E402
from peft import LoraConfig, get_peft_model  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402

work, parallm = sys.argv[1], sys.argv[2]
threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
rank = int(sys.argv[4]) if len(sys.argv) > 4 else 16
rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 3
CONCURRENCY, PROMPT, NEW = 16, 32, 48
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
os.makedirs(work, exist_ok=True)

corpus = " ".join(f"w{i} x{i * 7 % 101} y{i * 13 % 97}" for i in range(2000))
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.train_from_iterator([corpus], trainers.BpeTrainer(
    vocab_size=2048, special_tokens=["<|endoftext|>"],
    initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
torch.manual_seed(0)
base = LlamaForCausalLM(LlamaConfig(
    vocab_size=tok.get_vocab_size(), hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
    num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=512,
    tie_word_embeddings=False, eos_token_id=0, bos_token_id=0))
with torch.no_grad():
    for p in base.parameters():
        if p.dim() == 2:
            torch.nn.init.normal_(p, std=0.05)
    base.lm_head.weight[0].zero_()  # EOS's logit is exactly 0: greedy never picks it
base.save_pretrained(os.path.join(work, "model"), safe_serialization=True)
PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>").save_pretrained(
    os.path.join(work, "model"))
modules = []
for i in range(8):
    torch.manual_seed(10 + i)
    pm = get_peft_model(copy.deepcopy(base), LoraConfig(r=rank, lora_alpha=2 * rank,
                                                        target_modules=TARGETS, lora_dropout=0.0))
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if "lora_B" in n:
                torch.nn.init.normal_(p, std=0.01)
    d = os.path.join(work, f"a{i}")
    pm.save_pretrained(d, safe_serialization=True)
    modules.append(f"a{i}={d}")

prompt = [int(t) for t in torch.randint(1, tok.get_vocab_size(), (PROMPT,))]
server = subprocess.Popen(
    [parallm, "serve", "--model", os.path.join(work, "model"), "--served-model-name", "base",
     "--port", "0", "--threads", str(threads), "--max-running", str(CONCURRENCY),
     "--max-batched-tokens", "1024", "--no-prefix-cache", "--lora-modules", *modules,
     "--max-lora-rank", str(rank)], stdout=subprocess.PIPE, text=True)
results = []
try:
    client, port = openai_client(server)

    def one(model):
        r = client.completions.create(model=model, prompt=prompt, max_tokens=NEW, temperature=0)
        return r.usage.completion_tokens

    def load(kind):
        names = {"base": ["base"] * CONCURRENCY, "one": ["a0"] * CONCURRENCY,
                 "mixed": [f"a{i % 8}" for i in range(CONCURRENCY)]}[kind]
        t0 = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(CONCURRENCY) as ex:
            tokens = sum(ex.map(one, names))
        dt = time.perf_counter() - t0
        return {"load": kind, "tokens": tokens, "seconds": round(dt, 3),
                "tok_s": round(tokens / dt, 1)}

    load("base")  # warm-up
    for _ in range(rounds):
        for kind in ("base", "mixed", "one"):
            results.append(load(kind))
            print(json.dumps(results[-1]), flush=True)
finally:
    server.terminate()
    server.wait(timeout=30)

best = {k: max(r["tok_s"] for r in results if r["load"] == k) for k in ("base", "mixed", "one")}
med = {}
for k in best:
    v = sorted(r["tok_s"] for r in results if r["load"] == k)
    med[k] = v[len(v) // 2]
print(f"\n{CONCURRENCY} concurrent requests, {PROMPT} prompt + {NEW} new tokens each; LLaMA "
      f"hidden 512, 4 layers, SwiGLU 1376; 8 adapters of rank {rank} on all 7 linears; "
      f"{threads} threads, {rounds} rounds\n")
print("| load | median tokens/s | best tokens/s | median vs base |")
print("| --- | --- | --- | --- |")
for k, label in (("base", "base model only"), ("mixed", "8 adapters mixed in every batch"),
                 ("one", "one adapter (a0) for all")):
    print(f"| {label} | {med[k]:.1f} | {best[k]:.1f} | {med[k] / med['base']:.2f}x |")
