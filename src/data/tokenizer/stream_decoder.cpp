// StreamDecoder: decode the window, return the new bytes up to the last
// complete character. Decoders are prefix-stable (decoding more ids only
// appends), so the window can be cut back to its last id whenever nothing is
// held, which keeps each push O(1) in the length of the stream.
#include "data/tokenizer/stream_decoder.h"

#include "data/tokenizer/utf8.h"

namespace parallm {

namespace {
constexpr size_t kMaxWindow = 8;
}  // namespace

std::string StreamDecoder::push(int32_t id) {
  window_.push_back(id);
  const std::string bytes = tokenizer_.decode_bytes(window_, skip_special_tokens_);
  if (bytes.size() < emitted_) emitted_ = bytes.size();  // a decoder that shrank: emit no repeat
  const std::string_view fresh = std::string_view(bytes).substr(emitted_);
  const size_t ready = utf8_complete_prefix(fresh);
  std::string out = utf8_lossy(fresh.substr(0, ready));
  emitted_ += ready;
  if (ready == fresh.size() && window_.size() >= kMaxWindow) {
    // Keep the last id that decodes to text, so the first token of the new
    // window is one the full decode would not treat as first.
    size_t keep = window_.size();
    while (keep > 0 && tokenizer_.is_special(window_[keep - 1])) --keep;
    if (keep > 0) {
      window_.erase(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(keep - 1));
      emitted_ = tokenizer_.decode_bytes(window_, skip_special_tokens_).size();
    }
  }
  return out;
}

std::string StreamDecoder::flush() {
  const std::string bytes = tokenizer_.decode_bytes(window_, skip_special_tokens_);
  std::string out = bytes.size() > emitted_ ? utf8_lossy(bytes.substr(emitted_)) : std::string();
  window_.clear();
  emitted_ = 0;
  return out;
}

}  // namespace parallm
