// ConstrainedSequence (see constrained_sequence.h).
#include "infer/structured/constrained_sequence.h"

#include <algorithm>

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
  auto hit =
      std::find_if(kept_.begin(), kept_.end(), [&](const auto& k) { return k.first == state_; });
  if (hit == kept_.end()) {
    std::vector<int32_t> ids;
    if (kept_.size() == kKeptMasks) {  // reuse the oldest list's memory
      ids = std::move(kept_.front().second);
      kept_.erase(kept_.begin());
    }
    allowed_tokens(*vocab_, a_, state_, ids);
    kept_.emplace_back(state_, std::move(ids));
    hit = kept_.end() - 1;
  }
  last_ = static_cast<int>(hit - kept_.begin());
  mask_logits(logits, hit->second, out);
  return hit->second.size();
}

const std::vector<int32_t>& ConstrainedSequence::allowed() const {
  static const std::vector<int32_t> none;
  return last_ < 0 ? none : kept_[static_cast<size_t>(last_)].second;
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
