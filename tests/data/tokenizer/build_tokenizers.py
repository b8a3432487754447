"""Builds the three parity-test tokenizers with Hugging Face `tokenizers` itself.

Each is a small BPE trained on train_corpus() and saved as DIR/<name>/tokenizer.json:
  gpt2    byte-level BPE: ByteLevel pre-tokenizer (GPT-2 regex) and decoder
  llama3  Split(Llama-3 regex, Isolated) + ByteLevel(use_regex=False), BPE
          ignore_merges (with whole-word vocabulary entries that no merge path
          reaches, so ignore_merges changes ids), TemplateProcessing BOS
  sp      SentencePiece style: Metaspace(first), BPE byte_fallback with the 256
          <0xNN> tokens in the model vocabulary, unk + fuse_unk, a decoder
          Sequence(Replace, ByteFallback, Fuse, Strip), TemplateProcessing "<s> $A"
  sp_legacy  Llama-2's older form of the same: normalizer Prepend("▁") +
          Replace(" ", "▁") and no pre-tokenizer (a whole line is one word)
Every one has added special tokens the corpus uses inside text.
"""
import json
import os
import sys

from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                        pre_tokenizers, processors, trainers)

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def train_corpus():
    base = [
        "The quick brown fox jumps over the lazy dog. It's what we're doing, isn't it?",
        "Tokenization splits text into pieces; parallelism splits work across ranks.",
        "def forward(self, x):\n    return self.proj(x) + x  # residual\n",
        "for (int i = 0; i < n; ++i) {\n  sum += a[i] * b[i];\n}\n",
        "In 2024 the model saw 1234567 tokens at 3.14159 per second.",
        "東京は日本の首都です。机器学习很有趣。",
        "Emoji: 😀 🎉 👍 and more text after them.",
        "    indented line with    several   spaces",
        "HELLO World, I'M here and YOU'LL see.",
    ]
    return base * 50


def special(tok, names):
    tok.add_special_tokens(names)


def build_gpt2(path):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(train_corpus(), trainer)
    special(tok, ["<|im_start|>", "<|im_end|>"])
    # A non-special added token (normalized=True) that must stand alone.
    tok.add_tokens([AddedToken("parallm", single_word=True)])
    tok.save(path)


def build_llama3(path):
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700,
                                  special_tokens=["<|begin_of_text|>", "<|end_of_text|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(train_corpus(), trainer)
    # Whole words no merge path builds: ignore_merges emits them as one token.
    j = json.loads(tok.to_str())
    vocab = j["model"]["vocab"]
    next_id = max(max(vocab.values()), max(t["id"] for t in j["added_tokens"])) + 1
    for word in ["Ġparallelism", "Ġtokenizers", "Ġxyzzy", "Hello"]:
        if word not in vocab:
            vocab[word] = next_id
            next_id += 1
    tok = Tokenizer.from_str(json.dumps(j))
    special(tok, ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"])
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                      special_tokens=[("<|begin_of_text|>", bos)]),
    ])
    tok.save(path)


def build_sp(path, legacy=False):
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    if legacy:
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                               normalizers.Replace(" ", "▁")])
    else:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first",
                                                     split=True)
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    trainer = trainers.BpeTrainer(vocab_size=700,
                                  special_tokens=["<unk>", "<s>", "</s>"] + byte_tokens,
                                  limit_alphabet=60, show_progress=False)
    tok.train_from_iterator(train_corpus(), trainer)
    # As in Llama-2, the byte tokens live in the model vocabulary only: they are
    # not added tokens, so "<0x41>" typed in text is not one token.
    j = json.loads(tok.to_str())
    j["added_tokens"] = [t for t in j["added_tokens"] if t["content"] not in byte_tokens]
    tok = Tokenizer.from_str(json.dumps(j))
    special(tok, ["<|user|>", "<|assistant|>"])
    # RoBERTa's <mask>: it takes the spaces before it.
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, normalized=False)])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A",
                                                       special_tokens=[("<s>", 1)])
    assert tok.token_to_id("<s>") == 1
    tok.save(path)


BUILDERS = {"gpt2": build_gpt2, "llama3": build_llama3, "sp": build_sp,
            "sp_legacy": lambda path: build_sp(path, legacy=True)}


def main_into(out):
    for name, build in BUILDERS.items():
        os.makedirs(os.path.join(out, name), exist_ok=True)
        build(os.path.join(out, name, "tokenizer.json"))


def main():
    main_into(sys.argv[1])


if __name__ == "__main__":
    main()
