// Tokenizer: the interface generation, serving and `parallm tokenize` use,
// whatever the tokenizer behind it (a Hugging Face tokenizer.json, or the
// built-in byte-level one). load_tokenizer reads a directory holding
// tokenizer.json (+ optional tokenizer_config.json, generation_config.json).
// Invariants: encode and decode are const and thread-safe; decode never
// throws on an id it does not know (it contributes nothing), because a model
// with a padded vocabulary may sample one.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace parallm {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // add_special_tokens: add what the tokenizer adds around a sequence (BOS...).
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const = 0;
  // Valid UTF-8 (invalid byte sequences become U+FFFD).
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const = 0;
  // The bytes decode repairs: may end in the middle of a character.
  virtual std::string decode_bytes(std::span<const int32_t> ids,
                                   bool skip_special_tokens) const = 0;

  // Rows an embedding needs: one more than the largest id.
  virtual int64_t vocab_size() const = 0;
  virtual std::optional<int32_t> bos_id() const = 0;
  virtual std::optional<int32_t> eos_id() const = 0;
  // Every id that ends generation (eos_id first).
  virtual std::vector<int32_t> eos_ids() const = 0;
  virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
  virtual std::optional<std::string> id_to_token(int32_t id) const = 0;
  virtual bool is_special(int32_t id) const = 0;
};

// The Hugging Face tokenizer in dir; throws Error naming the file and field.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir);

// The built-in ByteTokenizer behind the same interface (bytes 0..255, EOS 256).
std::unique_ptr<Tokenizer> make_byte_tokenizer();

}  // namespace parallm
