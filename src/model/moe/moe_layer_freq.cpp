// The --moe-layer-freq list expression parser (see moe_layer_freq.h): a
// recursive descent over the text; values are integers or lists of integers.
#include "model/moe/moe_layer_freq.h"

#include <cctype>
#include <cstdint>

#include "base/error.h"

namespace parallm {
namespace {

// A pattern longer than this is a typo, not a model (and would exhaust memory).
constexpr int64_t kMaxEntries = 1 << 20;

struct Value {
  bool is_list = false;
  int64_t n = 0;
  std::vector<int64_t> list;
};

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  std::vector<int> run() {
    Value v = expr();
    skip();
    if (pos_ < text_.size()) fail(fmt::format("unexpected '{}'", text_[pos_]));
    if (!v.is_list) fail("the expression gives a number, not a list");
    if (v.list.empty()) fail("the expression gives an empty list");
    std::vector<int> out;
    for (size_t i = 0; i < v.list.size(); ++i) {
      PX_CHECK(v.list[i] == 0 || v.list[i] == 1,
               "moe layer frequency '{}': entries must be 0 (dense) or 1 (MoE); layer {} has {}",
               text_, i, v.list[i]);
      out.push_back(static_cast<int>(v.list[i]));
    }
    return out;
  }

 private:
  const std::string& text_;
  size_t pos_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    PX_FAIL(
        "moe layer frequency '{}': {} at position {} (expected a list expression like "
        "([1]*3+[0]*1)*3)",
        text_, what, pos_);
  }
  void skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void check_size(size_t n) const {
    if (static_cast<int64_t>(n) > kMaxEntries)
      fail(fmt::format("a list of more than {} entries", kMaxEntries));
  }

  Value expr() {
    Value v = term();
    while (eat('+')) {
      Value r = term();
      if (v.is_list != r.is_list) fail("a number and a list cannot be added");
      if (v.is_list) {
        check_size(v.list.size() + r.list.size());
        v.list.insert(v.list.end(), r.list.begin(), r.list.end());
      } else {
        v.n += r.n;
        if (v.n > kMaxEntries) fail("a number that large");
      }
    }
    return v;
  }

  Value term() {
    Value v = factor();
    while (eat('*')) {
      Value r = factor();
      if (v.is_list && r.is_list) fail("two lists cannot be multiplied");
      if (!v.is_list && !r.is_list) {
        v.n *= r.n;
        if (v.n > kMaxEntries) fail("a number that large");
        continue;
      }
      Value& list = v.is_list ? v : r;
      const int64_t times = v.is_list ? r.n : v.n;
      if (times < 0) fail("a list repeated a negative number of times");
      check_size(list.list.size() * static_cast<size_t>(times));
      Value out{.is_list = true};
      for (int64_t t = 0; t < times; ++t)
        out.list.insert(out.list.end(), list.list.begin(), list.list.end());
      v = std::move(out);
    }
    return v;
  }

  Value factor() {
    skip();
    if (eat('(')) {
      Value v = expr();
      if (!eat(')')) fail("a missing ')'");
      return v;
    }
    if (eat('[')) {
      Value v{.is_list = true};
      if (eat(']')) return v;
      do {  // a trailing comma is allowed, as in Python
        skip();
        if (pos_ < text_.size() && text_[pos_] == ']') break;
        Value e = expr();
        if (e.is_list) fail("a list inside a list");
        v.list.push_back(e.n);
      } while (eat(','));
      if (!eat(']')) fail("a missing ']' or ','");
      return v;
    }
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      int64_t n = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        n = n * 10 + (text_[pos_++] - '0');
        if (n > kMaxEntries) fail("a number that large");
      }
      return Value{.n = n};
    }
    fail(pos_ < text_.size() ? fmt::format("unexpected '{}'", text_[pos_])
                             : std::string("an unfinished expression"));
  }
};

}  // namespace

std::vector<int> parse_moe_layer_freq_list(const std::string& text) { return Parser(text).run(); }

}  // namespace parallm
