// Regex over Oniguruma. onig_initialize runs once per process (std::call_once);
// it only registers the UTF-8 encoding, so it is not state anyone mutates later.
#include "data/tokenizer/regex.h"

#include <oniguruma.h>

#include <memory>
#include <mutex>

#include "base/error.h"

namespace parallm {

namespace {

void init_oniguruma() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

struct RegionFree {
  void operator()(OnigRegion* r) const { onig_region_free(r, 1); }
};

}  // namespace

Regex::Regex(std::string_view pattern, std::string_view where) {
  init_oniguruma();
  OnigErrorInfo info{};
  const auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
  const int rc = onig_new(&regex_, p, p + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                          ONIG_SYNTAX_ONIGURUMA, &info);
  if (rc != ONIG_NORMAL) {
    OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
    onig_error_code_to_str(msg, rc, &info);
    regex_ = nullptr;
    PX_FAIL("{}: invalid regex '{}': {}", where, pattern, reinterpret_cast<const char*>(msg));
  }
}

Regex::~Regex() {
  if (regex_ != nullptr) onig_free(regex_);
}

std::vector<Span> Regex::find_all(std::string_view text) const {
  std::vector<Span> out;
  std::unique_ptr<OnigRegion, RegionFree> region(onig_region_new());
  const auto* begin = reinterpret_cast<const OnigUChar*>(text.data());
  const auto* end = begin + text.size();
  size_t pos = 0;
  while (pos <= text.size()) {
    const int r = onig_search(regex_, begin, end, begin + pos, end, region.get(), ONIG_OPTION_NONE);
    if (r == ONIG_MISMATCH) break;
    PX_CHECK(r >= 0, "regex search failed with Oniguruma code {}", r);
    const auto b = static_cast<size_t>(region->beg[0]);
    const auto e = static_cast<size_t>(region->end[0]);
    out.push_back({b, e});
    if (e > b) {
      pos = e;
    } else {
      if (e >= text.size()) break;
      // Step over one whole UTF-8 character, never into its middle.
      pos = e + 1;
      while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
    }
  }
  return out;
}

std::string escape_regex(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    const auto u = static_cast<unsigned char>(c);
    const bool plain =
        u >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (plain) {
      out.push_back(c);
    } else {
      out += fmt::format("\\x{:02X}", u);
    }
  }
  return out;
}

std::vector<Span> split_by_matches(size_t size, const std::vector<Span>& matches,
                                   SplitBehavior behavior) {
  std::vector<Span> pieces;
  auto push = [&](size_t b, size_t e) {
    if (e > b) pieces.push_back({b, e});
  };
  size_t start = 0;  // start of the piece being built
  for (const Span& m : matches) {
    switch (behavior) {
      case SplitBehavior::Isolated:
        push(start, m.begin);
        push(m.begin, m.end);
        start = m.end;
        break;
      case SplitBehavior::Removed:
        push(start, m.begin);
        start = m.end;
        break;
      case SplitBehavior::MergedWithPrevious:
        push(start, m.end);
        start = m.end;
        break;
      case SplitBehavior::MergedWithNext:
        push(start, m.begin);
        start = m.begin;
        break;
    }
  }
  push(start, size);
  return pieces;
}

}  // namespace parallm
