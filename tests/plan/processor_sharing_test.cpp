// Ranks sharing cores round robin (plan/processor_sharing.h); the
// step-time model's use of it is tested in op_costs_test.cpp
// (StepTime.EpGroupOnSharedCoresIsServedRoundRobin).
#include <gtest/gtest.h>

#include "plan/processor_sharing.h"

namespace parallm {
namespace {

TEST(ProcessorSharing, RanksShareTheCoresEquallyUntilEachIsDone) {
  EXPECT_DOUBLE_EQ(processor_sharing_s({1.0, 1.0, 1.0, 1.0}, 1, 2), 2.0);  // packed: 4 / 2
  EXPECT_DOUBLE_EQ(processor_sharing_s({3.0, 1.0}, 1, 2), 3.0);  // a core each: the longest
  EXPECT_DOUBLE_EQ(processor_sharing_s({1.0, 1.0}, 2, 2), 2.0);  // 2 threads each on 2 cores
  // One busy rank of four: the light ones finish at half speed (1.2 s),
  // then it runs alone (1.2 s more): 2.4 s, where packing would take
  // max(1.8, 3.6 / 2) = 1.8 s.
  EXPECT_NEAR(processor_sharing_s({1.8, 0.6, 0.6, 0.6}, 1, 2), 2.4, 1e-12);
}

}  // namespace
}  // namespace parallm
