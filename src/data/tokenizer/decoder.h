// Decoders of tokenizer.json, which turn token strings back into text:
// ByteLevel (table characters -> bytes), Replace, ByteFallback (<0xNN> runs ->
// bytes), Fuse, Strip, Metaspace ("▁" -> " ", the first token's dropped) and
// Sequence. Each rewrites the list of token strings; the text is their
// concatenation. With raw_bytes the byte-producing steps (ByteLevel,
// ByteFallback) keep invalid or unfinished UTF-8 as bytes instead of U+FFFD,
// which the StreamDecoder needs to hold a character split across tokens.
// Invariant: without raw_bytes the output equals Hugging Face's decode.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer/json_fields.h"

namespace parallm {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens, bool raw_bytes) const = 0;
};

// nullptr for a JSON null (tokens are then joined with spaces).
std::unique_ptr<Decoder> make_decoder(const Json& j, const std::string& where);

}  // namespace parallm
