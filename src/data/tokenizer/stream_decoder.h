// StreamDecoder: text for one id at a time, as a generator produces them.
// push(id) returns the text that id completes; bytes of a character split
// across tokens (byte-level BPE, <0xNN> byte fallback) are held until the
// character is whole. Invariants: every returned string is valid UTF-8, and
// the concatenation of all pushes and flush() equals tokenizer.decode(ids)
// whenever that decode is valid UTF-8 without repair.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer/tokenizer.h"

namespace parallm {

class StreamDecoder {
 public:
  // tokenizer must outlive the StreamDecoder.
  StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
      : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {}

  std::string push(int32_t id);
  // Bytes still held at the end of a stream (an unfinished character), as U+FFFD.
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_tokens_;
  // Ids decoded together: a short context plus the ids with held bytes, so a
  // decoder that treats the first token specially sees the same first token.
  std::vector<int32_t> window_;
  size_t emitted_ = 0;  // bytes of decode_bytes(window_) already returned
};

}  // namespace parallm
