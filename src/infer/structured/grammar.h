// Grammar: the text-level form every constraint is written in before it is
// compiled to bytes (byte_grammar.h): named rules whose bodies are
// expressions over Unicode code points (GBNF's model: literals, character
// classes with ranges and negation, sequences, alternatives, bounded and
// unbounded repeats, references to rules by name). The GBNF parser, the
// JSON-schema compiler and the regex compiler all produce one.
// Invariant: an expression is a plain value tree; rule names resolve only
// when the grammar is compiled, which names any rule that is missing.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace parallm::structured {

struct CodeRange {
  uint32_t lo = 0, hi = 0;  // inclusive code points
};

inline constexpr int kUnbounded = -1;  // GrammarExpr::max_repeat: no upper bound

struct GrammarExpr {
  enum class Kind { Empty, Literal, Class, Seq, Alt, Repeat, Ref };
  Kind kind = Kind::Empty;
  std::string text;                             // Literal: UTF-8; Ref: the rule's name
  std::vector<CodeRange> ranges;                // Class
  bool negated = false;                         // Class: every code point outside ranges
  std::vector<GrammarExpr> items;               // Seq, Alt; Repeat: the one repeated
  int min_repeat = 0, max_repeat = kUnbounded;  // Repeat
};

// Builders, so the compilers read as the grammar they emit.
GrammarExpr g_empty();
GrammarExpr g_lit(std::string utf8);
GrammarExpr g_class(std::vector<CodeRange> ranges, bool negated = false);
GrammarExpr g_seq(std::vector<GrammarExpr> items);
GrammarExpr g_alt(std::vector<GrammarExpr> items);
GrammarExpr g_repeat(GrammarExpr e, int min, int max);
GrammarExpr g_ref(std::string rule);
inline GrammarExpr g_opt(GrammarExpr e) { return g_repeat(std::move(e), 0, 1); }
inline GrammarExpr g_star(GrammarExpr e) { return g_repeat(std::move(e), 0, kUnbounded); }

struct Grammar {
  std::vector<std::pair<std::string, GrammarExpr>> rules;  // in definition order
  std::string root = "root";
  // Adds a rule; a name defined twice is an error (GBNF's parser merges
  // alternatives itself before calling this).
  void add(const std::string& name, GrammarExpr body);
  bool has(const std::string& name) const;
};

// The code points of a UTF-8 string; throws Error on invalid UTF-8, naming `what`.
std::vector<uint32_t> utf8_code_points(const std::string& s, const std::string& what);

}  // namespace parallm::structured
