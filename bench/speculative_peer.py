#!/usr/bin/env python3
"""transformers' side of bench/speculative_bench.sh: greedy generate() on an HF
directory from a prompt given as UTF-8 bytes (token id = byte value, as
parallm's bytes tokenizer reads a model directory without tokenizer.json),
plain, with prompt lookup (prompt_lookup_num_tokens, transformers' own
n-gram speculator), or with an assistant model (assisted generation, k tokens a
step, constant schedule). Decode time = generate(N) - generate(1), best of reps.
Prints one JSON line: decode tokens/s and the token ids.
Usage: speculative_peer.py DIR PROMPT NEW THREADS REPS DRAFT [ASSISTANT_DIR]
  (DRAFT 0: plain; with ASSISTANT_DIR, DRAFT is the assistant's k)."""
import json
import os
import sys
import time

os.environ.pop("OPENBLAS_CORETYPE", None)  # let OpenBLAS detect the CPU (infer_torch_peer.py)
import torch  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402


def main():
    path, prompt, new, threads, reps, draft = sys.argv[1:7]
    new, threads, reps, draft = int(new), int(threads), int(reps), int(draft)
    torch.set_num_threads(threads)
    model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32).eval()
    ids = torch.tensor([list(prompt.encode())])
    extra = {"prompt_lookup_num_tokens": draft} if draft > 0 else {}
    kind = "ngram"
    if len(sys.argv) > 7 and draft > 0:
        kind = "draft_model"
        assistant = AutoModelForCausalLM.from_pretrained(sys.argv[7],
                                                         torch_dtype=torch.float32).eval()
        assistant.generation_config.num_assistant_tokens = draft
        assistant.generation_config.num_assistant_tokens_schedule = "constant"
        extra = {"assistant_model": assistant}

    def run(n):
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                                 pad_token_id=0, **extra)
        return time.perf_counter() - t0, out[0, ids.shape[1]:].tolist()

    first = min(run(1)[0] for _ in range(reps))
    best, tokens = min(run(new) for _ in range(reps))
    print(json.dumps({"impl": "transformers", "kind": kind, "draft": draft,
                      "decode_tok_s": (new - 1) / max(best - first, 1e-9), "tokens": tokens}))


if __name__ == "__main__":
    main()
