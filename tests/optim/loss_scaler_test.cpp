// LossScaler follows Megatron-LM's DynamicGradScaler: hysteresis overflows
// before backing off, growth after `window` clean steps, never below min.
#include "optim/loss_scaler.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace parallm {
namespace {

TEST(LossScaler, BacksOffAfterHysteresisAndGrowsAfterWindow) {
  LossScaler s(
      LossScalerConfig{.initial_scale = 1024, .min_scale = 64, .window = 3, .hysteresis = 2});
  EXPECT_EQ(s.scale(), 1024);
  s.update(true);  // first overflow: tolerated by the hysteresis
  EXPECT_EQ(s.scale(), 1024);
  s.update(true);  // second: back off
  EXPECT_EQ(s.scale(), 512);
  s.update(true);  // the hysteresis stays spent until the scale grows again
  EXPECT_EQ(s.scale(), 256);
  s.update(false);
  s.update(false);
  EXPECT_EQ(s.scale(), 256);
  s.update(false);  // third clean step in a row: grow, hysteresis restored
  EXPECT_EQ(s.scale(), 512);
  s.update(true);
  EXPECT_EQ(s.scale(), 512);
  for (int i = 0; i < 10; ++i) s.update(true);
  EXPECT_EQ(s.scale(), 64);  // the minimum
}

TEST(LossScaler, OverflowResetsTheGrowthWindow) {
  LossScaler s(LossScalerConfig{.initial_scale = 8, .window = 2, .hysteresis = 5});
  s.update(false);
  s.update(true);  // resets the count of clean steps
  s.update(false);
  EXPECT_EQ(s.scale(), 8);
  s.update(false);
  EXPECT_EQ(s.scale(), 16);
}

TEST(LossScaler, RejectsBadSettings) {
  EXPECT_THROW(LossScaler(LossScalerConfig{.initial_scale = 0}), Error);
  EXPECT_THROW(LossScaler(LossScalerConfig{.initial_scale = 4, .min_scale = 8}), Error);
  EXPECT_THROW(LossScaler(LossScalerConfig{.window = 0}), Error);
  EXPECT_THROW(LossScaler(LossScalerConfig{.hysteresis = 0}), Error);
}

}  // namespace
}  // namespace parallm
