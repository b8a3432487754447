// ngram_draft (see ngram_draft.h).
#include "infer/ngram_draft.h"

#include <algorithm>

namespace parallm {

std::vector<int32_t> ngram_draft(std::span<const int32_t> context, int64_t k, int max_n,
                                 int min_n) {
  const int64_t len = static_cast<int64_t>(context.size());
  if (k <= 0) return {};
  for (int64_t n = std::min<int64_t>(max_n, len - 1); n >= std::max(min_n, 1); --n) {
    const std::span<const int32_t> suffix = context.subspan(static_cast<size_t>(len - n));
    // Starts before the suffix's own, latest first: the latest match is the
    // likeliest, but in a loop it sits just before the end with one token
    // after it, so the latest with k tokens after it wins, else the match
    // with the most (the earliest).
    int64_t best = -1;
    for (int64_t i = len - n - 1; i >= 0; --i) {
      if (!std::equal(suffix.begin(), suffix.end(), context.begin() + i)) continue;
      best = i;
      if (len - (i + n) >= k) break;
    }
    if (best >= 0) {
      const int64_t from = best + n, to = std::min(len, from + k);
      return {context.begin() + from, context.begin() + to};
    }
  }
  return {};
}

}  // namespace parallm
