// Normalizers of tokenizer.json that SentencePiece-converted tokenizers use:
// Sequence, Prepend (e.g. "▁" before a non-empty piece) and Replace (e.g.
// " " -> "▁"). Unicode normalization forms (NFC, NFKC, ...), Lowercase,
// BertNormalizer and the rest are refused by name when loading.
// Invariant: a normalizer works on one piece of text between added tokens.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "data/tokenizer/json_fields.h"

namespace parallm {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string text) const = 0;
};

// nullptr for a JSON null (no normalizer).
std::unique_ptr<Normalizer> make_normalizer(const Json& j, const std::string& where);

}  // namespace parallm
