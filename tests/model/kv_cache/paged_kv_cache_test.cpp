// Tests of the paged KV cache's storage (model/kv_cache/paged_kv_cache.h): sizing
// from a byte budget (this rank's kv heads under tp, a pipeline stage's
// layers), the pools' memory tag, span checks, and keys written through
// spans then read by paged attention equal contiguous attention.
#include "model/kv_cache/paged_kv_cache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/error.h"
#include "base/rng.h"
#include "common/test_models.h"
#include "kernels/cpu/attention.h"

namespace parallm {
namespace {

TEST(PagedKvCache, SizesBlocksFromBytesPerRank) {
  const ModelConfig cfg = testing::tiny_llama();  // 2 layers, 2 kv heads of 12
  const int64_t per = 2 * 2 * 16 * 2 * 12 * 4;
  EXPECT_EQ(PagedKvCache::bytes_per_block(cfg, 1, 16), per);
  EXPECT_EQ(PagedKvCache::bytes_per_block(cfg, 2, 16), per / 2);          // one kv head per rank
  EXPECT_EQ(PagedKvCache::bytes_per_block(cfg, 1, 16, {1, 1}), per / 2);  // a stage's layer
  EXPECT_EQ(PagedKvCache::blocks_for_bytes(cfg, 1, 16, 10 * per + per - 1), 10);
  EXPECT_EQ(PagedKvCache::blocks_for_bytes(cfg, 1, 16, per - 1), 0);
  EXPECT_THROW(PagedKvCache::blocks_for_bytes(cfg, 1, 16, -1), Error);
  EXPECT_THROW(PagedKvCache::bytes_per_block(cfg, 1, 0), Error);
}

TEST(PagedKvCache, PoolsAreTaggedActivationAndSizedExactly) {
  const ModelConfig cfg = testing::tiny_llama();
  Allocator a;
  {
    PagedKvCache c(cfg, TpGroup{}, 10, 16, a);
    EXPECT_EQ(c.kv_heads(), 2);
    EXPECT_EQ(c.head_dim(), 12);
    EXPECT_EQ(c.layers().first, 0);
    EXPECT_EQ(c.layers().count, 2);
    EXPECT_EQ(c.bytes(), 10 * PagedKvCache::bytes_per_block(cfg, 1, 16));
    EXPECT_EQ(a.current(MemTag::Activation), c.bytes());
    EXPECT_NE(c.k(0), c.v(0));
    EXPECT_NE(c.k(0), c.k(1));
  }
  EXPECT_EQ(a.current(MemTag::Activation), 0);
  // A pipeline stage holding layer 1 only.
  PagedKvCache stage(cfg, TpGroup{}, 4, 8, a, {1, 1});
  EXPECT_EQ(stage.bytes(), 4 * PagedKvCache::bytes_per_block(cfg, 1, 8, {1, 1}));
  EXPECT_THROW(stage.k(0), Error);
  EXPECT_NO_THROW(stage.k(1));
  EXPECT_THROW(PagedKvCache(cfg, TpGroup{}, 4, 8, a, {1, 2}), Error);
  EXPECT_THROW(PagedKvCache(cfg, TpGroup{}, 0, 8, a), Error);
}

TEST(PagedKvCache, ChecksSpans) {
  const ModelConfig cfg = testing::tiny_llama();
  Allocator a;
  PagedKvCache c(cfg, TpGroup{}, 4, 4, a);
  EXPECT_NO_THROW(c.check_spans({{0, 4, {2}}, {5, 3, {0, 3}}}));
  EXPECT_THROW(c.check_spans({{0, 0, {2}}}), Error);  // empty
  EXPECT_THROW(c.check_spans({{3, 2, {2}}}), Error);  // position 4 needs a 2nd block
  EXPECT_THROW(c.check_spans({{0, 2, {4}}}), Error);  // outside the pool
  EXPECT_THROW(c.check_spans({{0, 2, {-1}}}), Error);
}

// Keys and values of two sequences written through their spans (a prompt,
// then a decode step) and read by paged attention equal contiguous attention.
TEST(PagedKvCache, WrittenSpansReadBackThroughPagedAttention) {
  ModelConfig cfg = testing::tiny_llama();  // 6 query heads, 2 kv heads, head_dim 12
  Allocator a;
  const int64_t bs = 4, layer = 1, Hq = cfg.n_heads, row = cfg.n_kv_heads * cfg.head_dim;
  PagedKvCache c(cfg, TpGroup{}, 8, bs, a);
  const std::vector<std::vector<int32_t>> tables = {{5, 1, 6}, {0, 7}};
  const std::vector<int64_t> lens = {10, 7};
  std::vector<std::vector<float>> k(2), v(2), q(2);
  const uint64_t key = stream_key(3, "paged");
  uint64_t n = 0;
  for (int s = 0; s < 2; ++s)
    for (auto* x : {&k[s], &v[s], &q[s]}) {
      const int64_t cnt = x == &q[s] ? lens[s] * Hq * cfg.head_dim : lens[s] * row;
      for (int64_t i = 0; i < cnt; ++i) x->push_back(static_cast<float>(normal_at(key, n++)));
    }
  // Prompt minus its last token, then the last token as a decode step.
  for (int s = 0; s < 2; ++s) {
    c.write(layer, {0, lens[s] - 1, tables[s]}, k[s].data(), v[s].data());
    c.write(layer, {lens[s] - 1, 1, tables[s]}, k[s].data() + (lens[s] - 1) * row,
            v[s].data() + (lens[s] - 1) * row);
  }
  const std::vector<PagedSpan> spans = {{lens[0] - 1, 1, tables[0]}, {lens[1] - 1, 1, tables[1]}};
  c.check_spans(spans);
  const std::vector<cpu::PagedSeq> seqs = PagedKvCache::kernel_seqs(spans);
  std::vector<float> qlast, out(static_cast<size_t>(2 * Hq * cfg.head_dim));
  for (int s = 0; s < 2; ++s) qlast.insert(qlast.end(), q[s].end() - Hq * cfg.head_dim, q[s].end());
  const double scale = 1.0 / std::sqrt(static_cast<double>(cfg.head_dim));
  cpu::paged_attention_forward<float>(out.data(), nullptr, qlast.data(), c.k(layer), c.v(layer),
                                      seqs.data(), 2, c.attn_dims(Hq), scale);
  for (int s = 0; s < 2; ++s) {
    const cpu::AttnDims d{.B = 1,
                          .Tq = 1,
                          .Tk = lens[s],
                          .Hq = Hq,
                          .Hkv = cfg.n_kv_heads,
                          .D = cfg.head_dim,
                          .q_pos0 = lens[s] - 1};
    std::vector<float> want(static_cast<size_t>(Hq * cfg.head_dim)), lse(static_cast<size_t>(Hq));
    cpu::attention_forward(want.data(), lse.data(), qlast.data() + s * Hq * cfg.head_dim,
                           k[s].data(), v[s].data(), d, scale);
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(out[s * want.size() + i], want[i], 1e-6 * (1.0 + std::abs(want[i])));
  }
}

}  // namespace
}  // namespace parallm
