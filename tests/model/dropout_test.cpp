// Dropout in the model (attention probabilities and hidden outputs): p = 0
// and an eval key (seed 0) are bit-identical to no dropout; p > 0 changes the
// loss; masks are keyed by global sample number, so accumulated micro-batches
// with their sample offsets equal one batch; the backward is the gradient of
// the dropped forward (directional finite difference).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/rng.h"
#include "common/test_models.h"
#include "model/transformer.h"

namespace parallm {
namespace {

std::vector<int32_t> tokens(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> t(n);
  const uint64_t key = stream_key(seed, "tokens");
  for (int64_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>(uniform_at(key, i) * vocab);
  return t;
}

std::vector<float> grads(Transformer& m) {
  const float* g = m.params().flat_grads().data<float>();
  return std::vector<float>(g, g + m.params().total_numel());
}

class DropoutBoth : public ::testing::TestWithParam<bool> {
 protected:
  ModelConfig cfg(double p) const {
    ModelConfig c = GetParam() ? testing::tiny_llama() : testing::tiny_gpt2();
    c.attn_dropout = c.hidden_dropout = p;
    return c;
  }
  static constexpr int64_t B = 2, T = 9;
};

TEST_P(DropoutBoth, ZeroProbabilityOrEvalKeyIsBitIdentical) {
  Allocator a;
  Transformer plain(cfg(0.0), a), off(cfg(0.0), a), eval(cfg(0.3), a);
  for (Transformer* m : {&plain, &off, &eval}) m->params().init_random(3);
  const auto in = tokens(B * T, plain.config().vocab_size, 1);
  const auto tg = tokens(B * T, plain.config().vocab_size, 2);
  const double l0 = plain.forward_backward(in.data(), tg.data(), B, T, 1.0).sum;
  const double l1 = off.forward_backward(in.data(), tg.data(), B, T, 1.0, {77, 5}).sum;
  const double l2 = eval.forward_backward(in.data(), tg.data(), B, T, 1.0, {0, 5}).sum;
  EXPECT_EQ(l0, l1);
  EXPECT_EQ(l0, l2);
  EXPECT_EQ(grads(plain), grads(off));
  EXPECT_EQ(grads(plain), grads(eval));
  EXPECT_EQ(eval.forward_loss(in.data(), tg.data(), B, T).sum, l0);
}

TEST_P(DropoutBoth, ChangesLossAndIsKeyedByGlobalSample) {
  Allocator a;
  Transformer m(cfg(0.2), a);
  m.params().init_random(3);
  const int64_t B4 = 4;
  const auto in = tokens(B4 * T, m.config().vocab_size, 1);
  const auto tg = tokens(B4 * T, m.config().vocab_size, 2);
  const double eval = m.forward_loss(in.data(), tg.data(), B4, T).sum;
  const double whole = m.forward_backward(in.data(), tg.data(), B4, T, 1.0, {42, 0}).sum;
  EXPECT_GT(std::abs(whole - eval), 1e-3 * std::abs(eval));
  const std::vector<float> g_whole = grads(m);
  m.params().zero_grads();
  double sum = 0;
  for (int k = 0; k < 2; ++k)
    sum += m.forward_backward(in.data() + k * 2 * T, tg.data() + k * 2 * T, 2, T, 1.0, {42, 2 * k})
               .sum;
  EXPECT_NEAR(sum, whole, 1e-5 * std::abs(whole));
  const std::vector<float> g = grads(m);
  double num = 0, den = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    num += (double(g[i]) - g_whole[i]) * (double(g[i]) - g_whole[i]);
    den += double(g_whole[i]) * g_whole[i];
  }
  EXPECT_LT(std::sqrt(num / den), 1e-5);
  m.params().zero_grads();  // another seed drops other elements
  const double other = m.forward_backward(in.data(), tg.data(), B4, T, 1.0, {43, 0}).sum;
  EXPECT_NE(other, whole);
}

// Along the gradient direction u = g/|g|: (L(w + h u) - L(w - h u)) / 2h = |g|.
TEST_P(DropoutBoth, BackwardIsGradientOfDroppedForward) {
  Allocator a;
  Transformer m(cfg(0.2), a);
  m.params().init_random(3);
  const auto in = tokens(B * T, m.config().vocab_size, 1);
  const auto tg = tokens(B * T, m.config().vocab_size, 2);
  const DropoutKey key{9, 0};
  m.forward_backward(in.data(), tg.data(), B, T, 1.0, key);
  const std::vector<float> g = grads(m);
  double norm = 0;
  for (float x : g) norm += double(x) * x;
  norm = std::sqrt(norm);
  float* w = m.params().flat_values().data<float>();
  const std::vector<float> w0(w, w + g.size());
  auto loss_at = [&](double h) {
    for (size_t i = 0; i < g.size(); ++i) w[i] = static_cast<float>(w0[i] + h * g[i] / norm);
    m.params().zero_grads();
    return m.forward_backward(in.data(), tg.data(), B, T, 1.0, key).sum;
  };
  const double h = 1e-2;
  const double fd = (loss_at(h) - loss_at(-h)) / (2 * h);
  EXPECT_NEAR(fd, norm, 0.01 * norm);
}

INSTANTIATE_TEST_SUITE_P(Families, DropoutBoth, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "llama" : "gpt2"; });

}  // namespace
}  // namespace parallm
