// The memory model's optimizer states for each optimizer (seed 002's
// table, in fp32 bytes per parameter: SGD 0, momentum 4, Adam/AdamW 8, Muon
// 4 for the blocks' 2-D matrices and 8 for the rest) on GPT-3 175B, plus the
// fp32 master copy under mixed precision; and Muon's ZeRO shards: the most
// loaded rank holds at most the element-wise 8 bytes per element and at
// least the 4-byte share.
#include <gtest/gtest.h>

#include <cmath>

#include "model/model_catalog.h"
#include "plan/memory_model.h"

namespace parallm {
namespace {

MemoryQuery gpt3(OptimizerKind k, Precision p) {
  MemoryQuery q;
  q.model = catalog_model("gpt3-175b");
  q.precision = p;
  q.optimizer = k;
  return q;
}

TEST(OptimizerMemory, BytesPerParameterFollowTheSeedTable) {
  const double psi = static_cast<double>(
      estimate_memory(gpt3(OptimizerKind::SGD, Precision::FP32)).params_per_rank);
  const ModelConfig m = catalog_model("gpt3-175b");
  // Muon's matrices: q, k, v, o (4 h^2) and fc, proj (8 h^2) per layer.
  const double h = static_cast<double>(m.hidden);
  const double matrices = 96.0 * 12.0 * h * h;
  const struct {
    OptimizerKind k;
    double fp32;
  } rows[] = {{OptimizerKind::SGD, 0.0},
              {OptimizerKind::SGDMomentum, 4 * psi},
              {OptimizerKind::Adam, 8 * psi},
              {OptimizerKind::AdamW, 8 * psi},
              {OptimizerKind::Muon, 4 * matrices + 8 * (psi - matrices)}};
  for (const auto& r : rows) {
    EXPECT_DOUBLE_EQ(estimate_memory(gpt3(r.k, Precision::FP32)).optimizer, r.fp32)
        << optimizer_name(r.k);
    EXPECT_DOUBLE_EQ(estimate_memory(gpt3(r.k, Precision::BF16)).optimizer, r.fp32 + 4 * psi)
        << optimizer_name(r.k) << " with the fp32 master copy";
  }
  // Muon's matrices are almost all of GPT-3 (embeddings and norms are 0.4%
  // of it): about 4.015 bytes per parameter, half of AdamW's.
  EXPECT_NEAR(estimate_memory(gpt3(OptimizerKind::Muon, Precision::FP32)).optimizer / psi, 4.015,
              0.001);
}

TEST(OptimizerMemory, MuonUnderZeroTakesTheMostLoadedShard) {
  MemoryQuery q = gpt3(OptimizerKind::Muon, Precision::FP32);
  const double whole = estimate_memory(q).optimizer;
  q.dp = 8;
  q.zero = 1;
  const double shard = estimate_memory(q).optimizer;
  const double psi = static_cast<double>(estimate_memory(q).params_per_rank);
  EXPECT_GE(shard, whole / 8);               // the average shard
  EXPECT_LE(shard, 8 * std::ceil(psi / 8));  // all 8-byte elements at worst
  EXPECT_GT(shard, 4 * psi / 8);
}

}  // namespace
}  // namespace parallm
