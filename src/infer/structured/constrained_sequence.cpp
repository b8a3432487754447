// ConstrainedSequence (see constrained_sequence.h).
#include "infer/structured/constrained_sequence.h"

#include "base/error.h"
#include "infer/structured/token_mask.h"

namespace parallm::structured {

ConstrainedSequence::ConstrainedSequence(std::shared_ptr<const ByteGrammar> g,
                                         std::shared_ptr<const TokenVocabulary> vocab)
    : vocab_(std::move(vocab)), a_(std::move(g)) {
  PX_CHECK(vocab_ != nullptr, "a constrained sequence needs the token vocabulary");
}

size_t ConstrainedSequence::mask(std::span<const float> logits, std::vector<float>& out) {
  PX_CHECK(static_cast<int64_t>(logits.size()) == vocab_->size(),
           "the logits have {} entries, the vocabulary {}", logits.size(), vocab_->size());
  allowed_tokens(*vocab_, a_, state_, allowed_);
  mask_logits(logits, allowed_, out);
  return allowed_.size();
}

bool ConstrainedSequence::advance(int32_t token) {
  if (token < 0 || token >= vocab_->size()) return false;
  const std::string& b = vocab_->bytes(token);
  if (b.empty()) return false;
  const int32_t s = a_.next(state_, b);
  if (s == GrammarAutomaton::kDead) return false;
  state_ = s;
  return true;
}

}  // namespace parallm::structured
