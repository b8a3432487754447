// Qwen2's q/k/v projection biases (ModelConfig::qkv_bias) on the one-process
// model: the parameters (q, k and v biases, none on o or the MLP; the count
// equals num_parameters()), the biases' gradient against a finite
// difference of the loss, the KV-cached decode equal to the full forward
// with non-zero biases, and LoRA adapters on q/k/v that leave the biases in
// the frozen base. Hugging Face names: tests/io/hf_model_test.cpp; tensor
// parallel layouts: tests/parallel/tensor/tp_layout_dist.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "base/rng.h"
#include "common/cached_decode.h"
#include "common/random_tokens.h"
#include "common/test_models.h"
#include "model/lora/lora_merge.h"
#include "model/lora/lora_model.h"
#include "model/kv_cache/paged_kv_cache.h"
#include "model/transformer.h"

namespace parallm {
namespace {

using testing::random_tokens;

ModelConfig qwen2() {
  ModelConfig c = testing::tiny_llama();
  c.qkv_bias = true;
  return c;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Biases start at zero; trained ones are not: draw them (by name, so two
// models with the same parameters get the same values).
void randomise_biases(const ParameterSet& ps) {
  for (int i = 0; i < ps.size(); ++i) {
    if (!ends_with(ps.spec(i).name, ".bias")) continue;
    float* v = ps.value(ParamRef{i});
    const uint64_t key = stream_key(21, ps.spec(i).name);
    for (int64_t j = 0; j < ps.numel(i); ++j) v[j] = static_cast<float>(0.3 * normal_at(key, j));
  }
}

TEST(QkvBias, OnlyQueryKeyValueProjectionsHaveBiases) {
  const ModelConfig c = qwen2();
  Allocator a;
  Transformer m(c, a);
  const ParameterSet& ps = m.params();
  int64_t n = 0, biases = 0;
  for (int i = 0; i < ps.size(); ++i) {
    n += ps.numel(i);
    biases += ends_with(ps.spec(i).name, ".bias") ? 1 : 0;
  }
  EXPECT_EQ(n, c.num_parameters());
  EXPECT_EQ(biases, 3 * c.n_layers);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".attn.";
    ASSERT_GE(ps.find(p + "q.bias"), 0);
    EXPECT_EQ(ps.spec(ps.find(p + "q.bias")).shape, (std::vector<int64_t>{c.q_dim()}));
    EXPECT_EQ(ps.spec(ps.find(p + "k.bias")).shape, (std::vector<int64_t>{c.kv_dim()}));
    EXPECT_EQ(ps.spec(ps.find(p + "v.bias")).shape, (std::vector<int64_t>{c.kv_dim()}));
    EXPECT_LT(ps.find(p + "o.bias"), 0);
  }
  EXPECT_EQ(c.hf_model_type(), "qwen2");
}

// Along the gradient g of each bias tensor, the loss changes by |g|^2 per
// unit step: a central difference in double-accumulated losses. Also the
// biases do change the loss.
TEST(QkvBias, BiasGradientsMatchFiniteDifferences) {
  const ModelConfig c = qwen2();
  Allocator a;
  Transformer m(c, a);
  m.params().init_random(3);
  const int64_t B = 2, T = 9;
  const auto in = random_tokens(B * T, c.vocab_size, 4), tg = random_tokens(B * T, c.vocab_size, 5);
  const double scale = 1.0 / (B * T);
  const double zero_bias = m.forward_loss(in.data(), tg.data(), B, T).sum * scale;
  randomise_biases(m.params());
  m.params().zero_grads();
  const double base = m.forward_backward(in.data(), tg.data(), B, T, scale).sum * scale;
  EXPECT_GT(std::abs(base - zero_bias), 1e-3);  // the biases are used
  const ParameterSet& ps = m.params();
  for (const char* which : {"q", "k", "v"})
    for (int64_t l = 0; l < c.n_layers; ++l) {
      const std::string name = "layers." + std::to_string(l) + ".attn." + which + ".bias";
      const int i = ps.find(name);
      ASSERT_GE(i, 0) << name;
      float* b = ps.value(ParamRef{i});
      const std::vector<float> g(ps.grad(ParamRef{i}), ps.grad(ParamRef{i}) + ps.numel(i));
      const std::vector<float> b0(b, b + ps.numel(i));
      double g2 = 0;
      for (float x : g) g2 += static_cast<double>(x) * x;
      ASSERT_GT(g2, 0.0) << name;
      const double eps = 1e-2 / std::sqrt(g2);  // a step of length 0.01
      auto loss_at = [&](double t) {
        for (size_t j = 0; j < g.size(); ++j) b[j] = static_cast<float>(b0[j] + t * g[j]);
        return m.forward_loss(in.data(), tg.data(), B, T).sum * scale;
      };
      const double up = loss_at(eps), down = loss_at(-eps);
      loss_at(0.0);
      EXPECT_NEAR((up - down) / (2 * eps), g2, 2e-2 * g2) << name;
    }
}

// Decoding through the paged cache (block size 3, blocks out of order)
// gives the full forward's last-position logits at every step.
TEST(QkvBias, CachedDecodeEqualsFullForward) {
  Allocator a;
  ModelConfig c = qwen2();
  c.init_std = 0.2;
  Transformer m(c, a);
  m.params().init_random(11);
  randomise_biases(m.params());
  const int64_t V = c.vocab_size;
  std::vector<int32_t> seq = random_tokens(6, V, 1);
  PagedKvCache cache(m.config(), m.tp(), 12, 3, a);
  const std::vector<int32_t> table = {7, 2, 11, 0, 5, 9, 1, 3};  // 24 positions
  testing::expect_cached_decode_matches_full(m, seq, cache, table, 8);
}

// Adapters on q, k and v of a Qwen2 base: the biases stay in the frozen
// base (nothing to train but the adapters), the first step equals the base
// model, and trained adapters equal the merged weights with the same biases.
TEST(QkvBias, LoraKeepsBiasesInTheFrozenBase) {
  ModelConfig c = qwen2();
  c.lora.rank = 4;
  c.lora.alpha = 8.0;
  c.lora.targets = {"q", "k", "v"};
  Allocator a1, a2;
  Transformer m(c, a1), plain(qwen2(), a2);
  int64_t adapters = 0;
  for (int i = 0; i < m.params().size(); ++i) {
    EXPECT_FALSE(ends_with(m.params().spec(i).name, ".bias")) << m.params().spec(i).name;
    adapters += m.params().numel(i);
  }
  EXPECT_EQ(adapters, lora_trainable_params(c));
  ASSERT_GE(m.base_params().find("layers.0.attn.k.bias"), 0);
  m.base_params().init_random(5);
  m.params().init_random(5);
  plain.params().init_random(5);
  randomise_biases(m.base_params());
  randomise_biases(plain.params());
  const int64_t B = 2, T = 7;
  const auto in = random_tokens(B * T, c.vocab_size, 1);
  Tensor l1 = m.logits(in.data(), B, T), l2 = plain.logits(in.data(), B, T);
  for (int64_t i = 0; i < l1.numel(); ++i) ASSERT_EQ(l1.data<float>()[i], l2.data<float>()[i]) << i;
  // Trained adapters (B != 0) merged into the plain model's weights.
  for (int i = 0; i < m.params().size(); ++i) {
    if (m.params().spec(i).name.back() != 'B') continue;
    float* v = m.params().value(ParamRef{i});
    const uint64_t key = stream_key(13, m.params().spec(i).name);
    for (int64_t j = 0; j < m.params().numel(i); ++j)
      v[j] = static_cast<float>(0.05 * normal_at(key, j));
  }
  EXPECT_EQ(merge_lora(m.params(), plain.params(), c.lora.scale()), 3 * c.n_layers);
  l1 = m.logits(in.data(), B, T);
  l2 = plain.logits(in.data(), B, T);
  double diff = 0;
  for (int64_t i = 0; i < l1.numel(); ++i)
    diff = std::max(diff, std::abs(static_cast<double>(l1.data<float>()[i]) - l2.data<float>()[i]));
  EXPECT_LT(diff, 1e-5);
}

}  // namespace
}  // namespace parallm
