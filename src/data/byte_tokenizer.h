// ByteTokenizer: the built-in tokenizer. A token is a byte value (0..255);
// id 256 is the end-of-text token that separates documents. Vocab size 257, so
// a model using it needs vocab_size >= 257 (configs usually pad it, e.g. 320).
// Invariant: decode(encode(s)) == s for every byte string s. On decode, 256
// becomes "<|endoftext|>" and any other id outside 0..255 (padding rows a model
// may still sample) becomes "" rather than an error.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace parallm {

class ByteTokenizer {
 public:
  static constexpr int32_t kEndOfText = 256;
  static constexpr int64_t kVocabSize = 257;
  static constexpr std::string_view kEndOfTextText = "<|endoftext|>";

  static std::vector<int32_t> encode(std::string_view text);
  // Appends the tokens of text to out (avoids a copy when building shards).
  static void encode_append(std::string_view text, std::vector<int32_t>& out);
  // Documents joined by kEndOfText: d0 EOT d1 EOT d2 (none before or after).
  static std::vector<int32_t> encode_documents(std::span<const std::string> docs);

  static std::string decode(std::span<const int32_t> tokens);
  static std::string decode_token(int32_t token);  // for streaming generation
};

}  // namespace parallm
