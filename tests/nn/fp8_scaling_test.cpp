// Per-tensor FP8 scaling (nn/fp8_scaling.h) replayed against Transformer
// Engine's rules on fixed amax sequences: the history window's roll (the
// step's amax last, slot 0 back to 0, the oldest dropped), scale = fp8_max
// 2^-margin / amax over the window (max) or of the step (most_recent), a
// zero or non-finite amax keeping the previous scale, several casts in one
// step taking their largest, current scaling, restore and bad settings.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/test_util.h"
#include "nn/fp8_scaling.h"

namespace parallm {
namespace {

DelayedScalingConfig config(int len, AmaxAlgo algo, int margin = 0) {
  DelayedScalingConfig c;
  c.history_len = len;
  c.algo = algo;
  c.margin = margin;
  return c;
}

TEST(Fp8DelayedScaling, WindowRollsAsTransformerEngine) {
  DelayedScale s(config(3, AmaxAlgo::Max));
  EXPECT_EQ(s.scale(), 1.0f);  // before any step
  s.record(2.0f);
  s.record(-4.0f);  // magnitudes; the step keeps its largest
  s.update();
  EXPECT_EQ(s.history(), (std::vector<float>{0.0f, 0.0f, 4.0f}));
  EXPECT_EQ(s.scale(), 448.0f / 4.0f);
  s.record(1.0f);
  s.update();
  EXPECT_EQ(s.history(), (std::vector<float>{0.0f, 4.0f, 1.0f}));
  EXPECT_EQ(s.scale(), 448.0f / 4.0f);  // the window's max
  s.record(0.5f);
  s.update();  // window {4, 1, 0.5}; 4 then leaves
  EXPECT_EQ(s.history(), (std::vector<float>{0.0f, 1.0f, 0.5f}));
  EXPECT_EQ(s.scale(), 448.0f / 4.0f);
  s.record(0.25f);
  s.update();  // window {1, 0.5, 0.25}
  EXPECT_EQ(s.scale(), 448.0f / 1.0f);
  EXPECT_EQ(s.scale_inv(), 1.0f / 448.0f);
}

TEST(Fp8DelayedScaling, MostRecentMarginAndNonFinite) {
  DelayedScale s(config(4, AmaxAlgo::MostRecent, 2));
  s.record(8.0f);
  s.update();
  EXPECT_EQ(s.scale(), 448.0f / 4.0f / 8.0f);  // 2^-2 margin
  s.record(2.0f);
  s.update();
  EXPECT_EQ(s.scale(), 448.0f / 4.0f / 2.0f);
  const float before = s.scale();
  s.update();  // a step with no cast: amax 0 keeps the scale
  EXPECT_EQ(s.scale(), before);
  s.record(std::numeric_limits<float>::infinity());
  s.update();
  EXPECT_EQ(s.scale(), before);
  s.record(std::numeric_limits<float>::quiet_NaN());
  s.record(3.0f);  // NaN wins within the step
  s.update();
  EXPECT_EQ(s.scale(), before);
  // E5M2 and a history of one: the step alone.
  DelayedScalingConfig c = config(1, AmaxAlgo::Max);
  c.format = Fp8Format::E5M2;
  DelayedScale e(c);
  e.record(57344.0f / 2);
  e.update();
  EXPECT_EQ(e.scale(), 2.0f);
  EXPECT_EQ(e.history(), (std::vector<float>{0.0f}));
}

TEST(Fp8DelayedScaling, CurrentScalingRestoreAndErrors) {
  EXPECT_EQ(current_scale(2.0f, Fp8Format::E4M3), 224.0f);
  EXPECT_EQ(current_scale(2.0f, Fp8Format::E4M3, 1), 112.0f);
  EXPECT_EQ(current_scale(0.0f, Fp8Format::E4M3), 1.0f);
  EXPECT_EQ(current_scale(std::numeric_limits<float>::infinity(), Fp8Format::E5M2), 1.0f);
  // A tiny amax would overflow the scale: held at the largest float, finite.
  EXPECT_EQ(current_scale(1e-38f, Fp8Format::E4M3), std::numeric_limits<float>::max());
  DelayedScale tiny(config(1, AmaxAlgo::Max));
  tiny.record(1e-40f);
  tiny.update();
  EXPECT_EQ(tiny.scale(), std::numeric_limits<float>::max());
  EXPECT_GT(tiny.scale_inv(), 0.0f);
  DelayedScale s(config(2, AmaxAlgo::Max));
  s.restore({0.0f, 7.0f}, 64.0f);
  EXPECT_EQ(s.scale(), 64.0f);
  s.update();
  EXPECT_EQ(s.scale(), 448.0f / 7.0f);
  EXPECT_EQ(testing::error_of([&] { s.restore({1.0f, 2.0f, 3.0f}, 1.0f); }),
            "fp8 amax history of 3 steps restored into one of 2");
  EXPECT_EQ(testing::error_of([&] { s.restore({1.0f, 2.0f}, 0.0f); }),
            "fp8 scale 0 is not a positive number");
  EXPECT_EQ(testing::error_of([] { DelayedScale(config(0, AmaxAlgo::Max)); }),
            "fp8 amax history length must be at least 1, got 0");
  EXPECT_EQ(testing::error_of([] { DelayedScale(config(4, AmaxAlgo::Max, -1)); }),
            "fp8 margin must be non-negative, got -1");
  EXPECT_EQ(testing::error_of([] { amax_algo_from_name("mean"); }),
            "unknown fp8 amax algorithm 'mean' (expected max or most_recent)");
}

}  // namespace
}  // namespace parallm
