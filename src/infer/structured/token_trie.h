// TokenTrie: the vocabulary's token byte strings in one byte trie, laid out
// flat in depth-first order so that a mask walk is a loop over an array:
// node i has its byte and depth, and subtree_end(i) is the first node past
// its subtree (where the walk jumps when the grammar refuses the byte).
// Tokens sharing bytes share a node; a token with no bytes (special tokens,
// ids past the tokenizer) is in no node and so never allowed by a grammar.
// Built once per tokenizer; read-only afterwards, so any thread may walk it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace parallm::structured {

class TokenTrie {
 public:
  // bytes[id]: token id's bytes ("" = never allowed).
  explicit TokenTrie(const std::vector<std::string>& bytes);
  size_t num_nodes() const { return byte_.size(); }
  uint8_t byte(size_t i) const { return byte_[i]; }
  uint32_t depth(size_t i) const { return depth_[i]; }  // 1 for a first byte
  uint32_t subtree_end(size_t i) const { return end_[i]; }
  // The ids whose bytes end at node i.
  const int32_t* tokens_begin(size_t i) const { return ids_.data() + tok_[i]; }
  const int32_t* tokens_end(size_t i) const { return ids_.data() + tok_[i + 1]; }
  uint32_t max_depth() const { return max_depth_; }

 private:
  std::vector<uint8_t> byte_;
  std::vector<uint32_t> depth_, end_, tok_;  // tok_: num_nodes + 1 offsets into ids_
  std::vector<int32_t> ids_;
  uint32_t max_depth_ = 0;
};

}  // namespace parallm::structured
