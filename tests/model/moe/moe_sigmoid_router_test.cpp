// Sigmoid routing (DeepSeek-V3, Megatron's --moe-router-score-function
// sigmoid) and the aux-loss-free expert bias: gates against closed-form
// values on fixed logits, the bias changing the choice but never the gates
// (nor the aux loss's counts), the backward through the sigmoid and the
// normalisation against central differences, the bias update rule on fixed
// loads, and one message for each bad setting.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "base/error.h"
#include "common/test_util.h"
#include "model/moe/moe_expert_bias.h"
#include "model/moe/moe_router.h"

namespace parallm {
namespace {

MoeConfig sigmoid_config(int64_t E, int k) {
  MoeConfig m;
  m.num_experts = E;
  m.topk = k;
  m.score = ScoreFunction::Sigmoid;
  return m;
}

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

TEST(MoeSigmoidRouter, GatesAreChosenScoresNormalisedOverK) {
  const std::vector<float> z = {0.5f, -1.0f, 2.0f, 1.0f};
  const Routing r2 = route(sigmoid_config(4, 2), z.data(), 1, 1);
  ASSERT_EQ(r2.expert, (std::vector<int32_t>{2, 3}));
  const double a = sig(2.0), b = sig(1.0);
  EXPECT_NEAR(r2.gate[0], a / (a + b), 1e-7);
  EXPECT_NEAR(r2.gate[1], b / (a + b), 1e-7);
  // Top-1: the score itself (Megatron normalises only when k > 1).
  const Routing r1 = route(sigmoid_config(4, 1), z.data(), 1, 1);
  ASSERT_EQ(r1.expert, (std::vector<int32_t>{2}));
  EXPECT_NEAR(r1.gate[0], a, 1e-7);
  // The renormalise flag and the softmax order do not apply to sigmoid.
  MoeConfig m = sigmoid_config(4, 2);
  m.renormalize = true;
  m.order = RouterOrder::TopkSoftmax;
  const Routing rr = route(m, z.data(), 1, 1);
  EXPECT_EQ(rr.gate, r2.gate);
  // Aux loss: q = s / sum(s) over all experts; f from the top-2 (2 and 3).
  const double sum = sig(0.5) + sig(-1.0) + a + b;
  EXPECT_NEAR(r2.stats.aux_sum, 4.0 * (0.5 * a / sum + 0.5 * b / sum), 1e-6);
  // z-loss: logsumexp of the logits, as under softmax.
  const double lse = std::log(std::exp(0.5) + std::exp(-1.0) + std::exp(2.0) + std::exp(1.0));
  EXPECT_NEAR(r2.stats.z_sum, lse * lse, 1e-5);
}

TEST(MoeSigmoidRouter, BiasMovesTheChoiceNotTheGates) {
  const std::vector<float> z = {0.5f, -1.0f, 2.0f, 1.0f};
  const std::vector<float> bias = {0.0f, 0.0f, -1.0f, 0.0f};  // s2 + b2 = -0.12: last
  MoeConfig m = sigmoid_config(4, 2);
  m.expert_bias = true;
  m.aux_loss_coeff = 0.1;
  const Routing r = route(m, z.data(), 1, 1, bias.data());
  ASSERT_EQ(r.expert, (std::vector<int32_t>{3, 0}));
  const double s3 = sig(1.0), s0 = sig(0.5), s2 = sig(2.0);
  EXPECT_NEAR(r.gate[0], s3 / (s3 + s0), 1e-7);  // unbiased scores
  EXPECT_NEAR(r.gate[1], s0 / (s3 + s0), 1e-7);
  EXPECT_EQ(r.stats.expert_load, (std::vector<double>{1, 0, 0, 1}));  // the real choice
  // The aux loss counts the unbiased top-2 (2 and 3), as Megatron does.
  const double sum = s0 + sig(-1.0) + s2 + s3;
  EXPECT_NEAR(r.stats.aux_sum, 4.0 * (0.5 * s2 / sum + 0.5 * s3 / sum), 1e-6);
  // A bias of zeros changes nothing.
  const std::vector<float> zero(4, 0.0f);
  const Routing r0 = route(m, z.data(), 1, 1, zero.data());
  const Routing rn = route(m, z.data(), 1, 1);
  EXPECT_EQ(r0.expert, rn.expert);
  EXPECT_EQ(r0.gate, rn.gate);
}

// L(z) = sum_kept w_a gate_a + aux_coeff * gs * T * sum_b aux_b + z_coeff * gs * sum_t lse_t^2.
double scalar(const MoeConfig& m, const std::vector<float>& z, int64_t N, int64_t T,
              const std::vector<double>& w, double gs, const float* bias) {
  const Routing r = route(m, z.data(), N, T, bias);
  double L = 0.0;
  for (size_t a = 0; a < r.gate.size(); ++a)
    if (r.kept[a]) L += w[a] * r.gate[a];
  return L + m.aux_loss_coeff * gs * T * r.stats.aux_sum + m.z_loss_coeff * gs * r.stats.z_sum;
}

void check_backward(MoeConfig m, bool with_bias) {
  m.aux_loss_coeff = 0.3;
  m.z_loss_coeff = 0.2;
  const int64_t E = m.num_experts, T = 3, N = 6;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> z(N * E), bias(E);
  for (float& v : z) v = nd(rng);
  for (float& v : bias) v = 0.3f * nd(rng);
  std::vector<double> w(N * m.topk);
  for (double& v : w) v = nd(rng);
  const float* b = with_bias ? bias.data() : nullptr;
  const double gs = 0.25;
  const Routing r = route(m, z.data(), N, T, b);
  std::vector<float> dg(w.begin(), w.end()), dz(N * E, 0.0f);
  route_backward(m, r, dg.data(), gs, dz.data());
  for (size_t i = 0; i < z.size(); ++i) {
    const float h = 1e-3f;
    std::vector<float> zp = z, zm = z;
    zp[i] += h, zm[i] -= h;
    const double fd = (scalar(m, zp, N, T, w, gs, b) - scalar(m, zm, N, T, w, gs, b)) / (2.0 * h);
    EXPECT_NEAR(dz[i], fd, 1e-3 + 1e-3 * std::abs(fd))
        << "logit " << i << ", top-" << m.topk << (with_bias ? ", bias" : "");
  }
}

TEST(MoeSigmoidRouter, BackwardMatchesFiniteDifferences) {
  check_backward(sigmoid_config(4, 2), false);
  check_backward(sigmoid_config(4, 2), true);
  check_backward(sigmoid_config(5, 3), true);
  check_backward(sigmoid_config(3, 1), false);  // no normalisation
  check_backward(sigmoid_config(3, 1), true);
  MoeConfig drop = sigmoid_config(4, 2);
  drop.capacity_factor = 0.5;  // drops: their gates get no gradient
  check_backward(drop, true);
}

TEST(MoeExpertBias, UpdateFollowsTheSignOfTheLoadGap) {
  ExpertBias b(2, 4);  // layer 1: dense (no loads)
  ASSERT_TRUE(b.enabled());
  const std::vector<double> loads = {3, 1, 2, 2, 0, 0, 0, 0};  // layer 0 mean 2
  b.update(loads, 0.1);
  EXPECT_EQ(b.values(), (std::vector<float>{-0.1f, 0.1f, 0, 0, 0, 0, 0, 0}));
  b.update({5, 1, 1, 1, 0, 0, 0, 0}, 0.1);  // mean 2: only expert 0 above
  EXPECT_EQ(b.values(), (std::vector<float>{-0.1f - 0.1f, 0.1f + 0.1f, 0.1f, 0.1f, 0, 0, 0, 0}));
  EXPECT_EQ(b.layer(0)[1], 0.2f);
  b.update(std::vector<double>(8, 7.0), 0.1);  // balanced: no move
  EXPECT_EQ(b.layer(0)[1], 0.2f);
  ExpertBias c(2, 4);
  c.restore(b.values());
  EXPECT_EQ(c.values(), b.values());
  EXPECT_EQ(testing::error_of([&] {
              c.restore({1.0f, 2.0f});
            }),
            "the checkpoint's moe expert bias has 2 values; this model needs 2 layers x 4 "
            "experts = 8");
}

TEST(MoeSigmoidConfig, BadInputHasOneClearMessage) {
  MoeConfig m = sigmoid_config(4, 2);
  m.expert_bias = true;
  EXPECT_NO_THROW(m.validate());
  m.bias_update_rate = -1e-3;
  EXPECT_EQ(testing::error_of([&] { m.validate(); }),
            "moe router bias update rate must be non-negative, got -0.001");
  m.bias_update_rate = 1e-3;
  m.score = ScoreFunction::Softmax;
  EXPECT_EQ(testing::error_of([&] { m.validate(); }),
            "the moe expert bias (--moe-router-enable-expert-bias) needs sigmoid scores "
            "(--moe-router-score-function sigmoid); the score function is softmax");
  EXPECT_EQ(testing::error_of([] { score_function_from_name("tanh"); }),
            "unknown moe router score function 'tanh' (expected softmax or sigmoid)");
  EXPECT_EQ(score_function_from_name("sigmoid"), ScoreFunction::Sigmoid);
}

}  // namespace
}  // namespace parallm
