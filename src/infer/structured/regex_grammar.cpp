// regex_grammar (see regex_grammar.h): recursive descent over the pattern's
// code points; the whole pattern becomes the rule `root`.
#include "infer/structured/regex_grammar.h"

#include <fmt/core.h>

#include "base/error.h"
#include "data/tokenizer/utf8.h"
#include "infer/structured/gbnf_parser.h"
#include "infer/structured/utf8_ranges.h"

namespace parallm::structured {

namespace {

constexpr int kMaxDepth = 200;

std::vector<CodeRange> digit() { return {{'0', '9'}}; }
std::vector<CodeRange> word() { return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; }
std::vector<CodeRange> space() { return {{'\t', '\r'}, {' ', ' '}}; }

class RegexParser {
 public:
  explicit RegexParser(const std::string& p) : cps_(utf8_code_points(p, "the regex")) {}

  Grammar parse() {
    if (at('^')) ++pos_;
    GrammarExpr e = alternatives(0);
    if (pos_ < cps_.size()) fail(at(')') ? "an unmatched ')'" : "an unexpected character");
    Grammar g;
    g.add("root", std::move(e));
    return g;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    PX_FAIL("regex offset {}: {}", pos_, what);
  }
  bool at(uint32_t c) const { return pos_ < cps_.size() && cps_[pos_] == c; }

  GrammarExpr alternatives(int depth) {
    if (depth > kMaxDepth) fail(fmt::format("groups nested more than {} deep", kMaxDepth));
    std::vector<GrammarExpr> alts;
    alts.push_back(sequence(depth));
    while (at('|')) {
      ++pos_;
      alts.push_back(sequence(depth));
    }
    return g_alt(std::move(alts));
  }

  GrammarExpr sequence(int depth) {
    std::vector<GrammarExpr> items;
    while (pos_ < cps_.size() && !at('|') && !at(')')) {
      if (at('$') && pos_ + 1 == cps_.size()) {  // the implicit end anchor
        ++pos_;
        break;
      }
      GrammarExpr e = atom(depth);
      items.push_back(quantified(std::move(e)));
    }
    return g_seq(std::move(items));
  }

  int number() {
    long v = 0;
    const size_t b = pos_;
    while (pos_ < cps_.size() && cps_[pos_] >= '0' && cps_[pos_] <= '9') {
      v = v * 10 + static_cast<long>(cps_[pos_] - '0');
      if (v > kMaxGbnfRepeat) fail(fmt::format("a repeat count above {}", kMaxGbnfRepeat));
      ++pos_;
    }
    if (pos_ == b) fail("a repeat count expected");
    return static_cast<int>(v);
  }

  GrammarExpr quantified(GrammarExpr e) {
    while (pos_ < cps_.size()) {
      const uint32_t c = cps_[pos_];
      int lo = 0, hi = 0;
      if (c == '*') {
        lo = 0, hi = kUnbounded;
        ++pos_;
      } else if (c == '+') {
        lo = 1, hi = kUnbounded;
        ++pos_;
      } else if (c == '?') {
        lo = 0, hi = 1;
        ++pos_;
      } else if (c == '{') {
        ++pos_;
        lo = hi = number();
        if (at(',')) {
          ++pos_;
          hi = at('}') ? kUnbounded : number();
        }
        if (!at('}')) fail("'}' expected closing the repeat");
        ++pos_;
        if (hi != kUnbounded && hi < lo)
          fail(fmt::format("a repeat {{{},{}}} with max < min", lo, hi));
      } else {
        return e;
      }
      if (at('?') || at('+')) ++pos_;  // lazy or possessive: the same language
      e = g_repeat(std::move(e), lo, hi);
    }
    return e;
  }

  GrammarExpr atom(int depth) {
    const uint32_t c = cps_[pos_];
    if (c == '(') {
      ++pos_;
      if (at('?')) {
        ++pos_;
        if (at(':')) {
          ++pos_;
        } else if (at('<') && pos_ + 1 < cps_.size() && cps_[pos_ + 1] != '=' &&
                   cps_[pos_ + 1] != '!') {
          while (pos_ < cps_.size() && !at('>')) ++pos_;
          if (!at('>')) fail("'>' expected closing the group name");
          ++pos_;
        } else {
          --pos_;
          fail("lookaround and inline flags ('(?') are not supported");
        }
      }
      GrammarExpr e = alternatives(depth + 1);
      if (!at(')')) fail("')' expected closing the group");
      ++pos_;
      return e;
    }
    if (c == '[') return char_class();
    if (c == '.') {
      ++pos_;
      return g_class({{'\n', '\n'}}, true);
    }
    if (c == '^' || c == '$') fail("anchors are supported only at the ends of the pattern");
    if (c == '*' || c == '+' || c == '?' || c == '{') fail("a repeat with nothing to repeat");
    if (c == '\\') {
      std::vector<CodeRange> ranges;
      bool negated = false;
      const uint32_t ch = escape(ranges, negated);
      if (!ranges.empty()) return g_class(std::move(ranges), negated);
      std::string s;
      append_utf8(s, static_cast<char32_t>(ch));
      return g_lit(s);
    }
    ++pos_;
    std::string s;
    append_utf8(s, static_cast<char32_t>(c));
    return g_lit(s);
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i, ++pos_) {
      if (pos_ >= cps_.size()) fail(fmt::format("{} hex digits expected", digits));
      const uint32_t h = cps_[pos_];
      int d = h >= '0' && h <= '9'   ? static_cast<int>(h - '0')
              : h >= 'a' && h <= 'f' ? static_cast<int>(h - 'a' + 10)
              : h >= 'A' && h <= 'F' ? static_cast<int>(h - 'A' + 10)
                                     : -1;
      if (d < 0) fail(fmt::format("{} hex digits expected", digits));
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return v;
  }

  // After a backslash: a shorthand class (into ranges) or one character.
  uint32_t escape(std::vector<CodeRange>& ranges, bool& negated) {
    ++pos_;
    if (pos_ >= cps_.size()) fail("a character expected after '\\'");
    const uint32_t e = cps_[pos_++];
    switch (e) {
      case 'd':
        ranges = digit();
        return 0;
      case 'D':
        ranges = digit();
        negated = true;
        return 0;
      case 'w':
        ranges = word();
        return 0;
      case 'W':
        ranges = word();
        negated = true;
        return 0;
      case 's':
        ranges = space();
        return 0;
      case 'S':
        ranges = space();
        negated = true;
        return 0;
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case 'f':
        return '\f';
      case 'v':
        return '\v';
      case '0':
        return 0;
      case 'x':
        return hex(2);
      case 'u':
        return hex(4);
      default:
        break;
    }
    if ((e >= '1' && e <= '9') || e == 'k') {
      --pos_;
      fail("back-references are not supported");
    }
    if (e == 'b' || e == 'B' || e == 'A' || e == 'z' || e == 'Z' || e == 'G') {
      --pos_;
      fail("anchors (\\b \\B \\A \\z) are not supported");
    }
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) {
      --pos_;
      fail(fmt::format("the escape '\\{}' is not supported", static_cast<char>(e)));
    }
    return e;  // \. \\ \( and other punctuation stand for themselves
  }

  GrammarExpr char_class() {
    ++pos_;
    bool negated = false;
    if (at('^')) {
      negated = true;
      ++pos_;
    }
    std::vector<CodeRange> ranges;
    bool first = true;
    while (true) {
      if (pos_ >= cps_.size()) fail("']' expected closing the class");
      if (at(']') && !first) break;
      first = false;
      uint32_t lo;
      if (at('\\')) {
        std::vector<CodeRange> sh;
        bool neg = false;
        lo = escape(sh, neg);
        if (!sh.empty()) {
          if (neg) {
            for (CodeRange r : normalize_class(sh, true)) ranges.push_back(r);
          } else {
            ranges.insert(ranges.end(), sh.begin(), sh.end());
          }
          continue;
        }
      } else {
        lo = cps_[pos_++];
      }
      uint32_t hi = lo;
      if (at('-') && pos_ + 1 < cps_.size() && cps_[pos_ + 1] != ']') {
        ++pos_;
        if (at('\\')) {
          std::vector<CodeRange> sh;
          bool neg = false;
          hi = escape(sh, neg);
          if (!sh.empty()) fail("a class shorthand cannot end a range");
        } else {
          hi = cps_[pos_++];
        }
        if (hi < lo) fail("a range whose end is below its start");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    return g_class(std::move(ranges), negated);
  }

  std::vector<uint32_t> cps_;
  size_t pos_ = 0;
};

}  // namespace

Grammar regex_grammar(const std::string& pattern) { return RegexParser(pattern).parse(); }

}  // namespace parallm::structured
