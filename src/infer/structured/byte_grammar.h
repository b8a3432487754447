// ByteGrammar: a Grammar compiled for the matcher. Every rule is a list of
// alternatives; an alternative is a run of elements in one flat array, each
// a byte set or a reference to a rule, closed by an End element. Literals
// become one byte set per byte, Unicode classes become alternatives of
// UTF-8 byte-range runs (utf8_ranges.h), repeats become helper rules
// (x* : S ::= x S | ; x{0,k} : a chain of k rules, shared between equal x).
// Invariants: every reference resolves; no rule reaches itself without
// consuming a byte (left recursion is refused at compile time, naming the
// rules), so the matcher's expansion always ends.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "infer/structured/grammar.h"

namespace parallm::structured {

struct ByteElem {
  enum class Kind : uint8_t { Bytes, Ref, End };
  Kind kind = Kind::End;
  uint32_t arg = 0;  // Bytes: index of its set; Ref: the rule
};

using ByteSet = std::array<uint64_t, 4>;  // bit b: byte b is in the set
inline bool byte_set_has(const ByteSet& s, uint8_t b) { return (s[b >> 6] >> (b & 63)) & 1; }

class ByteGrammar {
 public:
  const std::vector<ByteElem>& elems() const { return elems_; }
  const ByteElem& elem(uint32_t pos) const { return elems_[pos]; }
  const ByteSet& set(uint32_t i) const { return sets_[i]; }
  // The first element of each alternative of rule r.
  const uint32_t* alts_begin(uint32_t r) const { return alt_starts_.data() + rule_first_[r]; }
  const uint32_t* alts_end(uint32_t r) const { return alt_starts_.data() + rule_first_[r + 1]; }
  uint32_t root() const { return root_; }
  size_t num_rules() const { return names_.size(); }
  const std::string& rule_name(uint32_t r) const { return names_[r]; }

 private:
  friend class ByteGrammarBuilder;
  std::vector<ByteElem> elems_;
  std::vector<ByteSet> sets_;
  std::vector<uint32_t> alt_starts_;
  std::vector<uint32_t> rule_first_;  // num_rules + 1 offsets into alt_starts_
  std::vector<std::string> names_;
  uint32_t root_ = 0;
};

// Limits that keep a request's grammar from taking the server's memory.
inline constexpr size_t kMaxGrammarElems = 4u << 20;

// Compiles g; throws Error naming an undefined rule, a missing root, left
// recursion, or a grammar over kMaxGrammarElems elements.
std::shared_ptr<const ByteGrammar> compile_grammar(const Grammar& g);

}  // namespace parallm::structured
