// The scalar pieces of the JSON-schema compiler (see json_schema_scalars.h).
#include "infer/structured/json_schema_scalars.h"

#include <fmt/core.h>

#include <map>
#include <vector>

#include "base/error.h"
#include "infer/structured/regex_grammar.h"
#include "infer/structured/utf8_ranges.h"

namespace parallm::structured {

namespace {

// A literal character as JSON string content writes it.
std::string json_escaped(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// The same expression over JSON string content: literals escaped, classes
// without the quote, the backslash and control characters.
GrammarExpr json_safe(GrammarExpr e) {
  using K = GrammarExpr::Kind;
  switch (e.kind) {
    case K::Literal:
      return g_lit(json_escaped(e.text));
    case K::Class: {
      std::vector<CodeRange> keep = normalize_class(e.ranges, e.negated);
      keep = normalize_class(
          [&] {
            // keep minus {0-1F, ", \}: the complement of (complement of keep + them)
            std::vector<CodeRange> out = normalize_class(keep, true);
            out.push_back({0, 0x1F});
            out.push_back({'"', '"'});
            out.push_back({'\\', '\\'});
            return out;
          }(),
          true);
      PX_CHECK(!keep.empty(), "a pattern's class holds only characters JSON must escape");
      return g_class(std::move(keep));
    }
    default:
      for (GrammarExpr& item : e.items) item = json_safe(std::move(item));
      return e;
  }
}

std::string digits_of(int64_t v) { return std::to_string(v); }

// The strings as a trie of alternatives, so a matcher state holds a few
// stacks, not one per string.
GrammarExpr literal_trie(std::vector<std::string> words) {
  std::map<char, std::vector<std::string>> by_first;
  bool ends_here = false;
  for (std::string& w : words) {
    if (w.empty()) {
      ends_here = true;
      continue;
    }
    by_first[w[0]].push_back(w.substr(1));
  }
  std::vector<GrammarExpr> alts;
  for (auto& [c, rest] : by_first)
    alts.push_back(g_seq({g_lit(std::string(1, c)), literal_trie(std::move(rest))}));
  if (ends_here) alts.push_back(g_empty());
  return alts.empty() ? g_empty() : g_alt(std::move(alts));
}

}  // namespace

GrammarExpr json_string_pattern(const std::string& pattern) {
  std::string p = pattern;
  const bool head = !p.empty() && p.front() == '^';
  const bool tail = !p.empty() && p.back() == '$' && (p.size() < 2 || p[p.size() - 2] != '\\');
  if (!head) p = "(?:.*)" + p;
  if (!tail) p += "(?:.*)";
  GrammarExpr body;
  try {
    body = regex_grammar(p).rules.front().second;
  } catch (const Error& e) {
    PX_FAIL("'pattern' {}", e.what());
  }
  return g_seq({g_lit("\""), json_safe(std::move(body)), g_lit("\"")});
}

GrammarExpr json_string_format(const std::string& format) {
  const std::string date = R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))";
  const std::string time =
      R"(([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))";
  const std::string octet = R"((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))";
  const std::map<std::string, std::string> formats = {
      {"date", date},
      {"time", time},
      {"date-time", date + "T" + time},
      {"uuid", "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"},
      {"email", R"([a-zA-Z0-9._%+-]{1,64}@[a-zA-Z0-9-]{1,63}(\.[a-zA-Z0-9-]{1,63}){1,4})"},
      {"ipv4", "(" + octet + R"(\.){3})" + octet}};
  auto it = formats.find(format);
  if (it == formats.end()) {
    std::string known;
    for (const auto& [k, v] : formats) known += (known.empty() ? "" : ", ") + k;
    PX_FAIL("the format '{}' is not supported (supported: {})", format, known);
  }
  return json_string_pattern("^" + it->second + "$");
}

GrammarExpr json_integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  if (lo && hi) {
    PX_CHECK(*lo <= *hi, "the integer range [{}, {}] is empty", *lo, *hi);
    PX_CHECK(*hi - *lo < kMaxIntegerChoices,
             "an integer range of at most {} values is supported, got [{}, {}]", kMaxIntegerChoices,
             *lo, *hi);
    std::vector<std::string> words;
    for (int64_t v = *lo; v <= *hi; ++v) words.push_back(digits_of(v));
    return literal_trie(std::move(words));
  }
  PX_CHECK(lo && !hi && *lo >= 0 && *lo <= kMaxIntegerChoices,
           "an integer bound is supported with both minimum and maximum (at most {} values "
           "apart) or as a minimum in [0, {}] alone",
           kMaxIntegerChoices, kMaxIntegerChoices);
  // The values with lo's digit count listed, any longer number after them.
  const std::string d = digits_of(*lo);
  int64_t top = 1;
  for (size_t i = 0; i < d.size(); ++i) top *= 10;
  std::vector<std::string> words;
  for (int64_t v = *lo; v < top; ++v) words.push_back(digits_of(v));
  return g_alt({literal_trie(std::move(words)),
                g_seq({g_class({{'1', '9'}}),
                       g_repeat(g_class({{'0', '9'}}), static_cast<int>(d.size()), 15)})});
}

}  // namespace parallm::structured
