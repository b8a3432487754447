// Reproducible token ids for tests: n ids uniform in [0, vocab) from the
// counter RNG keyed by seed, the same on every rank and run.
#pragma once
#include <cstdint>
#include <vector>

#include "base/rng.h"

namespace parallm::testing {

inline std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  const uint64_t key = stream_key(seed, "prompt");
  for (int64_t i = 0; i < n; ++i)
    t[static_cast<size_t>(i)] = static_cast<int32_t>(uniform_at(key, i) * vocab);
  return t;
}

}  // namespace parallm::testing
