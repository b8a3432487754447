// MoeExperts under mixed precision (--precision bf16|fp16): the experts'
// grouped GEMMs take 16-bit operands as the dense MLP's do (weights' copies,
// rounded activations and gradients, f32 accumulation). Forward output,
// input gradient and every expert weight and bias gradient against the fp32
// experts: within 16-bit tolerance, and not equal (the 16-bit path runs).
// GPT-2 (GELU, biases) and LLaMA (SwiGLU) experts, one expert without rows.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "base/rng.h"
#include "common/test_util.h"
#include "model/moe/moe_experts.h"
#include "nn/matmul_precision.h"

namespace parallm {
namespace {

struct Result {
  std::vector<float> out, dx, grads;
};

ModelConfig experts_config(Arch arch) {
  ModelConfig c;
  c.arch = arch;
  c.hidden = 48;
  c.intermediate = 64;
  c.n_heads = c.n_kv_heads = 1;
  c.head_dim = 48;
  c.n_layers = 1;
  c.moe.num_experts = 4;
  c.moe.topk = 2;
  return c;
}

Result run(Arch arch, Precision p) {
  const ModelConfig cfg = experts_config(arch);
  Allocator alloc;
  ParameterSet ps;
  MoeExperts ex(ps, "moe", cfg, 0.02, EpGroup{});
  ps.allocate(alloc);
  ps.init_random(5);
  // Biases start at zero: give them values so their gradient path is used.
  for (int i = 0; i < ps.size(); ++i)
    if (ps.spec(i).shape.size() == 2) {
      float* b = ps.value(ParamRef{i});
      for (int64_t j = 0; j < ps.numel(i); ++j) b[j] = 0.01f * static_cast<float>(j % 7);
    }
  const std::vector<int64_t> offsets{0, 9, 9, 30, 37};  // expert 1 gets no row
  const int64_t M = offsets.back(), C = cfg.hidden;
  const uint64_t key = stream_key(9, "experts_precision");
  std::vector<float> x(M * C), dout(M * C);
  for (int64_t i = 0; i < M * C; ++i) {
    x[i] = 2.0f * static_cast<float>(uniform_at(key, i, 0)) - 1.0f;
    dout[i] = 2.0f * static_cast<float>(uniform_at(key, i, 1)) - 1.0f;
  }
  std::vector<int64_t> pos{0};
  LayerContext c{alloc, ps, 1, M, pos.data()};
  std::unique_ptr<MatmulPrecision> mp;
  if (p != Precision::FP32) {
    mp = std::make_unique<MatmulPrecision>(p, ps, alloc);
    c.matmul = mp.get();
  }
  Result r{std::vector<float>(M * C), std::vector<float>(M * C, 0.0f), {}};
  ps.zero_grads();
  const MoeExperts::Saved s = ex.forward(c, r.out.data(), x.data(), offsets);
  ex.backward(c, r.dx.data(), dout.data(), s, offsets);
  const float* g = ps.flat_grads().data<float>();
  r.grads.assign(g, g + ps.total_numel());
  return r;
}

double rel(const std::vector<float>& got, const std::vector<float>& ref) {
  return testing::relative_l2(got, ref);
}

void check(Arch arch, Precision p, double tol) {
  const Result f32 = run(arch, Precision::FP32), lo = run(arch, p);
  const std::string what = std::string(arch == Arch::LLaMA ? "llama" : "gpt2") +
                           (p == Precision::BF16 ? " bf16" : " fp16");
  for (const auto& [got, ref, name] :
       {std::tuple{&lo.out, &f32.out, "out"}, std::tuple{&lo.dx, &f32.dx, "dx"},
        std::tuple{&lo.grads, &f32.grads, "parameter gradients"}}) {
    const double r = rel(*got, *ref);
    EXPECT_LE(r, tol) << what << " " << name;
    EXPECT_GT(r, 0.0) << what << " " << name << ": the 16-bit path did not run";
  }
}

// bf16: 8 significant bits (inputs off by up to 2^-9 relative, errors of
// independent roundings add in quadrature); fp16: 11 bits.
TEST(MoeExpertsPrecision, Bf16FollowsFp32) {
  check(Arch::GPT2, Precision::BF16, 1e-2);
  check(Arch::LLaMA, Precision::BF16, 1e-2);
}

TEST(MoeExpertsPrecision, Fp16FollowsFp32) {
  check(Arch::GPT2, Precision::FP16, 2e-3);
  check(Arch::LLaMA, Precision::FP16, 2e-3);
}

}  // namespace
}  // namespace parallm
