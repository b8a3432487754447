// The straggler verdict on synthetic per-rank times (find_stragglers): a rank
// slow at compute is named for compute and the ranks that wait for it, in
// the gradient reduction or in tp collectives, are not named; a group with a
// slow link is named for communication; noise, a disturbed step, stages with
// unequal work and tiny communication times name nobody. Also the planted
// slow rank's setting, whose errors name the value.
#include "train/resilience/straggler_monitor.h"

#include <gtest/gtest.h>

#include "common/test_util.h"
#include "train/resilience/planted_slow_rank.h"

namespace parallm {
namespace {

// One step of one rank: compute, then `inner` ms blocked in tp/cp/ep/pp
// ops, then `reduce` ms in the gradient reduction.
RankTimes times(double compute, double inner, double reduce, double peer_wait = 0.0) {
  return {compute + inner + reduce, compute, inner + reduce, reduce, peer_wait};
}

using Window = std::vector<std::vector<RankTimes>>;

Window repeat(const std::vector<RankTimes>& step, int steps) { return Window(steps, step); }

// A little deterministic jitter (+-4%), so no test rests on exact ties.
Window jittered(const std::vector<RankTimes>& step, int steps) {
  Window w;
  for (int i = 0; i < steps; ++i) {
    std::vector<RankTimes> at = step;
    for (size_t r = 0; r < at.size(); ++r) {
      const double f = 1.0 + 0.04 * (((i * 7 + static_cast<int>(r) * 3) % 5) - 2) / 2.0;
      at[r].compute_ms *= f;
      at[r].step_ms = at[r].compute_ms + at[r].comm_ms;
    }
    w.push_back(at);
  }
  return w;
}

const std::vector<int> kOneStage(4, 0);

TEST(StragglerMonitor, HealthyRanksNameNobody) {
  const Window w =
      jittered({times(10, 0, 1), times(10, 0, 1), times(10, 0, 1), times(10, 0, 1)}, 10);
  EXPECT_TRUE(find_stragglers(w, kOneStage, 1.2).empty());
}

// dp 4, rank 2 computes 13 ms where the others compute 10: they wait 3 ms
// for it in the gradient reduction (plus the 1 ms transfer all pay), and it
// waits for nobody there. Only rank 2 is named, for compute.
TEST(StragglerMonitor, SlowComputeNamedAndTheRanksWaitingForItAreNot) {
  const Window w =
      jittered({times(10, 0, 4), times(10, 0, 4), times(13, 0, 1), times(10, 0, 4)}, 10);
  const auto v = find_stragglers(w, kOneStage, 1.2);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rank, 2);
  EXPECT_EQ(v[0].cause, StragglerCause::Compute);
  EXPECT_NEAR(v[0].ratio, 1.3, 0.06);
  const auto exact = find_stragglers(
      repeat({times(10, 0, 4), times(10, 0, 4), times(13.1, 0, 1), times(10, 0, 4)}, 10), kOneStage,
      1.2);
  ASSERT_EQ(exact.size(), 1u);
  EXPECT_EQ(describe(exact[0], 10, 19),
            "straggler: rank 2 compute 13.1 ms/step vs median 10.0 ms (1.31x) over steps 10-19");
}

// Without telling waiting from transfer, the waiting ranks' blocked time
// (4 ms against the slow rank's 1) would be 4x the median: they must not be
// named for communication, with two ranks either.
TEST(StragglerMonitor, TwoRanksTheWaitingOneIsNotNamed) {
  const Window w = jittered({times(10, 0, 4), times(13, 0, 1)}, 10);
  const auto v = find_stragglers(w, {0, 0}, 1.2);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rank, 1);
  EXPECT_EQ(v[0].cause, StragglerCause::Compute);
  EXPECT_NEAR(v[0].median_ms, 10.0, 0.5);  // the other rank's, not the mean of both
}

// dp 2 x tp 2 (tp pairs {0,1}, {2,3}), rank 2 computes 3 ms more: its tp
// partner 3 waits 3 ms in the tp collectives, ranks 0 and 1 wait in the
// gradient reduction. Only rank 2 is named.
TEST(StragglerMonitor, SlowComputeUnderTensorParallelTheTpPartnerIsNotNamed) {
  const Window w =
      jittered({times(10, 1, 4), times(10, 1, 4), times(13, 1, 1), times(10, 4, 1)}, 10);
  const auto v = find_stragglers(w, kOneStage, 1.2);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rank, 2);
  EXPECT_EQ(v[0].cause, StragglerCause::Compute);
}

// The tp pair {2,3} sits on a slow link: 6 ms in tp collectives where the
// other pair needs 1, so ranks 0 and 1 wait 5 ms in the gradient reduction.
// Ranks 2 and 3 are named for communication; 0 and 1 are not.
TEST(StragglerMonitor, SlowLinkNamedAsCommunication) {
  const Window w = repeat({times(10, 1, 6), times(10, 1, 6), times(10, 6, 1), times(10, 6, 1)}, 10);
  const auto v = find_stragglers(w, kOneStage, 1.2);
  ASSERT_EQ(v.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(v[static_cast<size_t>(i)].rank, 2 + i);
    EXPECT_EQ(v[static_cast<size_t>(i)].cause, StragglerCause::Communication);
    EXPECT_NEAR(v[static_cast<size_t>(i)].ratio, 7.0 / 2.0, 0.01);  // 6 + 1 against 1 + 1
  }
  EXPECT_NE(describe(v[0], 0, 9).find("rank 2 communication 7.0 ms/step vs median 2.0 ms (3.50x)"),
            std::string::npos)
      << describe(v[0], 0, 9);
}

// Ring attention measures the wait for a peer that had not posted: that
// part of the blocked time is not the rank's own communication.
TEST(StragglerMonitor, MeasuredPeerWaitIsNotOwnCommunication) {
  const Window w =
      jittered({times(10, 1, 1), times(10, 1, 1), times(10, 5, 1, 4), times(10, 1, 1)}, 10);
  EXPECT_TRUE(find_stragglers(w, kOneStage, 1.2).empty());
}

// A window's median, not its mean: one step disturbed by the machine names
// nobody, a rank slow in most steps is named.
TEST(StragglerMonitor, OneDisturbedStepNamesNobody) {
  Window w = jittered({times(10, 0, 1), times(10, 0, 1), times(10, 0, 1), times(10, 0, 1)}, 10);
  w[3][1] = times(60, 0, 1);
  EXPECT_TRUE(find_stragglers(w, kOneStage, 1.2).empty());
  for (int i = 0; i < 6; ++i) w[static_cast<size_t>(i)][1] = times(14, 0, 1);
  const auto v = find_stragglers(w, kOneStage, 1.2);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rank, 1);
}

// Communication of a fraction of a millisecond: a ratio of 3 that costs
// under 5% of a step is noise, not a straggler.
TEST(StragglerMonitor, TinyTimesNameNobody) {
  const Window w = jittered(
      {times(10, 0.1, 0.05), times(10, 0.1, 0.05), times(10, 0.4, 0.05), times(10, 0.1, 0.05)}, 10);
  EXPECT_TRUE(find_stragglers(w, kOneStage, 1.2).empty());
}

// Pipeline stages do different work (the last holds the head and the loss):
// ranks are compared within their stage only, and a stage of one rank has
// nothing to compare with.
TEST(StragglerMonitor, RanksAreComparedWithinTheirStage) {
  const std::vector<int> stages = {0, 0, 1, 1};
  const Window balanced =
      jittered({times(10, 2, 1), times(10, 2, 1), times(16, 2, 1), times(16, 2, 1)}, 10);
  EXPECT_TRUE(find_stragglers(balanced, stages, 1.2).empty());
  const Window slow =
      jittered({times(10, 2, 1), times(10, 2, 1), times(16, 2, 1), times(21, 2, 1)}, 10);
  const auto v = find_stragglers(slow, stages, 1.2);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rank, 3);
  EXPECT_TRUE(
      find_stragglers(jittered({times(10, 0, 1), times(20, 0, 1)}, 10), {0, 1}, 1.2).empty());
}

TEST(StragglerMonitor, WrongRankCountIsAnError) {
  const Window w = repeat({times(10, 0, 1), times(10, 0, 1)}, 3);
  EXPECT_NE(testing::error_of([&] {
              find_stragglers(w, kOneStage, 1.2);
            }).find("2 ranks' times for 4 ranks"),
            std::string::npos);
}

TEST(StragglerMonitor, OffWithoutAWorldOrAWindow) {
  ResilienceConfig cfg;
  std::ostringstream log;
  StragglerMonitor none(cfg, nullptr, log);
  EXPECT_FALSE(none.enabled());
  EXPECT_TRUE(none.on_step(StepStats{}).empty());
}

TEST(StragglerPlant, ParsesRankAndFraction) {
  const PlantedSlowRank p = parse_planted_slow_rank("2:0.3", 4);
  EXPECT_EQ(p.rank, 2);
  EXPECT_DOUBLE_EQ(p.fraction, 0.3);
  EXPECT_EQ(parse_planted_slow_rank("", 4).rank, -1);
  EXPECT_DOUBLE_EQ(planted_slowdown("2:0.3", 2, 4), 0.3);
  EXPECT_DOUBLE_EQ(planted_slowdown("2:0.3", 1, 4), 0.0);
  EXPECT_DOUBLE_EQ(planted_slowdown("", 0, 4), 0.0);
}

TEST(StragglerPlant, ErrorsNameTheValue) {
  for (const char* bad : {"2", "x:0.3", "2x:0.3", "2:", "2:0.3s", "2:-1", "2:0", ":0.3"})
    EXPECT_NE(testing::error_of([&] {
                parse_planted_slow_rank(bad, 4);
              }).find(std::string("'") + bad + "'"),
              std::string::npos)
        << bad;
  const std::string e = testing::error_of([] { parse_planted_slow_rank("4:0.3", 4); });
  EXPECT_NE(e.find("rank 4 in '4:0.3' is not a rank of this job (0 to 3)"), std::string::npos) << e;
}

}  // namespace
}  // namespace parallm
