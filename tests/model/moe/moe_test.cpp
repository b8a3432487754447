// The MoE layer on one process: forward against a per-token double
// reference (each kept expert's MLP, weighted by its gate), and backward
// (inputs, router, every expert weight, both balancing losses) against
// central finite differences, for GPT-2 (GELU, biases) and LLaMA (SwiGLU)
// experts, dropless and with drops, with an expert that receives no token;
// with a shared expert (plain, and gated by Qwen2-MoE's sigmoid gate).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "model/moe/moe.h"

namespace parallm {
namespace {

struct Case {
  Arch arch;
  int k;
  std::optional<double> capacity;
  int64_t shared = 0;  // shared expert features (0: none)
  bool shared_gate = false;
};

ModelConfig tiny(const Case& cs) {
  ModelConfig c;
  c.arch = cs.arch;
  c.hidden = 6;
  c.intermediate = 5;
  c.n_heads = c.n_kv_heads = 1;
  c.head_dim = 6;
  c.n_layers = 1;
  c.moe.num_experts = 4;
  c.moe.topk = cs.k;
  c.moe.capacity_factor = cs.capacity;
  c.moe.aux_loss_coeff = 0.1;
  c.moe.z_loss_coeff = 0.05;
  c.moe.shared_intermediate = cs.shared;
  c.moe.shared_expert_gate = cs.shared_gate;
  c.init_std = 0.5;
  return c;
}

struct Layer {
  ModelConfig cfg;
  Allocator alloc;
  ParameterSet ps;
  Moe moe;
  std::vector<int64_t> pos;
  int64_t B = 2, T = 4;
  explicit Layer(const Case& cs) : cfg(tiny(cs)) {
    moe = Moe(ps, "moe", cfg, 0.5, {});
    ps.allocate(alloc);
    ps.init_random(5);
    // Expert 3 is never chosen: its router row points away from every input.
    float* router = ps.value_tensor(ps.find("moe.router.weight")).data<float>();
    for (int64_t i = 0; i < cfg.hidden; ++i) router[3 * cfg.hidden + i] = -3.0f;
    pos.resize(T);
    for (int64_t t = 0; t < T; ++t) pos[t] = t;
  }
  LayerContext context(double gs) {
    LayerContext c{alloc, ps, B, T, pos.data()};
    c.grad_scale = gs;
    return c;
  }
  // The scalar whose gradient backward computes: sum(out * w) + the
  // balancing losses at grad scale gs.
  double loss(const std::vector<float>& x, const std::vector<float>& w, double gs) {
    const LayerContext c = context(gs);
    std::vector<float> out(x.size());
    const Moe::Saved s = moe.forward(c, out.data(), x.data());
    double L = 0.0;
    for (size_t i = 0; i < out.size(); ++i) L += double(out[i]) * w[i];
    const MoeStats& st = s.routing.stats;
    return L + cfg.moe.aux_loss_coeff * gs * T * st.aux_sum + cfg.moe.z_loss_coeff * gs * st.z_sum;
  }
};

double gelu(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

// One expert's MLP on one row, in double: expert e of the stacked tensors
// under `prefix` (moe.experts.) with I features, or the shared expert
// (prefix moe.shared_expert., e = 0, its own I).
std::vector<double> expert_ref(const Layer& l, int e, const float* x,
                               const std::string& prefix = "moe.experts.", int64_t I = 0) {
  const ParameterSet& ps = l.ps;
  const int64_t C = l.cfg.hidden;
  if (I == 0) I = l.cfg.intermediate;
  auto w = [&](const char* name) {
    const int i = ps.find(prefix + name);
    EXPECT_GE(i, 0) << prefix + name;
    return ps.value_tensor(i).data<float>();
  };
  const bool sw = l.cfg.uses_swiglu();
  const float* w1 = w(sw ? "gate.weight" : "fc.weight") + e * I * C;
  const float* w2 = w(sw ? "down.weight" : "proj.weight") + e * C * I;
  std::vector<double> act(I), y(C, 0.0);
  for (int64_t i = 0; i < I; ++i) {
    double h = sw ? 0.0 : w("fc.bias")[e * I + i];
    for (int64_t j = 0; j < C; ++j) h += double(w1[i * C + j]) * x[j];
    if (sw) {
      double u = 0.0;
      for (int64_t j = 0; j < C; ++j) u += double(w("up.weight")[e * I * C + i * C + j]) * x[j];
      act[i] = h / (1.0 + std::exp(-h)) * u;
    } else {
      act[i] = gelu(h);
    }
  }
  for (int64_t j = 0; j < C; ++j) {
    y[j] = sw ? 0.0 : w("proj.bias")[e * C + j];
    for (int64_t i = 0; i < I; ++i) y[j] += double(w2[j * I + i]) * act[i];
  }
  return y;
}

void check(const Case& cs) {
  Layer l(cs);
  const int64_t N = l.B * l.T, C = l.cfg.hidden;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(N * C), w(N * C);
  for (float& v : x) v = std::abs(nd(rng)) + 0.1f;  // positive: expert 3's logit is very low
  for (float& v : w) v = nd(rng);
  // Forward against the double reference.
  const double gs = 0.125;
  LayerContext c = l.context(gs);
  std::vector<float> out(N * C);
  Moe::Saved s = l.moe.forward(c, out.data(), x.data());
  const Routing& r = s.routing;
  EXPECT_EQ(r.stats.expert_load[3], 0.0) << "expert 3 should get no token";
  if (cs.capacity) {
    EXPECT_GT(r.stats.dropped, 0.0) << "the case should drop";
  }
  for (int64_t t = 0; t < N; ++t) {
    std::vector<double> ref(C, 0.0);
    for (int j = 0; j < cs.k; ++j) {
      if (!r.kept[t * cs.k + j]) continue;
      const auto y = expert_ref(l, r.expert[t * cs.k + j], &x[t * C]);
      for (int64_t i = 0; i < C; ++i) ref[i] += r.gate[t * cs.k + j] * y[i];
    }
    if (cs.shared > 0) {  // out_t += sigmoid(x_t . w_g) * shared(x_t), or without the gate
      const auto y = expert_ref(l, 0, &x[t * C], "moe.shared_expert.", cs.shared);
      double g = 1.0;
      if (cs.shared_gate) {
        const float* wg =
            l.ps.value_tensor(l.ps.find("moe.shared_expert_gate.weight")).data<float>();
        double z = 0.0;
        for (int64_t i = 0; i < C; ++i) z += double(wg[i]) * x[t * C + i];
        g = 1.0 / (1.0 + std::exp(-z));
      }
      for (int64_t i = 0; i < C; ++i) ref[i] += g * y[i];
    }
    for (int64_t i = 0; i < C; ++i)
      EXPECT_NEAR(out[t * C + i], ref[i], 1e-5 + 1e-5 * std::abs(ref[i])) << t << "," << i;
  }
  // Backward against central differences of the same scalar.
  MoeStats stats;
  c.moe_stats = &stats;
  std::vector<float> dx(N * C, 0.0f);
  l.ps.zero_grads();
  l.moe.backward(c, dx.data(), w.data(), x.data(), s);
  EXPECT_EQ(stats.tokens, double(N));
  EXPECT_EQ(stats.dispatches, 1.0);  // one micro-batch of one layer
  ASSERT_GE(stats.ep_max_load_sum.size(), 2u);
  EXPECT_DOUBLE_EQ(stats.ep_max_load_sum[1], 1.0);  // one block holds every expert
  const float h = 1e-3f;
  for (int64_t i = 0; i < N * C; ++i) {
    std::vector<float> xp = x, xm = x;
    xp[i] += h, xm[i] -= h;
    const double fd = (l.loss(xp, w, gs) - l.loss(xm, w, gs)) / (2.0 * h);
    EXPECT_NEAR(dx[i], fd, 3e-3 + 3e-3 * std::abs(fd)) << "input " << i;
  }
  float* v = l.ps.flat_values().data<float>();
  const float* g = l.ps.flat_grads().data<float>();
  for (int64_t i = 0; i < l.ps.total_numel(); ++i) {
    const float keep = v[i];
    v[i] = keep + h;
    const double lp = l.loss(x, w, gs);
    v[i] = keep - h;
    const double lm = l.loss(x, w, gs);
    v[i] = keep;
    const double fd = (lp - lm) / (2.0 * h);
    EXPECT_NEAR(g[i], fd, 3e-3 + 3e-3 * std::abs(fd)) << "parameter element " << i;
  }
}

TEST(MoeLayer, Gpt2ExpertsTop2Dropless) { check({Arch::GPT2, 2, std::nullopt}); }
TEST(MoeLayer, Gpt2ExpertsTop1WithDrops) { check({Arch::GPT2, 1, 0.5}); }
TEST(MoeLayer, LlamaExpertsTop2WithDrops) { check({Arch::LLaMA, 2, 0.6}); }
TEST(MoeLayer, LlamaSharedExpertGated) { check({Arch::LLaMA, 2, 0.6, 3, true}); }
TEST(MoeLayer, Gpt2SharedExpertUngated) { check({Arch::GPT2, 1, std::nullopt, 4, false}); }

}  // namespace
}  // namespace parallm
