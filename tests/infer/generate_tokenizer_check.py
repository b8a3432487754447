"""`parallm generate` with a model directory's own tokenizer.json and chat
template, judged by transformers: a GPT-2 and a byte-level BPE tokenizer
(with a chat template) are made here and saved together; parallm generates
8 greedy tokens for a plain prompt (with CJK) and for a --chat prompt.
transformers encodes the same prompt (apply_chat_template for the chat one)
and runs its model over prompt + parallm's tokens: every step's chosen token
must be its argmax and parallm's log-probability must equal its own, which
holds only when both encoded the prompt to the same ids.
Usage: generate_tokenizer_check.py WORKDIR PARALLM"""
import json, os, subprocess, sys

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

work, parallm = sys.argv[1], sys.argv[2]
model_dir = os.path.join(work, "model")
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train_from_iterator(["hello world, the quick brown fox jumps over the lazy dog. 你好世界"] * 50,
                        trainer)
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=128,
                                   vocab_size=tok.get_vocab_size(), eos_token_id=0,
                                   bos_token_id=0))
for p in model.parameters():
    torch.nn.init.normal_(p, std=0.3)  # well-separated logits: no near-ties
model.eval()
model.save_pretrained(model_dir, safe_serialization=True)
fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>",
                               bos_token="<|endoftext|>")
fast.chat_template = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
                      "{% if add_generation_prompt %}<|assistant|>{% endif %}")
fast.save_pretrained(model_dir)

cases = [("plain", ["--prompt", "hello world 你好"], fast("hello world 你好").input_ids),
         ("chat", ["--prompt", "hello fox", "--chat", "--system", "be brief"],
          fast.apply_chat_template([{"role": "system", "content": "be brief"},
                                    {"role": "user", "content": "hello fox"}],
                                   add_generation_prompt=True))]
failed = 0
for name, args, prompt in cases:
    run = subprocess.run([parallm, "generate", "--model", model_dir, "--max-new-tokens", "8",
                          "--temperature", "0", "--logprobs", "1"] + args,
                         capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    if run.returncode != 0:
        print(f"{name}: parallm failed: {run.stderr}")
        failed += 1
        continue
    got = json.loads(run.stdout.splitlines()[0])
    ids = torch.tensor([prompt + got["tokens"]])
    with torch.no_grad():
        logp = model(ids).logits[0].log_softmax(-1)
    worst = 0.0
    for i, step in enumerate(got["logprobs"]):
        row = logp[len(prompt) - 1 + i]
        if int(row.argmax()) != step["token"]:
            print(f"{name}: step {i}: parallm chose {step['token']}, transformers {int(row.argmax())}")
            failed += 1
        worst = max(worst, abs(float(row[step["token"]]) - step["logprob"]))
    ok = worst < 1e-4
    failed += 0 if ok else 1
    print(f"{name}: prompt {len(prompt)} ids, {len(got['tokens'])} tokens, "
          f"max |logprob diff| {worst:.2e} {'ok' if ok else 'FAIL'}")
sys.exit(1 if failed else 0)
