// Rope scaling on the inference path (model/layers/rope_frequencies.h): for
// linear, llama3 and dynamic NTK models the KV-cached decode logits equal an
// uncached forward over the whole sequence, and the scaling changes them;
// a dynamic NTK model runs past max_positions (a prompt prefilled in one
// span matches the full forward at that length, a batch generates what each
// prompt generates alone, since each sequence uses its own length), while
// the other scalings still stop at max_positions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/random_tokens.h"
#include "common/test_models.h"
#include "infer/generator.h"
#include "model/kv_cache/paged_kv_cache.h"
#include "model/transformer.h"

namespace parallm {
namespace {

using testing::random_tokens;

ModelConfig scaled(RopeScalingType type, int64_t max_positions = 64) {
  ModelConfig c = testing::tiny_llama();  // head_dim 12, theta 1e4
  c.init_std = 0.2;
  c.max_positions = max_positions;
  c.rope_scaling.type = type;
  c.rope_scaling.factor = type == RopeScalingType::Llama3 ? 8.0 : 2.0;
  // Original context 32: wavelengths 6.3 (kept), 29 (smoothed), 135+ (divided).
  if (type == RopeScalingType::Llama3) c.rope_scaling.original_max_positions = 32;
  return c;
}

// max |a - b| over the V logits, relative to the largest of b.
double rel_diff(const float* a, const float* b, int64_t V) {
  double err = 0, scale = 0;
  for (int64_t i = 0; i < V; ++i) {
    err = std::max(err, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return err / scale;
}

std::vector<int32_t> table(int64_t n) {  // blocks out of order (n not a multiple of 5)
  std::vector<int32_t> t;
  for (int64_t i = 0; i < n; ++i) t.push_back(static_cast<int32_t>((i * 5) % n));
  return t;
}

class RopeScaled : public ::testing::TestWithParam<RopeScalingType> {};

TEST_P(RopeScaled, DecodeLogitsEqualFullForwardAndDifferFromUnscaled) {
  Allocator a;
  Transformer m(scaled(GetParam()), a);
  m.params().init_random(11);
  ModelConfig plain_cfg = scaled(GetParam());
  plain_cfg.rope_scaling = {};
  Transformer plain(plain_cfg, a);
  plain.params().init_random(11);
  const int64_t V = m.config().vocab_size;
  std::vector<int32_t> seq = random_tokens(7, V, 1), feed = seq;
  PagedKvCache cache(m.config(), m.tp(), 12, 3, a);
  int64_t held = 0;
  for (int step = 0; step < 20; ++step) {
    const int64_t n = static_cast<int64_t>(feed.size());
    const Tensor cached = m.forward_cached(feed.data(), {{held, n, table(12)}}, cache);
    held += n;
    const int64_t T = static_cast<int64_t>(seq.size());
    const Tensor full = m.logits(seq.data(), 1, T);
    const float* last = full.data<float>() + (T - 1) * V;
    EXPECT_LE(rel_diff(cached.data<float>(), last, V), 1e-5) << "step " << step;
    if (step == 19) {  // the scaling acts on this model
      const Tensor other = plain.logits(seq.data(), 1, T);
      EXPECT_GT(rel_diff(other.data<float>() + (T - 1) * V, last, V), 1e-3);
    }
    seq.push_back(static_cast<int32_t>(std::max_element(last, last + V) - last));
    feed = {seq.back()};
  }
}

// Dynamic NTK scales nothing within max_positions (64 here): no difference
// from the unscaled model is expected, so only linear and llama3 are asked.
INSTANTIATE_TEST_SUITE_P(Types, RopeScaled,
                         ::testing::Values(RopeScalingType::Linear, RopeScalingType::Llama3),
                         [](const auto& info) { return rope_scaling_name(info.param); });

TEST(DynamicNtk, PrefillBeyondTheContextEqualsTheFullForward) {
  Allocator a;
  Transformer m(scaled(RopeScalingType::Dynamic, 8), a);
  m.params().init_random(3);
  ModelConfig plain_cfg = scaled(RopeScalingType::Dynamic, 8);
  plain_cfg.rope_scaling = {};
  Transformer plain(plain_cfg, a);
  plain.params().init_random(3);
  const int64_t V = m.config().vocab_size;
  for (int64_t T : {5, 8, 20}) {
    const std::vector<int32_t> seq = random_tokens(T, V, 2);
    PagedKvCache cache(m.config(), m.tp(), 8, 3, a);
    const Tensor cached = m.forward_cached(seq.data(), {{0, T, table(7)}}, cache);
    const Tensor full = m.logits(seq.data(), 1, T);
    const float* last = full.data<float>() + (T - 1) * V;
    EXPECT_LE(rel_diff(cached.data<float>(), last, V), 1e-5) << "T " << T;
    // Unscaled up to max_positions (8), stretched beyond.
    const Tensor other = plain.logits(seq.data(), 1, T);
    const double d = rel_diff(other.data<float>() + (T - 1) * V, last, V);
    if (T <= 8)
      EXPECT_EQ(d, 0.0) << "T " << T;
    else
      EXPECT_GT(d, 1e-3) << "T " << T;
  }
}

TEST(DynamicNtk, GeneratesPastMaxPositionsEachSequenceAtItsOwnLength) {
  Allocator a;
  Transformer m(scaled(RopeScalingType::Dynamic, 8), a);
  m.params().init_random(5);
  const int64_t V = m.config().vocab_size;
  const std::vector<std::vector<int32_t>> prompts = {random_tokens(3, V, 2),
                                                     random_tokens(11, V, 3)};
  GenerateOptions o;
  o.max_new_tokens = 12;  // both end beyond max_positions
  o.sampling.temperature = 0.0;
  const std::vector<Generation> batch = generate(m, prompts, o);
  ASSERT_EQ(batch.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(batch[i].tokens.size(), 12u);
    EXPECT_EQ(batch[i].tokens, generate(m, {prompts[i]}, o)[0].tokens) << "prompt " << i;
  }
}

TEST(RopeScaling, OtherScalingsStopAtMaxPositions) {
  for (RopeScalingType type : {RopeScalingType::Linear, RopeScalingType::Llama3}) {
    Allocator a;
    Transformer m(scaled(type, 8), a);
    m.params().init_random(5);
    GenerateOptions o;
    o.max_new_tokens = 4;
    try {
      generate(m, {random_tokens(6, m.config().vocab_size, 2)}, o);
      ADD_FAILURE() << rope_scaling_name(type) << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                "prompt 0 (6 tokens) + max_new_tokens (4) = 10 exceeds the model's context "
                "(max_positions 8)");
    }
  }
}

}  // namespace
}  // namespace parallm
