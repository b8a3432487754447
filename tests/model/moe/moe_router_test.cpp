// The MoE router against closed-form values on fixed logits: gates of the
// Switch, GShard and top-k-then-softmax orders, capacity and both drop
// policies (counted per sequence), the Switch aux loss and the z-loss, and
// the backward against central finite differences of the same scalar.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "base/error.h"
#include "model/moe/moe_router.h"

namespace parallm {
namespace {

MoeConfig config(int64_t E, int k) {
  MoeConfig m;
  m.num_experts = E;
  m.topk = k;
  return m;
}

TEST(MoeRouter, SwitchTop1GatesAreSoftmaxProbabilities) {
  MoeConfig m = config(3, 1);
  m.apply_preset("switch");
  const std::vector<float> z = {0.0f, 1.0f, 2.0f, 3.0f, -1.0f, 0.0f};  // 2 tokens
  const Routing r = route(m, z.data(), 2, 2);
  const double s0 = 1 + std::exp(1.0) + std::exp(2.0), s1 = std::exp(3.0) + std::exp(-1.0) + 1;
  EXPECT_EQ(r.expert[0], 2);
  EXPECT_EQ(r.expert[1], 0);
  EXPECT_NEAR(r.gate[0], std::exp(2.0) / s0, 1e-6);
  EXPECT_NEAR(r.gate[1], std::exp(3.0) / s1, 1e-6);
  EXPECT_NEAR(r.lse[0], std::log(s0), 1e-6);
}

TEST(MoeRouter, GshardRenormalisesAndEqualsTopkThenSoftmax) {
  MoeConfig g = config(4, 2);
  g.apply_preset("gshard");
  MoeConfig t = g;
  t.apply_preset("mixtral");
  const std::vector<float> z = {0.5f, -1.0f, 2.0f, 1.0f};
  const Routing rg = route(g, z.data(), 1, 1), rt = route(t, z.data(), 1, 1);
  ASSERT_EQ(rg.expert, (std::vector<int32_t>{2, 3}));
  ASSERT_EQ(rt.expert, rg.expert);
  const double a = std::exp(2.0), b = std::exp(1.0);
  EXPECT_NEAR(rg.gate[0], a / (a + b), 1e-6);
  EXPECT_NEAR(rg.gate[1], b / (a + b), 1e-6);
  EXPECT_NEAR(rt.gate[0], rg.gate[0], 1e-6);
  EXPECT_NEAR(rt.gate[1], rg.gate[1], 1e-6);
  MoeConfig plain = config(4, 2);  // softmax then top-k, no renormalisation
  const Routing rp = route(plain, z.data(), 1, 1);
  const double s = std::exp(0.5) + std::exp(-1.0) + a + b;
  EXPECT_NEAR(rp.gate[0], a / s, 1e-6);
  EXPECT_NEAR(rp.gate[1], b / s, 1e-6);
}

// 2 sequences of 4 tokens, E 2, top-1, factor 1: capacity ceil(4*1*1/2) = 2
// per expert per sequence. Every token prefers expert 0.
TEST(MoeRouter, CapacityDropsPerSequenceByPositionOrProbability) {
  MoeConfig m = config(2, 1);
  m.capacity_factor = 1.0;
  EXPECT_EQ(m.capacity(4), 2);
  const std::vector<float> z = {1.0f, 0.0f, 3.0f, 0.0f, 2.0f, 0.0f, 4.0f, 0.0f,   // sequence 0
                                0.5f, 0.0f, 0.2f, 0.0f, 0.9f, 0.0f, 0.1f, 0.0f};  // sequence 1
  const Routing r = route(m, z.data(), 8, 4);
  EXPECT_EQ(r.kept, (std::vector<uint8_t>{1, 1, 0, 0, 1, 1, 0, 0}));
  EXPECT_DOUBLE_EQ(r.stats.dropped, 4.0);
  m.drop_policy = DropPolicy::Probs;
  const Routing q = route(m, z.data(), 8, 4);
  EXPECT_EQ(q.kept, (std::vector<uint8_t>{0, 1, 0, 1, 1, 0, 1, 0}));
  // One sequence alone drops exactly what it dropped beside the other.
  const Routing one = route(m, z.data() + 8, 4, 4);
  EXPECT_EQ(one.kept, (std::vector<uint8_t>{1, 0, 1, 0}));
  m.capacity_factor.reset();  // dropless
  EXPECT_EQ(route(m, z.data(), 8, 4).kept, std::vector<uint8_t>(8, 1));
}

// Two tokens with logits (0, ln 3): p = (1/4, 3/4), both choose expert 1:
// f = (0, 1), P = (1/4, 3/4), aux = E * sum f_i P_i = 2 * 3/4 = 1.5; the
// z-loss sums logsumexp^2 = (ln 4)^2 per token.
TEST(MoeRouter, AuxAndZLossClosedForm) {
  MoeConfig m = config(2, 1);
  const float l3 = static_cast<float>(std::log(3.0));
  const std::vector<float> z = {0.0f, l3, 0.0f, l3};
  const Routing r = route(m, z.data(), 2, 2);
  EXPECT_NEAR(r.stats.aux_sum, 1.5, 1e-6);
  EXPECT_NEAR(r.stats.z_sum, 2 * std::log(4.0) * std::log(4.0), 1e-5);
  EXPECT_EQ(r.stats.expert_load, (std::vector<double>{0.0, 2.0}));
  // Top-2 of 3 experts on one token (2, 1, 0): f = (1/2, 1/2, 0).
  MoeConfig m3 = config(3, 2);
  const std::vector<float> z3 = {2.0f, 1.0f, 0.0f};
  const Routing r3 = route(m3, z3.data(), 1, 1);
  const double s = std::exp(2.0) + std::exp(1.0) + 1.0;
  EXPECT_NEAR(r3.stats.aux_sum, 3.0 * (0.5 * std::exp(2.0) / s + 0.5 * std::exp(1.0) / s), 1e-6);
}

// L(z) = sum_kept w_a gate_a + aux_coeff * grad_scale * T * sum_b aux_b
//      + z_coeff * grad_scale * sum_t lse_t^2, the scalar route_backward differentiates.
double scalar(const MoeConfig& m, const std::vector<float>& z, int64_t N, int64_t T,
              const std::vector<double>& w, double gs) {
  const Routing r = route(m, z.data(), N, T);
  double L = 0.0;
  for (size_t a = 0; a < r.gate.size(); ++a)
    if (r.kept[a]) L += w[a] * r.gate[a];
  return L + m.aux_loss_coeff * gs * T * r.stats.aux_sum + m.z_loss_coeff * gs * r.stats.z_sum;
}

void check_backward(MoeConfig m) {
  m.aux_loss_coeff = 0.3;
  m.z_loss_coeff = 0.2;
  const int64_t E = m.num_experts, T = 3, N = 6;
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> z(N * E);
  for (float& v : z) v = nd(rng);
  std::vector<double> w(N * m.topk);
  for (double& v : w) v = nd(rng);
  const double gs = 0.25;
  const Routing r = route(m, z.data(), N, T);
  std::vector<float> dg(w.begin(), w.end()), dz(N * E, 0.0f);
  route_backward(m, r, dg.data(), gs, dz.data());
  for (size_t i = 0; i < z.size(); ++i) {
    const float h = 1e-3f;
    std::vector<float> zp = z, zm = z;
    zp[i] += h, zm[i] -= h;
    const double fd = (scalar(m, zp, N, T, w, gs) - scalar(m, zm, N, T, w, gs)) / (2.0 * h);
    EXPECT_NEAR(dz[i], fd, 2e-3 + 2e-3 * std::abs(fd)) << "logit " << i;
  }
}

TEST(MoeRouter, BackwardMatchesFiniteDifferences) {
  MoeConfig m = config(4, 2);
  check_backward(m);  // softmax then top-k
  m.renormalize = true;
  check_backward(m);
  m.order = RouterOrder::TopkSoftmax;
  check_backward(m);
  m.capacity_factor = 0.5;  // drops: their gates get no gradient
  check_backward(m);
  check_backward(config(3, 1));
}

TEST(MoeConfigChecks, BadInputHasOneClearMessage) {
  MoeConfig m = config(4, 5);
  try {
    m.validate();
    FAIL() << "topk > experts accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("topk (5) must be between 1 and num_experts (4)"),
              std::string::npos)
        << e.what();
  }
  m.topk = 2;
  m.capacity_factor = 0.0;
  try {
    m.validate();
    FAIL() << "capacity 0 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("capacity factor must be positive, got 0"),
              std::string::npos)
        << e.what();
  }
  m.capacity_factor = -1.0;
  EXPECT_THROW(m.validate(), Error);
  EXPECT_THROW(m.apply_preset("nope"), Error);
}

}  // namespace
}  // namespace parallm
