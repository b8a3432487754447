// A 16-bit KV cache (--kv-dtype bf16 / f16) against the f32 cache: the same
// greedy generation on the tiny GPT-2 and LLaMA (init_std 0.2: logits far
// apart) gives the same tokens, and at every step logits within the bound
// derived in docs/testing.md ("A 16-bit KV cache against f32"); the cache
// holds half the bytes, and the serving engine's block count from a memory
// budget doubles. The kernels' exactness (16-bit pools read as the f32
// kernel reads the widened values) is tests/kernels/paged_attention_lowp_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "common/random_tokens.h"
#include "common/test_models.h"
#include "infer/generator.h"
#include "model/kv_cache/paged_kv_cache.h"
#include "model/transformer.h"

namespace parallm {
namespace {

using testing::random_tokens;

struct GenRun {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<float>> logits;  // per forward, (rows, V) flattened
};

GenRun run(Transformer& m, const std::vector<std::vector<int32_t>>& prompts, KvDType kv) {
  GenerateOptions o;
  o.max_new_tokens = 24;
  o.sampling.temperature = 0.0;
  o.kv_dtype = kv;
  GenRun r;
  o.on_logits = [&](const std::vector<int>&, const Tensor& logits) {
    const float* p = logits.data<float>();
    r.logits.emplace_back(p, p + logits.numel());
  };
  for (const Generation& g : generate(m, prompts, o)) r.tokens.push_back(g.tokens);
  return r;
}

// The bound of docs/testing.md ("A 16-bit KV cache against f32"): every
// logit within kLayerFactor x n_layers x u x |z|max of the f32 cache's, u the
// unit roundoff of the cache's type (bf16 2^-8, f16 2^-11).
constexpr double kLayerFactor = 8.0;

double unit_roundoff(KvDType kv) { return kv == KvDType::BF16 ? 0x1p-8 : 0x1p-11; }

// Param: model (0 GPT-2, 1 LLaMA, 2 GPT-2 with a 64-token vocabulary: wide
// top-1 margins, so even bf16 must give the same tokens), cache type.
class KvDTypeGeneration : public ::testing::TestWithParam<std::tuple<int, KvDType>> {};

TEST_P(KvDTypeGeneration, FollowsTheF32CacheWithinTheDerivedBound) {
  const auto [arch, kv] = GetParam();
  ModelConfig c = arch == 1 ? testing::tiny_llama() : testing::tiny_gpt2();
  if (arch == 2) c.vocab_size = 64;
  c.init_std = 0.2;  // logits far apart, as in cached_forward_test
  Allocator a;
  Transformer m(c, a);
  m.params().init_random(3);
  const int64_t V = c.vocab_size;
  const std::vector<std::vector<int32_t>> prompts = {random_tokens(5, V, 1),
                                                     random_tokens(17, V, 2)};
  const GenRun want = run(m, prompts, KvDType::F32);
  const GenRun got = run(m, prompts, kv);
  ASSERT_EQ(got.logits.size(), want.logits.size());
  double zmax = 0.0;
  for (const std::vector<float>& step : want.logits)
    for (float z : step) zmax = std::max(zmax, std::abs(static_cast<double>(z)));
  const double bound = kLayerFactor * static_cast<double>(c.n_layers) * unit_roundoff(kv) * zmax;
  // Step by step while a sequence's tokens agree; where they part, the f32
  // run's top-1/top-2 margin must lie within twice the bound (a tie that
  // the cache's rounding may break either way), and the comparison of that
  // sequence ends there.
  double worst = 0.0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    for (size_t step = 0; step < want.logits.size(); ++step) {
      const float* w = &want.logits[step][i * V];
      const float* g = &got.logits[step][i * V];
      for (int64_t v = 0; v < V; ++v) worst = std::max(worst, std::abs(double(g[v]) - w[v]));
      if (got.tokens[i][step] == want.tokens[i][step]) continue;
      std::vector<float> sorted(w, w + V);
      std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
      EXPECT_LT(sorted[0] - sorted[1], 2 * bound)
          << "sequence " << i << " parts at step " << step << " with a clear margin";
      EXPECT_NE(arch, 2) << "the 64-token model must give the same tokens";
      if (kv == KvDType::F16) ADD_FAILURE() << "f16: tokens part at step " << step;
      break;
    }
  }
  EXPECT_LE(worst, bound) << "|z|max " << zmax;
  EXPECT_GT(worst, 0.0) << "the 16-bit cache is not in effect";
  std::printf("model %d kv %s: max |dz| %.3g = %.3g u |z|max (bound %.3g)\n", arch,
              kv_dtype_name(kv).c_str(), worst, worst / (unit_roundoff(kv) * zmax), bound);
}

// The pools hold 2 bytes a value: half the f32 cache's, and a serving budget
// (serve_job's kv_cache_blocks) holds twice the blocks.
TEST(KvDType, SixteenBitCacheHalvesTheBytes) {
  const ModelConfig c = testing::tiny_llama();
  Allocator a;
  const PagedKvCache f32(c, TpGroup{}, 10, 16, a);
  for (KvDType kv : {KvDType::BF16, KvDType::F16}) {
    const PagedKvCache half(c, TpGroup{}, 10, 16, a, {}, kv);
    EXPECT_EQ(half.kv_dtype(), kv);
    EXPECT_EQ(2 * half.bytes(), f32.bytes());
    EXPECT_EQ(2 * PagedKvCache::bytes_per_block(c, 1, 16, {}, kv),
              PagedKvCache::bytes_per_block(c, 1, 16));
    const int64_t budget = 10 * PagedKvCache::bytes_per_block(c, 1, 16);
    EXPECT_EQ(PagedKvCache::blocks_for_bytes(c, 1, 16, budget), 10);
    EXPECT_EQ(PagedKvCache::blocks_for_bytes(c, 1, 16, budget, {}, kv), 20);
    EXPECT_THROW(half.k(c.n_layers - 1), Error);  // no f32 view of 16-bit pools
  }
  EXPECT_EQ(kv_dtype_from_name("fp16"), KvDType::F16);
  EXPECT_EQ(kv_dtype_from_name("f32"), KvDType::F32);
  try {
    kv_dtype_from_name("int8");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "unknown KV cache dtype 'int8' (expected f32, bf16 or f16)");
  }
}

INSTANTIATE_TEST_SUITE_P(Caches, KvDTypeGeneration,
                         ::testing::Combine(::testing::Values(0, 1, 2),
                                            ::testing::Values(KvDType::BF16, KvDType::F16)));

}  // namespace
}  // namespace parallm
