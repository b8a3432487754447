// ToolStreamHold (see tool_stream_hold.h).
#include "infer/serve/tool_stream_hold.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace parallm::serve {

namespace {
constexpr std::string_view kHermesOpen = "<tool_call>";

// Whether s is a prefix of m or m a prefix of s.
bool overlaps(std::string_view s, std::string_view m) {
  const size_t n = std::min(s.size(), m.size());
  return s.substr(0, n) == m.substr(0, n);
}
}  // namespace

std::string ToolStreamHold::feed_hermes() {
  const size_t at = pending_.find(kHermesOpen);
  if (at != std::string::npos) {
    std::string out = pending_.substr(0, at);
    held_ = pending_.substr(at);
    holding_ = true;
    pending_.clear();
    return out;
  }
  // Keep back the longest tail that could still grow into the marker.
  size_t keep = 0;
  for (size_t k = std::min(pending_.size(), kHermesOpen.size() - 1); k > 0; --k)
    if (std::string_view(pending_).substr(pending_.size() - k) == kHermesOpen.substr(0, k)) {
      keep = k;
      break;
    }
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string ToolStreamHold::feed(const std::string& delta) {
  pending_ += delta;
  if (holding_) {
    held_ += pending_;
    pending_.clear();
    return "";
  }
  if (format_ == ToolFormat::Hermes) return feed_hermes();
  if (!decided_) {
    const size_t b = pending_.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    const std::string_view t = std::string_view(pending_).substr(b);
    const std::array<std::string_view, 2> markers = {"<|python_tag|>", "[TOOL_CALLS]"};
    bool maybe = t[0] == '{' || t[0] == '[';
    bool undecided = false;
    for (std::string_view m : markers)
      if (overlaps(t, m)) {
        maybe = maybe || t.size() >= m.size();
        undecided = undecided || t.size() < m.size();
      }
    if (undecided && !maybe) return "";
    decided_ = true;
    holding_ = maybe;
    if (holding_) {
      held_ = std::move(pending_);
      pending_.clear();
      return "";
    }
  }
  std::string out = std::move(pending_);
  pending_.clear();
  return out;
}

std::string ToolStreamHold::flush() {
  std::string out = std::move(pending_);
  pending_.clear();
  return out;
}

}  // namespace parallm::serve
