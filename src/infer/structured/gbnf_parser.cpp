// parse_gbnf (see gbnf_parser.h): recursive descent over the text, one
// function per level (alternatives, sequence, repeat suffix, primary).
#include "infer/structured/gbnf_parser.h"

#include <fmt/core.h>

#include "base/error.h"
#include "data/tokenizer/utf8.h"

namespace parallm::structured {

namespace {

constexpr int kMaxDepth = 200;  // nested groups

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

class GbnfParser {
 public:
  explicit GbnfParser(const std::string& s) : s_(s) {}

  Grammar parse() {
    Grammar g;
    PX_CHECK(utf8_valid(s_), "the grammar is not valid UTF-8");
    skip();
    PX_CHECK(pos_ < s_.size(), "the grammar is empty");
    while (pos_ < s_.size()) {
      const std::string name = read_name();
      skip();
      if (s_.compare(pos_, 3, "::=") != 0) fail("'::=' after the rule name '" + name + "'");
      pos_ += 3;
      skip();
      if (g.has(name)) fail("a new rule name ('" + name + "' is defined already)");
      g.add(name, alternatives(0));
      if (pos_ < s_.size() && s_[pos_] == ')') fail("a rule, not an unmatched ')'");
    }
    return g;
  }

 private:
  [[noreturn]] void fail(const std::string& expected) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    const std::string near =
        pos_ < s_.size() ? "'" + s_.substr(pos_, std::min<size_t>(12, s_.size() - pos_)) + "'"
                         : "the end";
    PX_FAIL("grammar line {} column {}: expected {}, found {}", line, col, expected, near);
  }

  // Spaces, newlines and comments.
  void skip() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string read_name() {
    const size_t b = pos_;
    while (pos_ < s_.size() && name_char(s_[pos_])) ++pos_;
    if (pos_ == b) fail("a rule name");
    return s_.substr(b, pos_ - b);
  }

  // Whether a `name ::=` (the next rule) starts here.
  bool at_rule_start() const {
    size_t p = pos_;
    while (p < s_.size() && name_char(s_[p])) ++p;
    if (p == pos_) return false;
    while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t' || s_[p] == '\n' || s_[p] == '\r')) ++p;
    return s_.compare(p, 3, "::=") == 0;
  }

  GrammarExpr alternatives(int depth) {
    if (depth > kMaxDepth) fail(fmt::format("at most {} nested groups", kMaxDepth));
    std::vector<GrammarExpr> alts;
    alts.push_back(sequence(depth));
    while (pos_ < s_.size() && s_[pos_] == '|') {
      ++pos_;
      skip();
      alts.push_back(sequence(depth));
    }
    return g_alt(std::move(alts));
  }

  GrammarExpr sequence(int depth) {
    std::vector<GrammarExpr> items;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == '|' || c == ')' || at_rule_start()) break;
      GrammarExpr e = primary(depth);
      skip();
      items.push_back(suffixes(std::move(e)));
    }
    return g_seq(std::move(items));
  }

  GrammarExpr suffixes(GrammarExpr e) {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == '*') {
        e = g_star(std::move(e));
      } else if (c == '+') {
        e = g_repeat(std::move(e), 1, kUnbounded);
      } else if (c == '?') {
        e = g_opt(std::move(e));
      } else if (c == '{') {
        ++pos_;
        skip();
        const int m = read_int();
        skip();
        int n = m;
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          skip();
          n = pos_ < s_.size() && s_[pos_] == '}' ? kUnbounded : read_int();
          skip();
        }
        if (pos_ >= s_.size() || s_[pos_] != '}') fail("'}' closing the repeat");
        if (n != kUnbounded && n < m) fail(fmt::format("a maximum >= the minimum {}", m));
        e = g_repeat(std::move(e), m, n);
      } else {
        break;
      }
      ++pos_;
      skip();
    }
    return e;
  }

  int read_int() {
    const size_t b = pos_;
    long v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      v = v * 10 + (s_[pos_] - '0');
      if (v > kMaxGbnfRepeat) fail(fmt::format("a repeat count of at most {}", kMaxGbnfRepeat));
      ++pos_;
    }
    if (pos_ == b) fail("a repeat count");
    return static_cast<int>(v);
  }

  GrammarExpr primary(int depth) {
    const char c = s_[pos_];
    if (c == '"') return literal();
    if (c == '[') return char_class();
    if (c == '.') {
      ++pos_;
      return g_class({}, true);
    }
    if (c == '(') {
      ++pos_;
      skip();
      GrammarExpr e = alternatives(depth + 1);
      if (pos_ >= s_.size() || s_[pos_] != ')') fail("')' closing the group");
      ++pos_;
      return e;
    }
    if (name_char(c)) return g_ref(read_name());
    fail("a literal, a class, a group or a rule name");
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i, ++pos_) {
      if (pos_ >= s_.size()) fail(fmt::format("{} hex digits", digits));
      const char h = s_[pos_];
      const int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
      if (d < 0) fail(fmt::format("{} hex digits", digits));
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return v;
  }

  // One character of a literal or class, escapes decoded.
  uint32_t character() {
    if (pos_ >= s_.size()) fail("a character");
    if (s_[pos_] != '\\') return static_cast<uint32_t>(next_code_point(s_, pos_));
    ++pos_;
    if (pos_ >= s_.size()) fail("an escaped character");
    const char e = s_[pos_++];
    switch (e) {
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case '\\':
      case '"':
      case '[':
      case ']':
      case '-':
      case '^':
      case '/':
        return static_cast<uint8_t>(e);
      case 'x':
        return hex(2);
      case 'u':
        return hex(4);
      case 'U': {
        const uint32_t v = hex(8);
        if (v > 0x10FFFF) fail("a code point of at most U+10FFFF");
        return v;
      }
      default:
        --pos_;
        fail("an escape (\\n \\r \\t \\\\ \\\" \\[ \\] \\xHH \\uHHHH \\UHHHHHHHH)");
    }
  }

  GrammarExpr literal() {
    ++pos_;
    std::string text;
    while (true) {
      if (pos_ >= s_.size()) fail("'\"' closing the literal");
      if (s_[pos_] == '"') break;
      append_utf8(text, static_cast<char32_t>(character()));
    }
    ++pos_;
    return g_lit(std::move(text));
  }

  GrammarExpr char_class() {
    ++pos_;
    bool negated = false;
    if (pos_ < s_.size() && s_[pos_] == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<CodeRange> ranges;
    while (true) {
      if (pos_ >= s_.size()) fail("']' closing the character class");
      if (s_[pos_] == ']') break;
      const uint32_t lo = character();
      uint32_t hi = lo;
      if (pos_ + 1 < s_.size() && s_[pos_] == '-' && s_[pos_ + 1] != ']') {
        ++pos_;
        hi = character();
        if (hi < lo) fail("a range whose end is not below its start");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    return g_class(std::move(ranges), negated);
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

Grammar parse_gbnf(const std::string& text) { return GbnfParser(text).parse(); }

}  // namespace parallm::structured
