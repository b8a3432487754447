// The scalar constraints of the JSON-schema compiler, as grammar pieces:
// a string's `pattern` (a regex, regex_grammar.h) and `format` (date, time,
// date-time, uuid, email, ipv4) as the quoted JSON string, and an integer's
// minimum / maximum (exclusive ones too) as a digit trie. Invariant: every
// text these accept is valid JSON whose value meets the constraint; what
// they cannot express throws Error saying what is supported.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "infer/structured/grammar.h"

namespace parallm::structured {

inline constexpr int64_t kMaxIntegerChoices = 10000;  // values a bounded range may list

// "..." whose decoded content matches `pattern` (unanchored, as JSON
// Schema says, unless it starts with ^ / ends with $). Characters JSON must
// escape: a literal one is written escaped, a class never takes one.
GrammarExpr json_string_pattern(const std::string& pattern);
GrammarExpr json_string_format(const std::string& format);
// An integer in [lo, hi] (either may be absent): both within
// kMaxIntegerChoices of each other, or a minimum in [0, kMaxIntegerChoices].
GrammarExpr json_integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace parallm::structured
