// Greedy decode through the paged KV cache against the full forward: the
// prompt is prefilled in one call, then one token per step; at every step
// the cached logits must equal the last row of an uncached forward over the
// whole sequence so far (1e-5 of the largest logit), and the sequence grows
// by the full forward's argmax. `table` lists the cache blocks in the order
// the sequence uses them (out of order on purpose, so tokens straddle
// blocks); it must cover the prompt plus `steps` tokens.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/kv_cache/paged_kv_cache.h"
#include "model/transformer.h"

namespace parallm::testing {

inline void expect_cached_decode_matches_full(Transformer& m, std::vector<int32_t> seq,
                                              PagedKvCache& cache,
                                              const std::vector<int32_t>& table, int steps) {
  const int64_t V = m.config().vocab_size;
  std::vector<int32_t> feed = seq;
  int64_t held = 0;
  for (int step = 0; step < steps; ++step) {
    const int64_t n = static_cast<int64_t>(feed.size());
    const Tensor cached = m.forward_cached(feed.data(), {{held, n, table}}, cache);
    held += n;
    const int64_t T = static_cast<int64_t>(seq.size());
    ASSERT_EQ(held, T);
    const Tensor full = m.logits(seq.data(), 1, T);
    const float* last = full.data<float>() + (T - 1) * V;
    double err = 0, scale = 0;
    int32_t best = 0;
    for (int64_t i = 0; i < V; ++i) {
      err = std::max(err, std::abs(static_cast<double>(cached.data<float>()[i]) - last[i]));
      scale = std::max(scale, std::abs(static_cast<double>(last[i])));
      if (last[i] > last[best]) best = static_cast<int32_t>(i);
    }
    EXPECT_LE(err, 1e-5 * scale + 1e-6) << "step " << step;
    seq.push_back(best);
    feed = {best};
  }
}

}  // namespace parallm::testing
