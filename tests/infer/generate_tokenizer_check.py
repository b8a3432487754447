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

from tiny_text_model import build

work, parallm = sys.argv[1], sys.argv[2]
model_dir = os.path.join(work, "model")
model, fast = build(model_dir)

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
