// TokenVocabulary: what a grammar needs of the model's vocabulary, built
// once per served tokenizer: each id's bytes as the tokenizer decodes them
// (byte-level BPE pieces, or SentencePiece pieces with their leading space
// kept), the byte trie over them, and the ids that end generation. Special
// tokens and ids past the tokenizer get no bytes, so no grammar allows them;
// an EOS id is allowed exactly where the grammar may end.
// Read-only once built: requests on any thread share one.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer/tokenizer.h"
#include "infer/structured/token_trie.h"

namespace parallm::structured {

class TokenVocabulary {
 public:
  // bytes[id] for ids 0..V-1 ("" = never allowed); eos: ids that end a sequence.
  TokenVocabulary(std::vector<std::string> bytes, std::vector<int32_t> eos_ids);
  // The model's vocab_size rows (may exceed the tokenizer's ids).
  static std::shared_ptr<const TokenVocabulary> from_tokenizer(const Tokenizer& tok,
                                                               int64_t vocab_size,
                                                               std::vector<int32_t> eos_ids);
  int64_t size() const { return static_cast<int64_t>(bytes_.size()); }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  const std::vector<int32_t>& eos_ids() const { return eos_; }
  const TokenTrie& trie() const { return trie_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<int32_t> eos_;
  TokenTrie trie_;
};

}  // namespace parallm::structured
