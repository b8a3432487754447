"""The serving benchmark's model: a GPT-2 shaped transformer with random
weights (4 layers, hidden 256, 4 heads, 2048 positions) and a byte-level BPE
tokenizer of about 8k tokens trained on a made-up ASCII corpus, saved as a
Hugging Face directory (tests/infer/tiny_text_model.py's chat template).
Small enough for a 2-core CPU to serve at a few requests a second, big
enough that the forward pass, not HTTP, is the cost.
Invariant: greedy decoding never picks EOS (its tied embedding row is zero,
so its logit is exactly 0 among ~8k random ones), so each request runs to
its max_tokens and the engines see the output lengths the bench asked for."""
import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "infer"))
from tiny_text_model import CHAT_TEMPLATE  # noqa: E402

SHAPE = dict(n_layer=4, n_embd=256, n_head=4, n_positions=2048)
VOCAB = 8192
SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["th", "sh", "ch", "qu"]


def word(rng):
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4)))


def lexicon(seed=0):
    """The corpus's 6000 made-up words."""
    rng = random.Random(seed)
    return [word(rng) for _ in range(6000)]


def corpus(seed=0, n_lines=4000):
    """Deterministic pseudo-English lines: enough distinct words for ~8k merges."""
    rng = random.Random(seed + 1)
    words_of = lexicon(seed)
    punct = [".", ",", "?", "!", ":", ";"]
    lines = []
    for _ in range(n_lines):
        words = [rng.choice(words_of) for _ in range(rng.randint(6, 20))]
        lines.append(" ".join(words) + rng.choice(punct) + " " + str(rng.randint(0, 999)))
    # Chats as the template renders them, so its markers are tokens too.
    for i in range(0, n_lines, 4):
        lines[i] = f"<|system|>{lines[i]}\n<|user|>{lines[i + 1]}\n<|assistant|>{lines[i + 2]}\n"
    return lines


def build(model_dir, seed=0, shape=None):
    """Builds (or reuses, when model_dir holds the same recipe) the model; returns
    model_dir. shape: GPT2Config fields replacing SHAPE's (a bigger model for probes)."""
    shape = dict(SHAPE, **(shape or {}))
    recipe = dict(shape, vocab=VOCAB, seed=seed, version=2)
    stamp = os.path.join(model_dir, "bench_recipe.json")
    if os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f) == recipe:
                return model_dir
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    # No initial byte alphabet: every token is ASCII text from the corpus, so
    # each streamed token is a whole character run (one chunk per token).
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<|endoftext|>"])
    tok.train_from_iterator(corpus(seed), trainer)
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(GPT2Config(**shape, vocab_size=tok.get_vocab_size(), eos_token_id=0,
                                       bos_token_id=0))
    with torch.no_grad():
        model.transformer.wte.weight[0].zero_()  # tied: EOS's logit is 0, never the argmax
    model.eval()
    os.makedirs(model_dir, exist_ok=True)
    model.save_pretrained(model_dir, safe_serialization=True)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>",
                                   bos_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(model_dir)
    with open(stamp, "w") as f:
        json.dump(recipe, f)
    return model_dir


def lexicon_text(n_words, seed, model_seed=0):
    """Text in the corpus's words (so it tokenizes into multi-character tokens)."""
    rng = random.Random(seed)
    words_of = lexicon(model_seed)
    return " ".join(rng.choice(words_of) for _ in range(n_words))


if __name__ == "__main__":
    d = build(sys.argv[1])
    print(d)
