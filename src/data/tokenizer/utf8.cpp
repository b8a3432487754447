// UTF-8 by hand: the valid ranges of the second byte follow Unicode Table 3-7
// (E0 needs A0..BF, ED 80..9F, F0 90..BF, F4 80..8F), so overlong forms and
// surrogates count as invalid exactly as Rust's decoder counts them.
#include "data/tokenizer/utf8.h"

namespace parallm {

namespace {

// Expected length for a lead byte; 0 when b cannot start a character.
int sequence_length(unsigned char b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

bool second_byte_ok(unsigned char lead, unsigned char b) {
  switch (lead) {
    case 0xE0:
      return b >= 0xA0 && b <= 0xBF;
    case 0xED:
      return b >= 0x80 && b <= 0x9F;
    case 0xF0:
      return b >= 0x90 && b <= 0xBF;
    case 0xF4:
      return b >= 0x80 && b <= 0x8F;
    default:
      return b >= 0x80 && b <= 0xBF;
  }
}

// Number of bytes from s[pos] that form a valid prefix of one character
// (1..len), and whether that prefix is the whole character.
size_t valid_run(std::string_view s, size_t pos, int& len) {
  const auto lead = static_cast<unsigned char>(s[pos]);
  len = sequence_length(lead);
  if (len <= 1) return 1;
  size_t n = 1;
  while (n < static_cast<size_t>(len) && pos + n < s.size()) {
    const auto b = static_cast<unsigned char>(s[pos + n]);
    const bool ok = n == 1 ? second_byte_ok(lead, b) : (b >= 0x80 && b <= 0xBF);
    if (!ok) break;
    ++n;
  }
  return n;
}

}  // namespace

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

char32_t next_code_point(std::string_view s, size_t& pos) {
  int len = 0;
  const size_t n = valid_run(s, pos, len);
  if (len == 0 || n < static_cast<size_t>(len)) {
    ++pos;
    return 0xFFFD;
  }
  const auto lead = static_cast<unsigned char>(s[pos]);
  char32_t cp = len == 1 ? lead : lead & (0x7F >> len);
  for (int i = 1; i < len; ++i) cp = (cp << 6) | (static_cast<unsigned char>(s[pos + i]) & 0x3F);
  pos += static_cast<size_t>(len);
  return cp;
}

size_t utf8_complete_prefix(std::string_view s) {
  // A held-back tail is at most 3 bytes: find where the last character starts.
  const size_t lo = s.size() >= 3 ? s.size() - 3 : 0;
  for (size_t start = s.size(); start-- > lo;) {
    const auto b = static_cast<unsigned char>(s[start]);
    if (b >= 0x80 && b <= 0xBF) continue;  // continuation byte: look further back
    int len = 0;
    const size_t n = valid_run(s, start, len);
    const bool unfinished = len > 1 && start + n == s.size() && n < static_cast<size_t>(len);
    return unfinished ? start : s.size();
  }
  return s.size();
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    int len = 0;
    const size_t n = valid_run(bytes, pos, len);
    if (len != 0 && n == static_cast<size_t>(len)) {
      out.append(bytes.substr(pos, n));
    } else {
      out.append(kReplacementChar);  // one per maximal invalid subpart
    }
    pos += n;
  }
  return out;
}

bool utf8_valid(std::string_view bytes) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    int len = 0;
    const size_t n = valid_run(bytes, pos, len);
    if (len == 0 || n != static_cast<size_t>(len)) return false;
    pos += n;
  }
  return true;
}

}  // namespace parallm
