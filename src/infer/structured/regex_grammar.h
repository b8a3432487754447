// Regular expression -> Grammar, for structured_outputs.regex: the whole
// output must match (anchors implicit; a leading ^ and trailing $ are
// allowed and mean nothing more). Supported: literals, escapes (\n \r \t
// \f \v \0 \xHH \uHHHH \. and the like), classes [a-z] [^...] with \d \w \s
// inside, the shorthands \d \D \w \W \s \S, `.` (any character but \n),
// groups ( ) and (?: ) and named (?<n> ), `|`, and the repeats ? * + {m}
// {m,} {m,n} (a lazy or possessive suffix is accepted: it does not change
// what matches). Back-references, lookaround, anchors inside the pattern
// and flags are an Error naming the construct and its offset.
#pragma once
#include <string>

#include "infer/structured/grammar.h"

namespace parallm::structured {

Grammar regex_grammar(const std::string& pattern);

}  // namespace parallm::structured
