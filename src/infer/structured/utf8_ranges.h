// Code-point sets as UTF-8 byte sequences: a character class over Unicode
// (GBNF's [^"\\], a regex's \w, JSON's string characters) becomes a few
// alternatives, each a run of 1-4 byte ranges, so that the matcher can work
// on bytes alone and never sees a partial character.
// Invariant: the sequences match exactly the UTF-8 encodings of the code
// points in the set (surrogates D800-DFFF, which UTF-8 cannot carry, never).
#pragma once
#include <cstdint>
#include <vector>

#include "infer/structured/grammar.h"

namespace parallm::structured {

struct ByteRange {
  uint8_t lo = 0, hi = 0;  // inclusive
};
using ByteSequence = std::vector<ByteRange>;  // one byte range per byte, 1-4 long

// Sorted, merged ranges of the class (negation applied against all of
// Unicode), without the surrogates.
std::vector<CodeRange> normalize_class(const std::vector<CodeRange>& ranges, bool negated);

// The UTF-8 sequences of normalized ranges, in code point order.
std::vector<ByteSequence> utf8_sequences(const std::vector<CodeRange>& normalized);

}  // namespace parallm::structured
