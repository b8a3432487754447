// Pre-tokenizers of tokenizer.json: ByteLevel (GPT-2 regex, optional prefix
// space, bytes -> table characters), Split (a regex, Isolated / Removed /
// MergedWithPrevious / MergedWithNext), Metaspace (" " -> "▁", prepend
// first / always / never, split before each "▁") and Sequence. Others are
// refused by name. Invariant: each piece is cut and rewritten independently;
// at_text_start marks the piece that begins at offset 0 of the input, which
// is the one Metaspace's "first" scheme prepends to.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer/json_fields.h"

namespace parallm {

struct PreToken {
  std::string text;
  bool at_text_start = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void pre_tokenize(std::vector<PreToken>& pieces) const = 0;
};

// GPT-2's pattern, which ByteLevel(use_regex=true) splits with.
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// nullptr for a JSON null (no pre-tokenizer).
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& j, const std::string& where);

}  // namespace parallm
