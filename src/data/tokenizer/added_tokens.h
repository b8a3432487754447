// AddedVocabulary: the "added_tokens" of tokenizer.json (special tokens such
// as <|endoftext|> and any tokens added after training). They are cut out of
// the text before anything else sees it: tokens with normalized=false are
// matched in the raw text, tokens with normalized=true in each normalized
// piece between them. Matching is leftmost-longest and non-overlapping, then
// single_word / lstrip / rstrip are applied as Hugging Face applies them.
// Invariant: the pieces returned cover the text in order with no overlap.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/tokenizer/json_fields.h"
#include "data/tokenizer/regex.h"

namespace parallm {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
};

// A span of text, or an added token (id >= 0) with the span it took.
struct TextPiece {
  size_t begin = 0;
  size_t end = 0;
  int32_t id = -1;
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  explicit AddedVocabulary(std::vector<AddedToken> tokens);
  // From the "added_tokens" array (a null or missing one is empty).
  static AddedVocabulary from_json(const Json& list, const std::string& where);

  // Splits text at the tokens whose `normalized` flag equals normalized.
  std::vector<TextPiece> split(std::string_view text, bool normalized) const;

  const AddedToken* find(int32_t id) const;
  const AddedToken* find(std::string_view content) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  // For each first byte, candidate token indices, longest first.
  using Index = std::vector<std::vector<size_t>>;
  bool is_word_char_before(std::string_view text, size_t pos) const;
  bool is_word_char_at(std::string_view text, size_t pos) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;
  Index raw_index_;
  Index normalized_index_;
  std::optional<Regex> word_char_;  // Rust's char::is_alphanumeric, for single_word
};

}  // namespace parallm
