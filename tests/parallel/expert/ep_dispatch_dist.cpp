// The MoE layer under expert parallelism against the same layer on one
// process, on fixed inputs where the last ep rank's experts get no token at
// all (their router rows point away from every input): outputs, input
// gradients and router gradients per rank, and expert gradients summed over
// the ranks. Also the token dispatch alone with empty experts and a rank
// that sends nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ep_env.h"
#include "model/moe/moe.h"
#include "parallel/expert/token_dispatch.h"

namespace parallm::ep_test {
namespace {

TEST(TokenDispatch, EmptyExpertsAndAnIdleRank) {
  comm::Communicator* world = env().world;
  const int P = world->size(), r = world->rank();
  const int64_t E = 2 * P, C = 3;
  const EpGroup ep{.comm = world};
  // Rank r sends r rows to every even expert and none to odd ones; the last rank sends nothing.
  std::vector<int64_t> rows(E, 0);
  if (r + 1 < P)
    for (int64_t e = 0; e < E; e += 2) rows[e] = r + 1;
  const TokenDispatch d(ep, rows);
  std::vector<float> send(std::max<int64_t>(d.send_rows(), 1) * C);
  for (int64_t i = 0; i < d.send_rows() * C; ++i) send[i] = float(r * 1000 + i);
  // Local expert 0 (global 2r) gets sum over senders s < P-1 of (s+1) rows; local expert 1 none.
  const int64_t expect = int64_t(P - 1) * P / 2;
  ASSERT_EQ(d.recv_rows(), expect);
  EXPECT_EQ(d.expert_offsets(), (std::vector<int64_t>{0, expect, expect}));
  std::vector<float> got(std::max<int64_t>(d.recv_rows(), 1) * C);
  Allocator a;
  const ops::Stream& host = ops::Stream::host();
  d.dispatch(host, a, ep, send.data(), got.data(), C);
  // Expert-major: source 0's block first; each source's rows for expert 2r
  // start at its offset of that expert in its send order.
  int64_t row = 0;
  for (int s = 0; s + 1 < P; ++s) {
    const int64_t first = int64_t(r) * (s + 1);  // experts 0, 2, .. before 2r each hold s+1 rows
    for (int64_t i = 0; i < s + 1; ++i, ++row)
      for (int64_t c = 0; c < C; ++c)
        EXPECT_EQ(got[row * C + c], float(s * 1000 + (first + i) * C + c)) << s << " " << i;
  }
  std::vector<float> back(send.size(), -1.0f);
  d.combine(host, a, ep, got.data(), back.data(), C);
  for (int64_t i = 0; i < d.send_rows() * C; ++i) EXPECT_EQ(back[i], send[i]);
}

struct Setup {
  ModelConfig cfg;
  Allocator alloc;
  ParameterSet ps;
  Moe moe;
  std::vector<int64_t> pos;
  // P: the ep size of the parallel run (both runs block the same experts).
  Setup(const ModelConfig& c, const EpGroup& ep, int P) : cfg(c) {
    moe = Moe(ps, "moe", cfg, 0.5, ep);
    ps.allocate(alloc);
    ps.init_random(9);
    // The experts of the last ep rank are never chosen.
    float* router = ps.value_tensor(ps.find("moe.router.weight")).data<float>();
    const int64_t per = cfg.moe.num_experts / P;
    for (int64_t e = cfg.moe.num_experts - per; e < cfg.moe.num_experts; ++e)
      for (int64_t i = 0; i < cfg.hidden; ++i) router[e * cfg.hidden + i] = -3.0f;
    pos = {0, 1, 2, 3};
  }
  const float* grad(const std::string& n) { return ps.grad_tensor(ps.find(n)).data<float>(); }
};

void check_layer(Arch arch, int k, std::optional<double> capacity) {
  comm::Communicator* world = env().world;
  const int P = world->size(), r = world->rank();
  ModelConfig cfg;
  cfg.arch = arch;
  cfg.hidden = 8;
  cfg.intermediate = 6;
  cfg.n_heads = cfg.n_kv_heads = 1;
  cfg.head_dim = 8;
  cfg.moe.num_experts = 2 * P;
  cfg.moe.topk = k;
  cfg.moe.capacity_factor = capacity;
  cfg.moe.aux_loss_coeff = 0.1;
  cfg.moe.z_loss_coeff = 0.01;
  const int64_t B = 2, T = 4, N = B * T, C = cfg.hidden;
  std::mt19937 rng(100 + r);  // every rank its own tokens
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(N * C), dout(N * C);
  for (float& v : x) v = std::abs(nd(rng)) + 0.1f;
  for (float& v : dout) v = nd(rng);
  Setup par(cfg, EpGroup{.comm = world}, P), one(cfg, EpGroup{}, P);
  std::vector<float> y_par(N * C), y_one(N * C), dx_par(N * C, 0.0f), dx_one(N * C, 0.0f);
  for (Setup* s : {&par, &one}) {
    LayerContext c{s->alloc, s->ps, B, T, s->pos.data()};
    c.grad_scale = 0.01;
    const bool p = s == &par;
    const Moe::Saved saved = s->moe.forward(c, p ? y_par.data() : y_one.data(), x.data());
    if (p) {
      if (r == P - 1) {
        EXPECT_EQ(saved.dispatch.recv_rows(), 0) << "the last rank's experts";
      }
    }
    s->moe.backward(c, p ? dx_par.data() : dx_one.data(), dout.data(), x.data(), saved);
  }
  for (int64_t i = 0; i < N * C; ++i) {
    EXPECT_NEAR(y_par[i], y_one[i], 1e-6 * (1 + std::abs(y_one[i]))) << i;
    EXPECT_NEAR(dx_par[i], dx_one[i], 1e-6 * (1 + std::abs(dx_one[i]))) << i;
  }
  const float* gr_par = par.grad("moe.router.weight");
  const float* gr_one = one.grad("moe.router.weight");
  for (int64_t i = 0; i < cfg.moe.num_experts * C; ++i)
    EXPECT_NEAR(gr_par[i], gr_one[i], 1e-6 * (1 + std::abs(gr_one[i]))) << i;
  // Expert gradients: the one-process ones summed over every rank's tokens,
  // sliced to this rank's experts.
  for (int i = 0; i < one.ps.size(); ++i) {
    if (!one.ps.spec(i).expert) continue;
    const std::string& name = one.ps.spec(i).name;
    std::vector<float> sum(one.ps.numel(i));
    world->all_reduce(one.ps.grad_tensor(i).data<float>(), sum.data(), sum.size(), DType::F32,
                      comm::ReduceOp::Sum);
    const int j = par.ps.find(name);
    const int64_t n = par.ps.numel(j), off = r * n;
    const float* g = par.ps.grad_tensor(j).data<float>();
    for (int64_t e = 0; e < n; ++e)
      EXPECT_NEAR(g[e], sum[off + e], 1e-5 * (1 + std::abs(sum[off + e]))) << name << " " << e;
  }
}

TEST(ExpertParallelLayer, MatchesOneProcessWithIdleExperts) {
  check_layer(Arch::GPT2, 1, std::nullopt);
  check_layer(Arch::GPT2, 2, 1.0);
  check_layer(Arch::LLaMA, 2, std::nullopt);
}

}  // namespace
}  // namespace parallm::ep_test
