// allowed_tokens and mask_logits (see token_mask.h).
#include "infer/structured/token_mask.h"

#include <algorithm>
#include <limits>

namespace parallm::structured {

void allowed_tokens(const TokenVocabulary& vocab, GrammarAutomaton& a, int32_t state,
                    std::vector<int32_t>& out) {
  out.clear();
  const TokenTrie& t = vocab.trie();
  // at[d]: the automaton's state after the first d bytes of the current path.
  std::vector<int32_t> at(t.max_depth() + 1);
  at[0] = state;
  if (a.can_continue(state)) {
    const size_t n = t.num_nodes();
    for (size_t i = 0; i < n;) {
      const uint32_t d = t.depth(i);
      const int32_t s = a.next(at[d - 1], t.byte(i));
      if (s == GrammarAutomaton::kDead) {
        i = t.subtree_end(i);
        continue;
      }
      at[d] = s;
      out.insert(out.end(), t.tokens_begin(i), t.tokens_end(i));
      ++i;
    }
  }
  if (a.can_end(state))
    for (int32_t e : vocab.eos_ids())
      if (e >= 0 && e < vocab.size()) out.push_back(e);
}

void mask_logits(std::span<const float> logits, const std::vector<int32_t>& allowed,
                 std::vector<float>& out) {
  out.assign(logits.size(), -std::numeric_limits<float>::infinity());
  for (int32_t id : allowed) out[static_cast<size_t>(id)] = logits[static_cast<size_t>(id)];
}

}  // namespace parallm::structured
