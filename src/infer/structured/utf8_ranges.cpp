// Splitting code-point ranges into UTF-8 byte-range runs (see
// utf8_ranges.h): a range is cut at the encoding-length boundaries, then
// wherever its ends disagree above the last byte, until each piece's bytes
// vary independently (the classic construction of RE2 and Rust's regex).
#include "infer/structured/utf8_ranges.h"

#include <algorithm>

namespace parallm::structured {

namespace {

constexpr uint32_t kMaxCode = 0x10FFFF;

int encode(uint32_t cp, uint8_t out[4]) {
  if (cp < 0x80) {
    out[0] = static_cast<uint8_t>(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
    out[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
    out[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
  out[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
  out[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
  out[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  return 4;
}

// lo and hi encode to the same length.
void split(uint32_t lo, uint32_t hi, std::vector<ByteSequence>& out) {
  uint8_t a[4], b[4];
  const int n = encode(lo, a);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;  // the low i continuation bytes
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split(lo, lo | m, out);
        split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split(lo, (hi & ~m) - 1, out);
        split(hi & ~m, hi, out);
        return;
      }
    }
  }
  encode(hi, b);
  ByteSequence seq;
  for (int i = 0; i < n; ++i) seq.push_back({a[i], b[i]});
  out.push_back(std::move(seq));
}

}  // namespace

std::vector<CodeRange> normalize_class(const std::vector<CodeRange>& ranges, bool negated) {
  std::vector<CodeRange> r;
  for (CodeRange c : ranges)
    if (c.lo <= c.hi && c.lo <= kMaxCode) r.push_back({c.lo, std::min(c.hi, kMaxCode)});
  std::sort(r.begin(), r.end(), [](CodeRange x, CodeRange y) { return x.lo < y.lo; });
  std::vector<CodeRange> merged;
  for (CodeRange c : r) {
    if (!merged.empty() && c.lo <= merged.back().hi + 1)
      merged.back().hi = std::max(merged.back().hi, c.hi);
    else
      merged.push_back(c);
  }
  if (negated) {
    std::vector<CodeRange> inv;
    uint32_t next = 0;
    for (CodeRange c : merged) {
      if (c.lo > next) inv.push_back({next, c.lo - 1});
      next = c.hi + 1;
    }
    if (next <= kMaxCode) inv.push_back({next, kMaxCode});
    merged = std::move(inv);
  }
  std::vector<CodeRange> out;  // the surrogates cut out
  for (CodeRange c : merged) {
    if (c.hi < 0xD800 || c.lo > 0xDFFF) {
      out.push_back(c);
      continue;
    }
    if (c.lo < 0xD800) out.push_back({c.lo, 0xD7FF});
    if (c.hi > 0xDFFF) out.push_back({0xE000, c.hi});
  }
  return out;
}

std::vector<ByteSequence> utf8_sequences(const std::vector<CodeRange>& normalized) {
  std::vector<ByteSequence> out;
  const uint32_t bounds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCode};
  for (CodeRange c : normalized) {
    uint32_t lo = c.lo;
    for (uint32_t b : bounds) {
      if (lo > c.hi) break;
      if (lo > b) continue;
      const uint32_t hi = std::min(c.hi, b);
      split(lo, hi, out);
      lo = hi + 1;
    }
  }
  return out;
}

}  // namespace parallm::structured
