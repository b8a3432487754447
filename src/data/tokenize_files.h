// tokenize_files: text files -> llm.c train/val token shards, with the built-in
// ByteTokenizer or any Tokenizer (a Hugging Face tokenizer.json). Each file is
// one document, encoded with add_special_tokens (so a tokenizer that adds a
// BOS starts each document with it); documents are joined by the EOS (d0 EOS
// d1 ...; the byte tokenizer's EOS is its end-of-text 256). Shards hold uint16
// tokens when the vocabulary fits 65536 ids, else uint32. The val shard is the
// tail of the stream. With TokenizeFormat::Megatron the output is a Megatron
// indexed dataset per split (PREFIX_train.bin/.idx, PREFIX_val.bin/.idx): one
// sequence and document per input, each ending in the EOS as Megatron's
// preprocess_data.py --append-eod writes it (uint16 when the vocabulary fits
// 65536 ids, else int32); the document the val cut falls in is split in two.
// Invariant: every input is read before anything is written, so a missing or
// unreadable input leaves no output; each shard is written atomically.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace parallm {

class Tokenizer;

enum class TokenizeFormat { LlmC, Megatron };

struct TokenizeSummary {
  // llm.c: <out_prefix>_train.bin; Megatron: the prefix <out_prefix>_train
  std::string train_path;
  std::string val_path;  // likewise _val, or "" when val_fraction == 0
  int64_t train_tokens = 0;
  int64_t val_tokens = 0;
  int64_t documents = 0;  // input files
  int64_t input_bytes = 0;
};

// val_fraction in [0, 1): the last round(val_fraction * N) tokens (at least 1
// when val_fraction > 0) go to the val shard; the train shard keeps at least 1.
// With 0, no val file is written (an old one is left alone). Prints nothing.
TokenizeSummary tokenize_files(const std::vector<std::string>& inputs,
                               const std::string& out_prefix, double val_fraction);
TokenizeSummary tokenize_files(const std::vector<std::string>& inputs,
                               const std::string& out_prefix, double val_fraction,
                               const Tokenizer& tokenizer,
                               TokenizeFormat format = TokenizeFormat::LlmC);

}  // namespace parallm
