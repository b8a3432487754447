// Tests of the schedule lists themselves, for every kind over many
// (pp, m, V): each unit forward once then backward once (B before W), every
// transfer matched on the neighbour, no deadlock in simulation, in-flight
// micro-batches bounded as each schedule promises, and the bubble fractions.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "common/test_util.h"
#include "parallel/pipeline/interleaved.h"
#include "parallel/pipeline/schedule.h"
#include "parallel/pipeline/schedule_checks.h"
#include "parallel/pipeline/simulate.h"

namespace parallm::pipeline {
namespace {

// Every spec the tests sweep: pp 1..6, m 1..12 (m % pp == 0 for interleaved,
// with V 2..3).
std::vector<ScheduleSpec> all_specs() {
  std::vector<ScheduleSpec> out;
  for (int pp = 1; pp <= 6; ++pp)
    for (int m = 1; m <= 12; ++m) {
      out.push_back({ScheduleKind::GPipe, pp, m, 1});
      out.push_back({ScheduleKind::OneFOneB, pp, m, 1});
      out.push_back({ScheduleKind::ZeroBubbleH1, pp, m, 1});
      if (pp >= 2 && m % pp == 0)
        for (int v = 2; v <= 3; ++v) out.push_back({ScheduleKind::Interleaved, pp, m, v});
    }
  return out;
}

std::string name(const ScheduleSpec& s) {
  return fmt::format("{} pp {} m {} V {}", schedule_kind_name(s.kind), s.pp, s.micro_batches,
                     s.virtual_stages);
}

TEST(PipelineSchedule, ListsAreSoundForEverySpec) {
  for (const ScheduleSpec& spec : all_specs()) {
    const Schedule s = make_schedule(spec);
    ASSERT_EQ(static_cast<int>(s.stages.size()), spec.pp);
    const auto problems = schedule_problems(s);
    EXPECT_TRUE(problems.empty()) << name(spec) << ": " << problems.front();
  }
}

TEST(PipelineSchedule, NoDeadlockForEverySpec) {
  for (const ScheduleSpec& spec : all_specs()) {
    const Simulation sim = simulate(make_schedule(spec));
    EXPECT_FALSE(sim.deadlocked) << name(spec) << ": " << sim.deadlock;
    // with a transfer cost and latency too
    CostModel c;
    c.transfer = 0.1;
    c.latency = 0.3;
    const Simulation slow = simulate(make_schedule(spec), c);
    EXPECT_FALSE(slow.deadlocked) << name(spec) << ": " << slow.deadlock;
  }
}

TEST(PipelineSchedule, InFlightBoundedAsPromised) {
  for (const ScheduleSpec& spec : all_specs()) {
    const Schedule s = make_schedule(spec);
    const auto held = peak_in_flight(s);
    const auto held_w = peak_in_flight(s, /*release_at_weight=*/true);
    for (int st = 0; st < spec.pp; ++st) {
      const int m = spec.micro_batches;
      switch (spec.kind) {
        case ScheduleKind::GPipe:
          EXPECT_EQ(held[st], m) << name(spec);
          break;
        case ScheduleKind::OneFOneB:
          EXPECT_EQ(held[st], std::min(spec.pp - st, m)) << name(spec) << " stage " << st;
          break;
        case ScheduleKind::ZeroBubbleH1:
          EXPECT_EQ(held[st], std::min(spec.pp - st, m)) << name(spec) << " stage " << st;
          // W holds activations longer, but never beyond 1F1B's peak, pp.
          EXPECT_LE(held_w[st], std::min(spec.pp, m)) << name(spec) << " stage " << st;
          break;
        case ScheduleKind::Interleaved:
          EXPECT_LE(held[st], std::min(interleaved_warmup(spec.pp, st, m, spec.virtual_stages) + 1,
                                       m * spec.virtual_stages))
              << name(spec) << " stage " << st;
          break;
      }
    }
  }
}

TEST(PipelineSchedule, OneFOneBStageZeroHoldsPpWhateverM) {
  for (int m : {4, 8, 64})
    EXPECT_EQ(peak_in_flight(make_schedule({ScheduleKind::OneFOneB, 4, m, 1}))[0], 4);
  EXPECT_EQ(peak_in_flight(make_schedule({ScheduleKind::GPipe, 4, 64, 1}))[0], 64);
}

TEST(PipelineSchedule, CompactListsMatchTheTextbook) {
  const Schedule s = make_schedule({ScheduleKind::OneFOneB, 4, 8, 1});
  const std::string text = format_schedule(s, false);
  EXPECT_NE(text.find("stage 0: F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("stage 3: F0 B0 F1 B1"), std::string::npos) << text;
  const std::string g = format_schedule(make_schedule({ScheduleKind::GPipe, 2, 2, 1}), true);
  EXPECT_EQ(g,
            "stage 0: F0 SA0>1 F1 SA1>1 RG0<1 B0 RG1<1 B1\n"
            "stage 1: RA0<0 F0 RA1<0 F1 B0 SG0>0 B1 SG1>0\n");
  const std::string zb =
      format_schedule(make_schedule({ScheduleKind::ZeroBubbleH1, 2, 3, 1}), false);
  EXPECT_EQ(zb, "stage 0: F0 F1 B0 W0 F2 B1 W1 B2 W2\nstage 1: F0 B0 F1 B1 W0 F2 B2 W1 W2\n");
  const std::string il =
      format_schedule(make_schedule({ScheduleKind::Interleaved, 2, 2, 2}), false);
  EXPECT_NE(il.find("stage 0: F0c0 F1c0 F0c1 F1c1 B0c1"), std::string::npos) << il;
}

TEST(PipelineSchedule, BubbleGPipeAnd1F1BExactlyTheFormula) {
  for (int pp = 1; pp <= 6; ++pp)
    for (int m = 1; m <= 16; ++m)
      for (auto kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
        const ScheduleSpec spec{kind, pp, m, 1};
        const double expect = (pp - 1.0) / (m + pp - 1.0);
        EXPECT_NEAR(simulate(make_schedule(spec)).bubble_fraction, expect, 1e-12) << name(spec);
        EXPECT_NEAR(ideal_bubble_fraction(spec), expect, 1e-12);
      }
}

TEST(PipelineSchedule, InterleavedCutsTheBubbleByV) {
  for (int pp : {2, 4})
    for (int m : {pp, 2 * pp, 4 * pp})
      for (int v : {2, 3}) {
        const ScheduleSpec spec{ScheduleKind::Interleaved, pp, m, v};
        const double sim = simulate(make_schedule(spec)).bubble_fraction;
        const double one =
            simulate(make_schedule({ScheduleKind::OneFOneB, pp, m, 1})).bubble_fraction;
        // bubble / ideal compute: (p-1)/(V m) vs (p-1)/m
        const double ratio = (sim / (1 - sim)) / (one / (1 - one));
        EXPECT_NEAR(ratio, 1.0 / v, 0.02) << name(spec);
        EXPECT_NEAR(sim, ideal_bubble_fraction(spec), 0.01) << name(spec);
      }
}

TEST(PipelineSchedule, ZeroBubbleBelow1F1B) {
  for (int pp = 2; pp <= 6; ++pp)
    for (int m = 1; m <= 16; ++m) {
      const ScheduleSpec spec{ScheduleKind::ZeroBubbleH1, pp, m, 1};
      const double zb = simulate(make_schedule(spec)).bubble_fraction;
      const double one =
          simulate(make_schedule({ScheduleKind::OneFOneB, pp, m, 1})).bubble_fraction;
      EXPECT_LT(zb, one) << name(spec);
      // With m >= pp the H1 bubble is (p-1)(F+B-W): a third of 1F1B's at F=B=W.
      if (m >= pp) {
        EXPECT_NEAR(zb, ideal_bubble_fraction(spec), 1e-12) << name(spec);
      }
    }
}

TEST(PipelineSchedule, ClearErrors) {
  EXPECT_EQ(testing::error_of([] {
              make_schedule({ScheduleKind::Interleaved, 4, 6, 2});
            }),
            "interleaved schedule needs micro-batches (6) divisible by pp (4)");
  EXPECT_EQ(testing::error_of([] {
              make_schedule({ScheduleKind::OneFOneB, 4, 8, 2});
            }),
            "virtual stages (2) need the interleaved schedule, not 1f1b");
  EXPECT_EQ(testing::error_of([] { schedule_kind_from_name("pipedream"); }),
            "unknown pipeline schedule 'pipedream' (expected gpipe, 1f1b, interleaved or zb)");
  EXPECT_EQ(schedule_kind_from_name("zb"), ScheduleKind::ZeroBubbleH1);
  EXPECT_NE(testing::error_of([] { make_schedule({ScheduleKind::GPipe, 0, 8, 1}); }), "(no error)");
}

}  // namespace
}  // namespace parallm::pipeline
