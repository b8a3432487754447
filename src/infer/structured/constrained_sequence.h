// ConstrainedSequence: one generated sequence held to a grammar, as the
// serving engine uses it per step: mask the step's logits, then advance by
// the token it sampled. The automaton is the sequence's own (it grows as it
// meets new states), so sequences never share mutable state. The last few
// states' allowed lists are kept: inside an unbounded string the state
// comes back after every character, and its 48k-token list is not walked
// again.
// Invariant: every token it advances by was allowed by the mask before it,
// so the text generated so far is always a prefix the grammar accepts.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "infer/structured/byte_grammar.h"
#include "infer/structured/grammar_automaton.h"
#include "infer/structured/token_vocabulary.h"

namespace parallm::structured {

class ConstrainedSequence {
 public:
  ConstrainedSequence(std::shared_ptr<const ByteGrammar> g,
                      std::shared_ptr<const TokenVocabulary> vocab);
  // out := logits masked to the allowed ids; returns how many are allowed
  // (0: nothing may follow, not even EOS).
  size_t mask(std::span<const float> logits, std::vector<float>& out);
  // Moves past `token`; an EOS id (or a refused token, which mask() never
  // allows) leaves the state as it is and returns false.
  bool advance(int32_t token);
  // The grammar is satisfied and takes nothing more: the sequence is done.
  bool complete() const { return a_.can_end(state_) && !a_.can_continue(state_); }
  bool can_end() const { return a_.can_end(state_); }
  // The ids the last mask() allowed.
  const std::vector<int32_t>& allowed() const;
  size_t automaton_states() const { return a_.num_states(); }

 private:
  std::shared_ptr<const TokenVocabulary> vocab_;
  GrammarAutomaton a_;
  int32_t state_ = 0;
  static constexpr size_t kKeptMasks = 4;
  std::vector<std::pair<int32_t, std::vector<int32_t>>> kept_;  // (state, allowed), newest last
  int last_ = -1;                                               // kept_ index of the last mask
};

}  // namespace parallm::structured
