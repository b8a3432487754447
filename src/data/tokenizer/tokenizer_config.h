// What transformers keeps beside tokenizer.json: tokenizer_config.json
// (bos_token, eos_token as a string or {"content": ...}; add_bos_token,
// add_eos_token) and generation_config.json (eos_token_id: an id or a list).
// Both files are optional; a present but malformed one is an error naming it.
// Invariant: a field absent from the files is absent here (no defaults).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parallm {

struct TokenizerConfig {
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  std::vector<int32_t> generation_eos_ids;
};

TokenizerConfig read_tokenizer_config(const std::string& dir);

}  // namespace parallm
