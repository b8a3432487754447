// A GGUF file's tokenizer (tokenizer.ggml.*) as the Hugging Face files that
// say the same: a tokenizer.json and the tokenizer_config.json fields
// (bos_token, eos_token, add_bos_token, add_eos_token, chat_template), so
// the data layer's HfTokenizer runs it. tokenizer.ggml.model "gpt2":
// byte-level BPE with the file's merges, the pre-tokenizer named by
// tokenizer.ggml.pre ("default", "gpt-2": GPT-2's regex; "llama-bpe":
// Llama 3's). "llama": SentencePiece as LlamaTokenizerFast's tokenizer.json
// has it (▁ for spaces, a prepended ▁, <0xXX> byte fallback) with BPE merges
// derived from the scores as transformers' converter derives them: every
// split of a token into two vocabulary tokens, ordered by the token's score.
// Token types CONTROL and UNKNOWN become special added tokens,
// USER_DEFINED plain added tokens.
// Invariant: another tokenizer model or pre-tokenizer is refused, naming it.
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/gguf/gguf_file.h"

namespace parallm {

struct GgufTokenizerFiles {
  nlohmann::json tokenizer;  // tokenizer.json
  nlohmann::json config;     // tokenizer_config.json's fields that the file gives
  std::vector<int32_t> eos_ids;  // eos_token_id, then eot_token_id / eom_token_id when present
};

// Throws when the file has no tokenizer.ggml.model.
GgufTokenizerFiles gguf_tokenizer_files(const GgufFile& f);
// Just the end-of-sequence ids (as eos_ids above), without building the rest.
std::vector<int32_t> gguf_eos_ids(const GgufFile& f);

}  // namespace parallm
