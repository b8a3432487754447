// ByteTokenizer behind the Tokenizer interface: it stays the default of
// `parallm tokenize` and training, so shards it wrote before are unchanged.
// The end-of-text id 256 is its EOS and only special token; it has no BOS.
#include "data/byte_tokenizer.h"
#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/utf8.h"

namespace parallm {

namespace {

class ByteTokenizerAdapter : public Tokenizer {
 public:
  std::vector<int32_t> encode(std::string_view text, bool) const override {
    return ByteTokenizer::encode(text);
  }
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override {
    return utf8_lossy(decode_bytes(ids, skip_special_tokens));
  }
  std::string decode_bytes(std::span<const int32_t> ids, bool skip_special_tokens) const override {
    std::string out;
    for (int32_t id : ids) {
      if (skip_special_tokens && id == ByteTokenizer::kEndOfText) continue;
      out += ByteTokenizer::decode_token(id);
    }
    return out;
  }
  int64_t vocab_size() const override { return ByteTokenizer::kVocabSize; }
  std::optional<int32_t> bos_id() const override { return std::nullopt; }
  std::optional<int32_t> eos_id() const override { return ByteTokenizer::kEndOfText; }
  std::vector<int32_t> eos_ids() const override { return {ByteTokenizer::kEndOfText}; }
  std::optional<int32_t> token_to_id(std::string_view token) const override {
    if (token == ByteTokenizer::kEndOfTextText) return ByteTokenizer::kEndOfText;
    if (token.size() == 1) return static_cast<int32_t>(static_cast<unsigned char>(token[0]));
    return std::nullopt;
  }
  std::optional<std::string> id_to_token(int32_t id) const override {
    if (id < 0 || id > ByteTokenizer::kEndOfText) return std::nullopt;
    return ByteTokenizer::decode_token(id);
  }
  bool is_special(int32_t id) const override { return id == ByteTokenizer::kEndOfText; }
};

}  // namespace

std::unique_ptr<Tokenizer> make_byte_tokenizer() {
  return std::make_unique<ByteTokenizerAdapter>();
}

}  // namespace parallm
