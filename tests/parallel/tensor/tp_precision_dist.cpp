// Mixed precision and recomputation under tensor + sequence parallelism, dp 2
// with ZeRO-3, and tp 2 x dp 2 with ZeRO-2 where the world has 4 ranks: recompute
// selective/full give bit-identical losses and parameters to none in the
// same layout; bf16 follows its one-process run; an fp16 overflow is
// skipped on every rank in the same steps as in one process, with the same
// loss scales.
#include <gtest/gtest.h>

#include <cmath>

#include "tp_env.h"

namespace parallm::tp_test {
namespace {

constexpr int kSteps = 6;

std::vector<TpLayout> layouts() {
  const int n = env().world->size();
  std::vector<TpLayout> out;
  if (n >= 2) out.push_back({.tp = 2, .dp = 1, .sp = true});
  if (n >= 2) out.push_back({.tp = 1, .dp = 2, .sp = false, .zero = 3});
  if (n >= 4) out.push_back({.tp = 2, .dp = 2, .sp = true, .zero = 2});
  return out;
}

TEST(TpPrecision, RecomputeIsBitIdentical) {
  for (TpLayout l : layouts()) {
    const TpRunResult none = tp_train_run(tp_llama(), l, kSteps);
    for (Recompute r : {Recompute::Selective, Recompute::Full}) {
      l.recompute = r;
      const TpRunResult got = tp_train_run(tp_llama(), l, kSteps);
      if (env().world->rank() >= l.tp * l.dp) continue;
      const std::string what = l.name() + (r == Recompute::Full ? " full" : " selective");
      ASSERT_EQ(got.losses.size(), none.losses.size());
      for (size_t s = 0; s < none.losses.size(); ++s)
        EXPECT_EQ(got.losses[s], none.losses[s]) << what << " step " << s;
      for (const auto& [name, v] : none.params)
        EXPECT_EQ(got.params.at(name), v) << what << ": " << name;
    }
  }
}

TEST(TpPrecision, Bf16FollowsOneProcess) {
  TpLayout one;
  one.precision = Precision::BF16;
  const TpRunResult ref = tp_train_run(tp_gpt2(), one, kSteps);
  for (TpLayout l : layouts()) {
    l.precision = Precision::BF16;
    const TpRunResult got = tp_train_run(tp_gpt2(), l, kSteps);
    if (env().world->rank() >= l.tp * l.dp) continue;
    // The layouts sum partial products in another order, which moves a few
    // bf16 roundings of the next GEMM's inputs: close, not bit-equal.
    for (size_t s = 0; s < ref.losses.size(); ++s)
      EXPECT_NEAR(got.losses[s], ref.losses[s], 2e-3 * ref.losses[s]) << l.name() << " step " << s;
  }
}

TEST(TpPrecision, Fp16OverflowSkipsEveryRank) {
  TpLayout one;
  one.precision = Precision::FP16;
  one.loss_scale =
      LossScalerConfig{.initial_scale = std::ldexp(1.0, 30), .window = 2, .hysteresis = 1};
  const TpRunResult ref = tp_train_run(tp_gpt2(), one, 12);
  ASSERT_TRUE(ref.skipped[0]);
  for (TpLayout l : layouts()) {
    l.precision = one.precision;
    l.loss_scale = one.loss_scale;
    const TpRunResult got = tp_train_run(tp_gpt2(), l, 12);
    if (env().world->rank() >= l.tp * l.dp) continue;
    for (size_t s = 0; s < ref.skipped.size(); ++s) {
      EXPECT_EQ(got.skipped[s], ref.skipped[s]) << l.name() << " step " << s;
      EXPECT_EQ(got.loss_scales[s], ref.loss_scales[s]) << l.name() << " step " << s;
      // After the skipped steps (parameters untouched everywhere) training
      // goes on as in one process.
      EXPECT_NEAR(got.losses[s], ref.losses[s], 2e-3 * ref.losses[s]) << l.name() << " step " << s;
    }
    ASSERT_FALSE(ref.skipped.back()) << "the scale should have come down within 12 steps";
  }
}

}  // namespace
}  // namespace parallm::tp_test
