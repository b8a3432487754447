// The token mask of one step: which ids the grammar allows next. The walk
// goes down the vocabulary's byte trie together with the automaton, one
// transition per trie edge, and skips a whole subtree at the first byte the
// grammar refuses, so its cost follows the allowed tokens (and their
// refused first extensions), not the vocabulary. A token may span several
// grammar symbols, or end inside a UTF-8 character: the automaton works on
// bytes, so neither needs a special case. EOS ids are allowed exactly when
// the grammar may end.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "infer/structured/grammar_automaton.h"
#include "infer/structured/token_vocabulary.h"

namespace parallm::structured {

// The allowed ids at `state` (EOS included when it may end), in trie order.
void allowed_tokens(const TokenVocabulary& vocab, GrammarAutomaton& a, int32_t state,
                    std::vector<int32_t>& out);

// out := logits with every id outside `allowed` at -infinity.
void mask_logits(std::span<const float> logits, const std::vector<int32_t>& allowed,
                 std::vector<float>& out);

}  // namespace parallm::structured
