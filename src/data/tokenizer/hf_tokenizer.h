// HfTokenizer: a Hugging Face tokenizer.json with a BPE model, run the way
// the tokenizers library runs it: added tokens cut out of the raw text ->
// normalizer on each remaining piece -> added tokens with normalized=true cut
// out of that -> pre-tokenizer -> BPE per pre-token -> post-processor (when
// add_special_tokens). Decoding maps ids to token strings (added tokens
// included, special ones dropped when asked) and runs the decoder.
// Invariant: a loaded HfTokenizer is immutable; every component is checked on
// load, so encode and decode never fail on a file-format problem.
#pragma once
#include <memory>

#include "data/tokenizer/added_tokens.h"
#include "data/tokenizer/bpe_model.h"
#include "data/tokenizer/decoder.h"
#include "data/tokenizer/normalizer.h"
#include "data/tokenizer/post_processor.h"
#include "data/tokenizer/pre_tokenizer.h"
#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/tokenizer_config.h"

namespace parallm {

class HfTokenizer : public Tokenizer {
 public:
  // where: the tokenizer.json path, for messages.
  HfTokenizer(const Json& tokenizer_json, const std::string& where, const TokenizerConfig& config);

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const override;
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override;
  std::string decode_bytes(std::span<const int32_t> ids, bool skip_special_tokens) const override;
  int64_t vocab_size() const override { return vocab_size_; }
  std::optional<int32_t> bos_id() const override { return bos_id_; }
  std::optional<int32_t> eos_id() const override { return eos_id_; }
  std::vector<int32_t> eos_ids() const override { return eos_ids_; }
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  std::optional<std::string> id_to_token(int32_t id) const override;
  bool is_special(int32_t id) const override;

 private:
  void encode_piece(std::string_view piece, bool at_text_start, std::vector<int32_t>& out) const;
  std::string decode_impl(std::span<const int32_t> ids, bool skip_special, bool raw) const;
  void resolve_special_tokens(const TokenizerConfig& config, const std::string& where);

  AddedVocabulary added_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  BpeModel model_;
  std::unique_ptr<Decoder> decoder_;
  SpecialTokenTemplate template_;
  int64_t vocab_size_ = 0;
  std::optional<int32_t> bos_id_;
  std::optional<int32_t> eos_id_;
  std::vector<int32_t> eos_ids_;
};

}  // namespace parallm
