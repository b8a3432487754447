// parse_gbnf: a grammar written in GBNF, llama.cpp's BNF dialect:
//   name ::= alternatives     (the start rule is `root`)
// with "literals" (escapes \n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH),
// [classes] with ranges and ^ negation, `.` (any character), ( groups ),
// `|`, and the repeats ? * + {m} {m,} {m,n}; `#` starts a comment. A rule
// may span lines: it ends where the next `name ::=` starts.
// Invariant: any input either parses or throws Error naming the line and
// column and what was expected there; nothing is read past the end.
#pragma once
#include <string>

#include "infer/structured/grammar.h"

namespace parallm::structured {

inline constexpr int kMaxGbnfRepeat = 10000;  // {m,n} bounds above this are refused

Grammar parse_gbnf(const std::string& text);

}  // namespace parallm::structured
