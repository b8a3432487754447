// The Parallm model's model-state bytes under mixed precision, counted by
// hand: fp32 master values (ZeRO-3 shards them) plus a 16-bit GEMM copy of
// every local element (never sharded), fp32 gradients, optimizer states
// without a master copy; the Megatron model keeps the ZeRO paper's 2 + 2 +
// (state + 4) bytes. Also the per-rank key/value width when kv heads are
// replicated over tp. The allocator check is tests/parallel/tensor/
// memory_model_dist.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "common/test_models.h"
#include "plan/memory_model.h"
#include "plan/parallm_activations.h"

namespace parallm {
namespace {

MemoryQuery query(Precision p, ActivationModel a) {
  MemoryQuery q;
  q.model = testing::tiny_llama();
  q.seq_len = 16;
  q.micro_batch = 2;
  q.precision = p;
  q.optimizer = OptimizerKind::AdamW;
  q.activation_model = a;
  return q;
}

TEST(ParallmStateBytes, MixedPrecisionKeepsMasterGradsAndACopy) {
  const ParallmStateBytes fp32 = parallm_state_bytes(Precision::FP32);
  EXPECT_EQ(fp32.master, 4.0);
  EXPECT_EQ(fp32.gemm_copy, 0.0);
  EXPECT_EQ(fp32.gradient, 4.0);
  for (Precision p : {Precision::BF16, Precision::FP16}) {
    const ParallmStateBytes b = parallm_state_bytes(p);
    EXPECT_EQ(b.master, 4.0);
    EXPECT_EQ(b.gemm_copy, 2.0);
    EXPECT_EQ(b.gradient, 4.0);
  }
  // Padded elements on the rank: the fp32 parameter bytes / 4.
  const double P = estimate_memory(query(Precision::FP32, ActivationModel::Parallm)).parameters / 4;
  for (Precision p : {Precision::BF16, Precision::FP16}) {
    MemoryQuery q = query(p, ActivationModel::Parallm);
    MemoryBreakdown r = estimate_memory(q);
    EXPECT_DOUBLE_EQ(r.parameters, 6 * P);
    EXPECT_DOUBLE_EQ(r.gradients, 4 * P);
    EXPECT_DOUBLE_EQ(r.optimizer, 8 * P);  // AdamW: m and v only
    q.dp = 4;
    q.zero = 3;
    r = estimate_memory(q);
    const double shard = std::ceil(P / 4);
    EXPECT_DOUBLE_EQ(r.parameters, 4 * shard + 2 * P);  // the 16-bit copy stays whole
    EXPECT_DOUBLE_EQ(r.gradients, 4 * shard);
    EXPECT_DOUBLE_EQ(r.optimizer, 8 * shard);
  }
  // The Megatron model: 16-bit weights and gradients, master with the optimizer.
  MemoryQuery m = query(Precision::BF16, ActivationModel::Megatron16);
  const MemoryBreakdown r = estimate_memory(m);
  const double n = static_cast<double>(r.params_per_rank);
  EXPECT_DOUBLE_EQ(r.parameters, 2 * n);
  EXPECT_DOUBLE_EQ(r.gradients, 2 * n);
  EXPECT_DOUBLE_EQ(r.optimizer, 12 * n);
}

TEST(ParallmStateBytes, PrecisionLeavesParallmActivationsFp32) {
  for (Recompute rc : {Recompute::None, Recompute::Selective, Recompute::Full}) {
    MemoryQuery a = query(Precision::FP32, ActivationModel::Parallm), b = a;
    a.recompute = b.recompute = rc;
    b.precision = Precision::BF16;
    EXPECT_DOUBLE_EQ(estimate_memory(a).activations, estimate_memory(b).activations);
  }
}

TEST(ParallmActivations, ReplicatedKvHeadsKeepAWholeHeadPerRank) {
  // tiny LLaMA: 6 query heads, head_dim 12. At tp 2 one kv head is held
  // whole by both ranks, exactly as two kv heads split one per rank.
  MemoryQuery one = query(Precision::FP32, ActivationModel::Parallm), two = one;
  one.model.n_kv_heads = 1;
  two.model.n_kv_heads = 2;
  one.tp = two.tp = 2;
  EXPECT_DOUBLE_EQ(parallm_activations(one).per_layer, parallm_activations(two).per_layer);
  // Against one process: q, att, lse and the MLP halve; k and v (one
  // head, head_dim 12, on every rank) keep their full width.
  MemoryQuery single = one;
  single.tp = 1;
  const double B = 2, T = 16, N = B * T, Q = 72, H = 6;
  const double I = static_cast<double>(one.model.intermediate);
  EXPECT_DOUBLE_EQ(parallm_activations(single).per_layer - parallm_activations(one).per_layer,
                   4 * (2 * N * Q / 2 + B * T * H / 2 + 3 * N * I / 2));
}

}  // namespace
}  // namespace parallm
