// ByteTokenizer: bytes map to themselves, so encoding is a widening copy and
// decoding a narrowing one. Ids outside 0..256 decode to nothing so that a
// model with a padded vocabulary can never make decode throw mid-generation.
#include "data/byte_tokenizer.h"

namespace parallm {

void ByteTokenizer::encode_append(std::string_view text, std::vector<int32_t>& out) {
  out.reserve(out.size() + text.size());
  // Through unsigned char: plain char is signed on x86 and bytes >= 0x80 must
  // stay in 128..255.
  for (unsigned char c : text) out.push_back(static_cast<int32_t>(c));
}

std::vector<int32_t> ByteTokenizer::encode(std::string_view text) {
  std::vector<int32_t> out;
  encode_append(text, out);
  return out;
}

std::vector<int32_t> ByteTokenizer::encode_documents(std::span<const std::string> docs) {
  size_t total = docs.empty() ? 0 : docs.size() - 1;
  for (const std::string& d : docs) total += d.size();
  std::vector<int32_t> out;
  out.reserve(total);
  for (size_t i = 0; i < docs.size(); ++i) {
    if (i > 0) out.push_back(kEndOfText);
    encode_append(docs[i], out);
  }
  return out;
}

std::string ByteTokenizer::decode_token(int32_t token) {
  if (token >= 0 && token < 256) return std::string(1, static_cast<char>(token));
  if (token == kEndOfText) return std::string(kEndOfTextText);
  return {};
}

std::string ByteTokenizer::decode(std::span<const int32_t> tokens) {
  std::string out;
  out.reserve(tokens.size());
  for (int32_t t : tokens) {
    if (t >= 0 && t < 256) {
      out.push_back(static_cast<char>(t));
    } else if (t == kEndOfText) {
      out.append(kEndOfTextText);
    }
  }
  return out;
}

}  // namespace parallm
