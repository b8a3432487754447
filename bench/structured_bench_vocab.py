"""The structured-output benchmark's vocabulary: a byte-level BPE of 50,257
tokens (GPT-2's size, its pre-tokenizer and decoder) trained with Hugging
Face tokenizers on a made-up corpus (no GPT-2 tokenizer ships with the
machine): syllable words with and without a leading space, capitalised
ones, numbers, JSON and code punctuation runs, and some CJK text, so the
trie has GPT-2's mix of word pieces, digit runs, punctuation and multi-byte
characters. Saved as DIR/tokenizer.json (reused when already there).
Usage: structured_bench_vocab.py DIR"""
import os
import random
import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

out = sys.argv[1]
if os.path.exists(os.path.join(out, "tokenizer.json")):
    sys.exit(0)
os.makedirs(out, exist_ok=True)
rng = random.Random(0)
syl = [c + v for c in "bcdfghjklmnprstvwxz" for v in "aeiouy"] + ["th", "sh", "ch", "qu", "st"]
words = ["".join(rng.choice(syl) for _ in range(rng.randint(1, 5))) for _ in range(120000)]
cjk = [chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(3000)]
lines = []
for _ in range(60000):
    parts = []
    for _ in range(rng.randint(6, 16)):
        r = rng.random()
        w = rng.choice(words)
        if r < 0.1:
            w = w.capitalize()
        elif r < 0.2:
            w = str(rng.randint(0, 10 ** rng.randint(1, 6)))
        elif r < 0.27:
            w = '{"' + w + '": ' + str(rng.randint(0, 999)) + "},"
        elif r < 0.32:
            w = "".join(rng.choice(cjk) for _ in range(rng.randint(1, 4)))
        elif r < 0.36:
            w = rng.choice(["(", ")", "[", "]", "{", "}", "==", "->", "\n", "\t", "  ", "...",
                            "\":", "\", \""]) + w
        parts.append(w)
    lines.append(" ".join(parts))
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=50257, special_tokens=["<|endoftext|>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                              show_progress=False)
tok.train_from_iterator(lines, trainer)
tok.save(os.path.join(out, "tokenizer.json"))
print(f"vocabulary {tok.get_vocab_size()} tokens in {out}", file=sys.stderr)
