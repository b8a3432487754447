// Byte-level table, built once from the three printable ranges; the reverse
// lookup is a dense array because every code point is below U+0144.
#include "data/tokenizer/byte_level.h"

#include "data/tokenizer/utf8.h"

namespace parallm {

namespace {

constexpr char32_t kMaxCodePoint = 0x100 + 68;

std::array<char32_t, 256> build_table() {
  std::array<char32_t, 256> t{};
  char32_t next = 0x100;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    t[static_cast<size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
  }
  return t;
}

std::array<int, kMaxCodePoint> build_reverse() {
  std::array<int, kMaxCodePoint> r{};
  r.fill(-1);
  const auto& t = byte_to_code_point();
  for (int b = 0; b < 256; ++b) r[t[static_cast<size_t>(b)]] = b;
  return r;
}

}  // namespace

const std::array<char32_t, 256>& byte_to_code_point() {
  static const std::array<char32_t, 256> table = build_table();
  return table;
}

std::string byte_level_encode(std::string_view bytes) {
  const auto& t = byte_to_code_point();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) append_utf8(out, t[b]);
  return out;
}

bool byte_level_decode(std::string_view token, std::string& out) {
  static const std::array<int, kMaxCodePoint> reverse = build_reverse();
  const size_t start = out.size();
  size_t pos = 0;
  while (pos < token.size()) {
    const char32_t cp = next_code_point(token, pos);
    if (cp >= kMaxCodePoint || reverse[cp] < 0) {
      out.resize(start);
      return false;
    }
    out.push_back(static_cast<char>(reverse[cp]));
  }
  return true;
}

}  // namespace parallm
