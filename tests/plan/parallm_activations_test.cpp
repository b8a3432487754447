// The memory model's Parallm activation accounting held against the tagged
// allocator: a tiny GPT-2 and LLaMA run one forward_backward on one process;
// parameters, gradients and AdamW states must match exactly, activations
// within 5% (DESIGN principle 4, issue #7 "It must show" 2).
#include "plan/parallm_activations.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/test_models.h"
#include "model/model_catalog.h"
#include "model/transformer.h"
#include "optim/adam.h"
#include "plan/memory_model.h"

namespace parallm {
namespace {

struct Measured {
  int64_t parameter, gradient, optimizer, activation, workspace;
};

Measured run_one_step(const ModelConfig& cfg, int64_t B, int64_t T) {
  Allocator alloc;
  Transformer model(cfg, alloc);
  model.params().init_random(7);
  Adam opt(model.params(), OptimizerConfig{}, alloc);  // AdamW by default
  std::vector<int32_t> in(B * T), tg(B * T);
  for (int64_t i = 0; i < B * T; ++i) {
    in[i] = static_cast<int32_t>((i * 37 + 11) % cfg.vocab_size);
    tg[i] = static_cast<int32_t>((i * 53 + 5) % cfg.vocab_size);
  }
  alloc.reset_peaks();
  model.forward_backward(in.data(), tg.data(), B, T, 1.0 / static_cast<double>(B * T));
  return {alloc.peak(MemTag::Parameter), alloc.peak(MemTag::Gradient),
          alloc.peak(MemTag::Optimizer), alloc.peak(MemTag::Activation),
          alloc.peak(MemTag::Workspace)};
}

MemoryQuery query(const ModelConfig& cfg, int64_t B, int64_t T) {
  MemoryQuery q;
  q.model = cfg;
  q.seq_len = T;
  q.micro_batch = B;
  q.precision = Precision::FP32;
  q.optimizer = OptimizerKind::AdamW;
  q.activation_model = ActivationModel::Parallm;
  return q;
}

void expect_matches_allocator(const ModelConfig& cfg, int64_t B, int64_t T) {
  const Measured m = run_one_step(cfg, B, T);
  const MemoryBreakdown r = estimate_memory(query(cfg, B, T));
  EXPECT_EQ(r.params_per_rank, cfg.num_parameters());
  EXPECT_EQ(static_cast<int64_t>(r.parameters), m.parameter);
  EXPECT_EQ(static_cast<int64_t>(r.gradients), m.gradient);
  EXPECT_EQ(static_cast<int64_t>(r.optimizer), m.optimizer);
  EXPECT_NEAR(r.activations, static_cast<double>(m.activation), 0.05 * m.activation)
      << "predicted " << r.activations << " measured " << m.activation;
  // The head's logits chunk is one of the workspace buffers alive at the peak.
  EXPECT_LE(r.workspace, static_cast<double>(m.workspace));
}

TEST(ParallmActivations, Gpt2MatchesTheAllocator) {
  expect_matches_allocator(testing::tiny_gpt2(), 2, 32);
}

TEST(ParallmActivations, LlamaMatchesTheAllocator) {
  expect_matches_allocator(testing::tiny_llama(), 3, 16);
}

TEST(ParallmActivations, CountsByHandAndLayouts) {
  // GPT-2 tiny, B 2, T 32: N 64, C 72, Q 72, I 288, H 3; LayerNorm keeps 2 stats.
  MemoryQuery q = query(testing::tiny_gpt2(), 2, 32);
  const double N = 64, C = 72, I = 288;
  const double per_layer = N * C /*out*/ + 2 * (N * C + 2 * N) /*norms*/ + 3 * N * C /*qkv*/ +
                           N * C /*att*/ + 2 * 3 * 32 /*lse*/ + N * C /*mid*/ + 2 * N * I;
  ParallmActivations a = parallm_activations(q);
  EXPECT_DOUBLE_EQ(a.per_layer, 4 * per_layer);
  EXPECT_DOUBLE_EQ(a.outside, 4 * (2 * N * C + 2 * N));
  // tp 3 with sequence parallel: stream tensors hold N/3 rows, the rest a
  // third of the width.
  q.tp = 3;
  q.sequence_parallel = true;
  const double sp_layer = N / 3 * C + 2 * (N / 3 * C + 2 * N / 3) + 3 * N * C / 3 + N * C / 3 +
                          2 * 1 * 32 + N / 3 * C + 2 * N * I / 3;
  EXPECT_DOUBLE_EQ(parallm_activations(q).per_layer, 4 * sp_layer);
  q.recompute = Recompute::Full;
  EXPECT_DOUBLE_EQ(parallm_activations(q).per_layer, 4 * N / 3 * C);
  // Megatron mode is unchanged by the switch's existence.
  q = query(testing::tiny_gpt2(), 2, 32);
  q.activation_model = ActivationModel::Megatron16;
  q.precision = Precision::BF16;
  EXPECT_DOUBLE_EQ(estimate_memory(q).activation_per_layer, 32 * 2 * C * (34 + 5 * 3 * 32 / C));
}

}  // namespace
}  // namespace parallm
