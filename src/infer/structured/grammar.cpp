// The Grammar builders and rule table (see grammar.h).
#include "infer/structured/grammar.h"

#include "base/error.h"
#include "data/tokenizer/utf8.h"

namespace parallm::structured {

GrammarExpr g_empty() { return {}; }

GrammarExpr g_lit(std::string utf8) {
  GrammarExpr e;
  e.kind = utf8.empty() ? GrammarExpr::Kind::Empty : GrammarExpr::Kind::Literal;
  e.text = std::move(utf8);
  return e;
}

GrammarExpr g_class(std::vector<CodeRange> ranges, bool negated) {
  GrammarExpr e;
  e.kind = GrammarExpr::Kind::Class;
  e.ranges = std::move(ranges);
  e.negated = negated;
  return e;
}

GrammarExpr g_seq(std::vector<GrammarExpr> items) {
  if (items.size() == 1) return std::move(items.front());
  GrammarExpr e;
  e.kind = items.empty() ? GrammarExpr::Kind::Empty : GrammarExpr::Kind::Seq;
  e.items = std::move(items);
  return e;
}

GrammarExpr g_alt(std::vector<GrammarExpr> items) {
  PX_CHECK(!items.empty(), "an alternation needs at least one branch");
  if (items.size() == 1) return std::move(items.front());
  GrammarExpr e;
  e.kind = GrammarExpr::Kind::Alt;
  e.items = std::move(items);
  return e;
}

GrammarExpr g_repeat(GrammarExpr inner, int min, int max) {
  PX_CHECK(min >= 0 && (max == kUnbounded || max >= min),
           "a repeat needs 0 <= min <= max, got {{{},{}}}", min, max);
  GrammarExpr e;
  e.kind = GrammarExpr::Kind::Repeat;
  e.items.push_back(std::move(inner));
  e.min_repeat = min;
  e.max_repeat = max;
  return e;
}

GrammarExpr g_ref(std::string rule) {
  GrammarExpr e;
  e.kind = GrammarExpr::Kind::Ref;
  e.text = std::move(rule);
  return e;
}

void Grammar::add(const std::string& name, GrammarExpr body) {
  PX_CHECK(!has(name), "the rule '{}' is defined twice", name);
  rules.emplace_back(name, std::move(body));
}

bool Grammar::has(const std::string& name) const {
  for (const auto& r : rules)
    if (r.first == name) return true;
  return false;
}

std::vector<uint32_t> utf8_code_points(const std::string& s, const std::string& what) {
  PX_CHECK(utf8_valid(s), "{} is not valid UTF-8", what);
  std::vector<uint32_t> out;
  for (size_t pos = 0; pos < s.size();)
    out.push_back(static_cast<uint32_t>(next_code_point(s, pos)));
  return out;
}

}  // namespace parallm::structured
