// DeepSeek-V3's group-limited routing and routed scaling factor (Megatron's
// --moe-router-num-groups, --moe-router-group-topk,
// --moe-router-topk-scaling-factor): the top-k taken only within the groups
// of the highest best-two sums, on fixed logits where that differs from the
// plain top-k; the expert bias moving the group choice too; gates times the
// factor; the backward against central differences; one message per bad
// setting.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/test_util.h"
#include "model/moe/moe_router.h"

namespace parallm {
namespace {

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

MoeConfig grouped(int64_t E, int k, int groups, int group_topk, double factor) {
  MoeConfig m;
  m.num_experts = E;
  m.topk = k;
  m.score = ScoreFunction::Sigmoid;
  m.num_groups = groups;
  m.group_topk = group_topk;
  m.topk_scaling_factor = factor;
  return m;
}

// Groups of two: {0,1} sums sig(3) + sig(-3) = 1, {2,3} 2 sig(1) = 1.46,
// {4,5} 2 sig(0.5) = 1.25, {6,7} 2 sig(-1) = 0.54. The best two groups are
// {2,3} and {4,5}: expert 0, the best alone, is out.
const std::vector<float> kLogits = {3.0f, -3.0f, 1.0f, 1.0f, 0.5f, 0.5f, -1.0f, -1.0f};

TEST(MoeGroupRouter, TopkWithinTheBestGroups) {
  const Routing plain = route(grouped(8, 2, 1, 1, 1.0), kLogits.data(), 1, 1);
  ASSERT_EQ(plain.expert, (std::vector<int32_t>{0, 2}));
  const Routing r = route(grouped(8, 2, 4, 2, 1.0), kLogits.data(), 1, 1);
  ASSERT_EQ(r.expert, (std::vector<int32_t>{2, 3}));
  EXPECT_NEAR(r.gate[0], 0.5, 1e-7);
  EXPECT_NEAR(r.gate[1], 0.5, 1e-7);
  // Top-3 within groups {2,3} and {4,5}: 2, 3, then 4.
  const Routing r3 = route(grouped(8, 3, 4, 2, 1.0), kLogits.data(), 1, 1);
  ASSERT_EQ(r3.expert, (std::vector<int32_t>{2, 3, 4}));
  // Every group allowed: the plain top-k.
  const Routing all = route(grouped(8, 2, 4, 4, 1.0), kLogits.data(), 1, 1);
  EXPECT_EQ(all.expert, plain.expert);
  EXPECT_EQ(all.gate, plain.gate);
}

TEST(MoeGroupRouter, ScalingFactorMultipliesTheGates) {
  const Routing one = route(grouped(8, 2, 1, 1, 1.0), kLogits.data(), 1, 1);
  const Routing r = route(grouped(8, 2, 1, 1, 2.5), kLogits.data(), 1, 1);
  ASSERT_EQ(r.expert, one.expert);
  const double a = sig(3.0), b = sig(1.0);
  EXPECT_NEAR(r.gate[0], 2.5 * a / (a + b), 1e-6);
  EXPECT_NEAR(r.gate[1], 2.5 * b / (a + b), 1e-6);
  const Routing k1 = route(grouped(8, 1, 1, 1, 2.5), kLogits.data(), 1, 1);
  EXPECT_NEAR(k1.gate[0], 2.5 * a, 1e-6);  // top-1: not normalised, still scaled
}

TEST(MoeGroupRouter, BiasMovesTheGroupsToo) {
  // +1 on expert 7 lifts group {6,7} to sig(-1) + sig(-1) + 1 = 1.54, the best.
  std::vector<float> bias(8, 0.0f);
  bias[7] = 1.0f;
  MoeConfig m = grouped(8, 2, 4, 2, 1.0);
  m.expert_bias = true;
  const Routing r = route(m, kLogits.data(), 1, 1, bias.data());
  // Groups {6,7} (1.54) and {2,3} (1.46); by score + bias: 7 (1.27), then 2.
  ASSERT_EQ(r.expert, (std::vector<int32_t>{7, 2}));
  const double s7 = sig(-1.0), s2 = sig(1.0);
  EXPECT_NEAR(r.gate[0], s7 / (s7 + s2), 1e-7);  // gates from the unbiased scores
}

// L(z) = sum_a w_a gate_a over the kept assignments.
double gate_sum(const MoeConfig& m, const std::vector<float>& z, int64_t N,
                const std::vector<double>& w) {
  const Routing r = route(m, z.data(), N, N);
  double L = 0.0;
  for (size_t a = 0; a < r.gate.size(); ++a)
    if (r.kept[a]) L += w[a] * r.gate[a];
  return L;
}

TEST(MoeGroupRouter, BackwardMatchesFiniteDifferences) {
  for (const MoeConfig& m : {grouped(8, 2, 4, 2, 2.5), grouped(8, 3, 2, 1, 1.0),
                             grouped(6, 1, 3, 2, 0.5)}) {
    const int64_t E = m.num_experts, N = 4;
    std::mt19937 rng(11);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> z(N * E);
    for (float& v : z) v = nd(rng);
    std::vector<double> w(N * m.topk);
    for (double& v : w) v = nd(rng);
    const Routing r = route(m, z.data(), N, N);
    std::vector<float> dg(w.begin(), w.end()), dz(N * E, 0.0f);
    route_backward(m, r, dg.data(), 1.0, dz.data());
    for (size_t i = 0; i < z.size(); ++i) {
      // A step far below the gaps between scores, so no choice flips.
      const float h = 1e-3f;
      std::vector<float> zp = z, zm = z;
      zp[i] += h, zm[i] -= h;
      const double fd = (gate_sum(m, zp, N, w) - gate_sum(m, zm, N, w)) / (2.0 * h);
      EXPECT_NEAR(dz[i], fd, 1e-3 + 1e-3 * std::abs(fd)) << "logit " << i << ", top-" << m.topk;
    }
  }
}

TEST(MoeGroupRouter, BadSettingsHaveOneClearMessage) {
  EXPECT_NO_THROW(grouped(8, 2, 4, 2, 2.5).validate());
  EXPECT_EQ(testing::error_of([] { grouped(8, 2, 3, 1, 1.0).validate(); }),
            "moe experts (8) are not divisible into --moe-router-num-groups (3) groups");
  EXPECT_EQ(testing::error_of([] { grouped(8, 2, 4, 5, 1.0).validate(); }),
            "--moe-router-group-topk (5) must be in [1, --moe-router-num-groups (4)]");
  EXPECT_EQ(testing::error_of([] { grouped(8, 3, 4, 1, 1.0).validate(); }),
            "--moe-router-group-topk (1) groups of 2 experts hold fewer than top-k (3)");
  EXPECT_EQ(testing::error_of([] { grouped(8, 2, 8, 2, 1.0).validate(); }),
            "moe router groups need at least 2 experts each (a group scores its best two): 8 "
            "experts in 8 groups");
  EXPECT_EQ(testing::error_of([] { grouped(8, 2, 1, 1, 0.0).validate(); }),
            "--moe-router-topk-scaling-factor must be positive, got 0");
  MoeConfig soft = grouped(8, 2, 4, 2, 1.0);
  soft.score = ScoreFunction::Softmax;
  EXPECT_EQ(testing::error_of([&] { soft.validate(); }),
            "group-limited routing (--moe-router-num-groups 4) needs sigmoid scores "
            "(--moe-router-score-function sigmoid, DeepSeek-V3's); the score function is softmax");
  soft.num_groups = 1;
  soft.topk_scaling_factor = 2.0;
  EXPECT_EQ(testing::error_of([&] { soft.validate(); }),
            "--moe-router-topk-scaling-factor (2) needs sigmoid scores (DeepSeek-V3's "
            "routed_scaling_factor); the score function is softmax");
}

}  // namespace
}  // namespace parallm
