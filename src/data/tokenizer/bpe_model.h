// BpeModel: the "BPE" model of tokenizer.json. A pre-token is cut into
// characters (unknown ones become <0xNN> byte tokens under byte_fallback, or
// the unk token, fused when fuse_unk), then the adjacent pair with the lowest
// merge rank is merged, leftmost first, until no pair has a rank.
// ignore_merges: a pre-token that is itself in the vocabulary is one token.
// Invariant: every merge's two tokens and their concatenation are in the
// vocabulary (checked on load), so merging only ever yields known ids.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "data/tokenizer/json_fields.h"

namespace parallm {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using Vocab = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct BpeOptions {
  std::optional<std::string> unk_token;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
};

class BpeModel {
 public:
  // merges in rank order (rank = index); where names the source in errors.
  BpeModel(Vocab vocab, const std::vector<std::pair<std::string, std::string>>& merges,
           BpeOptions options, std::string_view where);
  // From the "model" object of tokenizer.json.
  static BpeModel from_json(const Json& model, std::string_view where);
  // id_to_token_ points into vocab_'s nodes, which a move keeps and a copy would not.
  BpeModel(BpeModel&&) = default;
  BpeModel(const BpeModel&) = delete;
  BpeModel& operator=(const BpeModel&) = delete;

  // Appends the ids of one pre-token.
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  const std::string* id_to_token(int32_t id) const;  // nullptr when unknown
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }

 private:
  // Merges symbols in place by rank until none applies.
  void merge_all(std::vector<int32_t>& symbols) const;

  Vocab vocab_;
  std::vector<const std::string*> id_to_token_;  // into vocab_ keys; nullptr for gaps
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // (a,b) -> (rank, id)
  std::array<int32_t, 256> byte_ids_{};                               // <0xNN> ids, -1 when missing
  std::optional<int32_t> unk_id_;
  BpeOptions options_;
};

}  // namespace parallm
