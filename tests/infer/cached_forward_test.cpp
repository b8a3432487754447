// The cached inference forward against the full forward: at every decode
// step the KV-cached logits (through a paged cache whose blocks are out of
// order, block size 3, so tokens straddle block boundaries) equal the last position's logits of an
// uncached forward over the whole sequence so far; a batch of prompts of different lengths
// generates exactly the tokens each prompt generates alone; a pipeline stage holds only its own
// layers' cache. For GPT-2, LLaMA and a Mistral-style LLaMA whose sliding window (5) is shorter
// than the sequences.
#include <gtest/gtest.h>

#include <cmath>

#include "base/rng.h"
#include "common/cached_decode.h"
#include "common/random_tokens.h"
#include "common/test_models.h"
#include "infer/generator.h"
#include "model/kv_cache/paged_kv_cache.h"
#include "model/transformer.h"

namespace parallm {
namespace {

using testing::random_tokens;

// Param: 0 GPT-2, 1 LLaMA, 2 LLaMA with a sliding window (Mistral).
class CachedBoth : public ::testing::TestWithParam<int> {
 protected:
  ModelConfig cfg() const { return testing::decoder_for_generation(GetParam()); }
};

TEST_P(CachedBoth, DecodeLogitsEqualFullForward) {
  Allocator a;
  Transformer m(cfg(), a);
  m.params().init_random(11);
  const int64_t V = m.config().vocab_size;
  std::vector<int32_t> seq = random_tokens(7, V, 1);
  PagedKvCache cache(m.config(), m.tp(), 12, 3, a);
  const std::vector<int32_t> table = {7, 2, 11, 0, 5, 9, 1, 3, 10, 4};  // 30 positions
  testing::expect_cached_decode_matches_full(m, seq, cache, table, 20);
}

TEST_P(CachedBoth, BatchOfDifferentLengthsEqualsEachAlone) {
  Allocator a;
  Transformer m(cfg(), a);
  m.params().init_random(5);
  const int64_t V = m.config().vocab_size;
  const std::vector<std::vector<int32_t>> prompts = {
      random_tokens(3, V, 2), random_tokens(11, V, 3), random_tokens(1, V, 4),
      random_tokens(6, V, 5)};
  GenerateOptions o;
  o.max_new_tokens = 16;
  o.sampling.temperature = 0.0;
  o.eos_ids = {7};  // may end some sequences early: the others must not notice
  const std::vector<Generation> batch = generate(m, prompts, o);
  ASSERT_EQ(batch.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::vector<Generation> alone = generate(m, {prompts[i]}, o);
    EXPECT_EQ(batch[i].tokens, alone[0].tokens) << "prompt " << i;
    EXPECT_EQ(batch[i].finish, alone[0].finish);
  }
  // Sampled, too: the draws depend on (seed, sequence, step) only.
  o.sampling = {.temperature = 0.9, .top_k = 50, .seed = 17};
  const std::vector<Generation> s1 = generate(m, prompts, o);
  const std::vector<Generation> s2 = generate(m, prompts, o);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(s1[i].tokens, s2[i].tokens);
}

INSTANTIATE_TEST_SUITE_P(Arch, CachedBoth, ::testing::Values(0, 1, 2), [](const auto& info) {
  return std::string(testing::decoder_name(info.param));
});

// A pipeline stage caches only its own layers, by global index.
TEST(CachedForward, StageCachesOnlyItsLayers) {
  Allocator a;
  const ModelConfig c = testing::tiny_llama();
  ASSERT_GE(c.n_layers, 2);
  PagedKvCache cache(c, TpGroup{}, 2, 4, a, LayerRange{1, 1});
  EXPECT_NE(cache.k(1), nullptr);
  EXPECT_EQ(cache.kv_heads(), c.n_kv_heads);  // GQA: only the key/value groups are cached
  try {
    cache.k(0);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 0 is not in this KV cache (layers [1, 2))"),
              std::string::npos)
        << e.what();
  }
}

TEST(Generate, RefusesPromptsBeyondTheContext) {
  Allocator a;
  Transformer m(testing::tiny_gpt2(), a);  // max_positions 64
  m.params().init_random(1);
  GenerateOptions o;
  o.max_new_tokens = 10;
  auto message = [&](std::vector<std::vector<int32_t>> p) {
    try {
      generate(m, p, o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({std::vector<int32_t>(65, 1)}),
            "prompt 0 has 65 tokens, more than the model's context (max_positions 64)");
  EXPECT_EQ(message({{1}, std::vector<int32_t>(60, 1)}),
            "prompt 1 (60 tokens) + max_new_tokens (10) = 70 exceeds the model's context "
            "(max_positions 64)");
  EXPECT_EQ(message({{}}), "prompt 0 is empty");
  EXPECT_EQ(message({{1, 5000}}), "prompt 0 holds token 5000, outside the vocabulary (1000)");
  o.max_new_tokens = 0;
  EXPECT_EQ(message({{1}}), "max_new_tokens must be >= 1, got 0");
}

// Stop strings end a sequence once its decoded text contains one.
TEST(Generate, StopsOnStopStrings) {
  Allocator a;
  Transformer m(testing::tiny_gpt2(), a);
  m.params().init_random(1);
  GenerateOptions o;
  o.max_new_tokens = 12;
  o.sampling.temperature = 0.0;
  const std::vector<Generation> free = generate(m, {{1, 2, 3}}, o);
  ASSERT_EQ(free[0].tokens.size(), 12u);
  // Decode as decimal ids joined by spaces; stop at the text of tokens 4 and 5.
  o.decode = [](std::span<const int32_t> ids) {
    std::string s;
    for (int32_t t : ids) s += std::to_string(t) + " ";
    return s;
  };
  const std::string stop =
      std::to_string(free[0].tokens[4]) + " " + std::to_string(free[0].tokens[5]) + " ";
  o.stop_strings = {stop};
  const std::vector<Generation> g = generate(m, {{1, 2, 3}}, o);
  EXPECT_EQ(g[0].finish, FinishReason::Stop);
  ASSERT_LE(g[0].tokens.size(), 6u);
  const std::string text = o.decode(g[0].tokens);
  EXPECT_EQ(text.find(stop), g[0].text_end);
}

}  // namespace
}  // namespace parallm
