// MoeStats' per-dispatch ep load: for each ep size dividing E, the busiest
// block of E / ep consecutive experts over the mean block, summed over
// dispatches, and carried through the flat all-reduce form.
#include "model/moe/moe_stats.h"

#include <gtest/gtest.h>

namespace parallm {
namespace {

TEST(MoeStats, DispatchLoadOfEachEpSize) {
  MoeStats s;
  s.record_dispatch({4, 2, 1, 1});  // 8 kept: blocks of 2 hold 6 and 2
  ASSERT_EQ(s.ep_max_load_sum.size(), 5u);
  EXPECT_DOUBLE_EQ(s.ep_max_load_sum[1], 1.0);
  EXPECT_DOUBLE_EQ(s.ep_max_load_sum[2], 6.0 / 4.0);
  EXPECT_DOUBLE_EQ(s.ep_max_load_sum[3], 0.0);  // 3 does not divide 4
  EXPECT_DOUBLE_EQ(s.ep_max_load_sum[4], 4.0 / 2.0);
  s.record_dispatch({0, 0, 0, 0});  // nothing routed: not a dispatch anyone waits on
  s.record_dispatch({1, 1, 1, 1});
  EXPECT_EQ(s.dispatches, 2.0);
  EXPECT_DOUBLE_EQ(s.ep_max_load_sum[2], 1.5 + 1.0);

  // Through the flat form, added to another rank's.
  MoeStats other;
  other.record_dispatch({0, 0, 2, 2});
  other.expert_load = {0, 0, 2, 2};
  s.expert_load = {5, 3, 2, 2};
  s.add(other);
  const std::vector<double> flat = s.flat(4, 8);
  ASSERT_EQ(flat.size(), MoeStats::kScalars + 4 + 5 + 8);
  const MoeStats back = MoeStats::from_flat(flat, 4);
  EXPECT_EQ(back.dispatches, 3.0);
  EXPECT_DOUBLE_EQ(back.ep_max_load_sum[2], 2.5 + 2.0);
  EXPECT_DOUBLE_EQ(back.ep_max_load_sum[4], 2.0 + 1.0 + 2.0);
  EXPECT_EQ(back.expert_load, (std::vector<double>{5, 3, 4, 4}));
  EXPECT_EQ(back.layer_load.size(), 8u);
}

}  // namespace
}  // namespace parallm
