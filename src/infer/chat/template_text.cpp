// Python str operations on UTF-8 text (see template_text.h). Work is done on
// decoded code points where Python counts them (strip, len, split on
// whitespace) and on bytes where that is the same (split on a separator).
#include "infer/chat/template_text.h"

#include <algorithm>

namespace parallm::chat {

std::vector<char32_t> utf8_decode(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int extra = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    bool ok = extra >= 0;
    char32_t cp = extra == 0 ? c : extra == 1 ? (c & 0x1F) : extra == 2 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; ok && k <= extra; ++k) {
      if (i + k >= s.size()) {
        ok = false;
        break;
      }
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 2) ok = false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) {
      out.push_back(c);
      i += 1;
    } else {
      out.push_back(cp);
      i += extra + 1;
    }
  }
  return out;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

std::string utf8_encode(const std::vector<char32_t>& cps) {
  std::string out;
  for (char32_t cp : cps) utf8_append(out, cp);
  return out;
}

bool python_isspace(char32_t cp) {
  // Python's str.isspace(): bidirectional class WS, B or S, or category Zs.
  if ((cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20)) return true;
  switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::string python_strip(std::string_view s, const std::optional<std::string>& chars,
                         StripSide side) {
  const std::vector<char32_t> cps = utf8_decode(s);
  std::vector<char32_t> set;
  if (chars) set = utf8_decode(*chars);
  auto strip = [&](char32_t cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : python_isspace(cp);
  };
  size_t begin = 0, end = cps.size();
  if (side != StripSide::Right)
    while (begin < end && strip(cps[begin])) ++begin;
  if (side != StripSide::Left)
    while (end > begin && strip(cps[end - 1])) --end;
  return utf8_encode(std::vector<char32_t>(cps.begin() + begin, cps.begin() + end));
}

int64_t python_len(std::string_view s) { return int64_t(utf8_decode(s).size()); }

std::vector<std::string> python_split(std::string_view s, const std::optional<std::string>& sep,
                                      int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t pos = 0;
    while (maxsplit < 0 || int64_t(out.size()) < maxsplit) {
      const size_t at = s.find(*sep, pos);
      if (at == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, at - pos));
      pos = at + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  const std::vector<char32_t> cps = utf8_decode(s);
  size_t i = 0;
  while (i < cps.size()) {
    while (i < cps.size() && python_isspace(cps[i])) ++i;
    if (i == cps.size()) break;
    if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) {
      size_t end = cps.size();
      while (end > i && python_isspace(cps[end - 1])) --end;
      out.push_back(utf8_encode(std::vector<char32_t>(cps.begin() + i, cps.begin() + end)));
      break;
    }
    size_t j = i;
    while (j < cps.size() && !python_isspace(cps[j])) ++j;
    out.push_back(utf8_encode(std::vector<char32_t>(cps.begin() + i, cps.begin() + j)));
    i = j;
  }
  return out;
}

std::string python_replace(std::string_view s, std::string_view from, std::string_view to,
                           int64_t count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` between every code point
    const std::vector<char32_t> cps = utf8_decode(s);
    int64_t done = 0;
    for (char32_t cp : cps) {
      if (count < 0 || done < count) out += to, ++done;
      utf8_append(out, cp);
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t at = s.find(from, pos);
    if (at == std::string_view::npos) break;
    out.append(s.substr(pos, at - pos));
    out.append(to);
    pos = at + from.size();
    ++done;
  }
  out.append(s.substr(pos));
  return out;
}

namespace {
bool all_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}
char upper(char c) { return c >= 'a' && c <= 'z' ? char(c - 32) : c; }
char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c + 32) : c; }
}  // namespace

std::optional<std::string> ascii_upper(std::string_view s) {
  if (!all_ascii(s)) return std::nullopt;
  std::string out(s);
  for (char& c : out) c = upper(c);
  return out;
}

std::optional<std::string> ascii_lower(std::string_view s) {
  if (!all_ascii(s)) return std::nullopt;
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

std::optional<std::string> ascii_capitalize(std::string_view s) {
  std::optional<std::string> out = ascii_lower(s);
  if (out && !out->empty()) (*out)[0] = upper((*out)[0]);
  return out;
}

}  // namespace parallm::chat
