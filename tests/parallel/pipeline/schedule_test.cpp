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
// with V 2..3; m >= 2 pp for DualPipeV).
std::vector<ScheduleSpec> all_specs() {
  std::vector<ScheduleSpec> out;
  for (int pp = 1; pp <= 6; ++pp)
    for (int m = 1; m <= 12; ++m) {
      out.push_back({ScheduleKind::GPipe, pp, m, 1});
      out.push_back({ScheduleKind::OneFOneB, pp, m, 1});
      out.push_back({ScheduleKind::ZeroBubbleH1, pp, m, 1});
      if (pp >= 2 && m % pp == 0)
        for (int v = 2; v <= 3; ++v) out.push_back({ScheduleKind::Interleaved, pp, m, v});
      if (m >= 2 * pp) out.push_back({ScheduleKind::DualPipeV, pp, m, 2});
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
        case ScheduleKind::DualPipeV:
          // DeepSeek's "PP + 1" chunk activations (PP = 2 pp virtual stages):
          // 2 pp filling the V, one more in the steady F0 B1 F1 B0 pairs.
          EXPECT_EQ(held[st], 2 * spec.pp + 1) << name(spec) << " stage " << st;
          EXPECT_LE(held_w[st], 2 * spec.pp + 1) << name(spec) << " stage " << st;
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

// DeepSeek's picture of DualPipeV (4 ranks, 10 micro-batches, the DualPipe
// repository's README): device 0 fills the V with seven chunk-0 forwards,
// turns with F/B/W triples, and ends with B/W pairs; device 3 alternates
// chunks from the start.
TEST(PipelineSchedule, DualPipeVListsMatchDeepSeeksPicture) {
  const std::string text = format_schedule(make_schedule({ScheduleKind::DualPipeV, 4, 10, 2}), false);
  EXPECT_NE(text.find("stage 0: F0c0 F1c0 F2c0 F3c0 F4c0 F5c0 F6c0 F0c1 B0c1 W0c1 F1c1 B1c1 W1c1 "
                      "F2c1 B2c1 W2c1 F3c1 F7c0 B3c1 F4c1 B0c0 "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("B6c0 W6c0 B7c0 W7c0 B8c0 W8c0 B9c0 W9c0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("stage 3: F0c0 F0c1 F1c0 F1c1 F2c0 F2c1 F3c0 F3c1 F4c0 B0c1 F4c1 B0c0 "),
            std::string::npos)
      << text;
  // The turn of the V on the last stage is in memory: it sends to stage 2 only.
  const Schedule s = make_schedule({ScheduleKind::DualPipeV, 4, 10, 2});
  for (const Action& a : s.stages[3])
    if (!is_compute(a.kind)) EXPECT_EQ(a.peer, 2) << format_action(a, true);
  // Stage 0 holds the first virtual stage and the last: it receives chunk 1's
  // activations and sends chunk 0's, both with stage 1.
  EXPECT_EQ(virtual_stage(s.spec, 0, 1), 7);
  EXPECT_EQ(virtual_stage(s.spec, 3, 1), 4);
}

// With F = 1/2, B = 1, W = 1/2 a chunk (a stage's F = 1, B = 2), passes not
// waiting for the other of their pair, DualPipeV idles (p-1) F per stage:
// exactly DeepSeek's (p-1)(F&B + B - 3W) with the pair costing only its B,
// below the formula with F&B = F + B (no overlap), and half ZB-H1's (p-1)
// stage forwards (its chunks are half a stage, as interleaved's are).
TEST(PipelineSchedule, DualPipeVBelowZeroBubbleAnd1F1B) {
  for (int pp = 2; pp <= 6; ++pp)
    for (int m = 2 * pp; m <= 4 * pp; ++m) {
      const ScheduleSpec spec{ScheduleKind::DualPipeV, pp, m, 2};
      const double dpv = simulate(make_schedule(spec)).bubble_fraction;
      const double zb =
          simulate(make_schedule({ScheduleKind::ZeroBubbleH1, pp, m, 1})).bubble_fraction;
      const double one =
          simulate(make_schedule({ScheduleKind::OneFOneB, pp, m, 1})).bubble_fraction;
      const double idle = (pp - 1) * 0.5, busy = 3.0 * m;  // per stage, stage-F units
      EXPECT_NEAR(dpv, idle / (busy + idle), 1e-12) << name(spec);
      EXPECT_LE(dpv, ideal_bubble_fraction(spec) + 1e-12) << name(spec);
      EXPECT_LT(dpv, zb) << name(spec);
      EXPECT_LT(dpv, one) << name(spec);
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
            "unknown pipeline schedule 'pipedream' (expected gpipe, 1f1b, interleaved, zb or "
            "dualpipev)");
  EXPECT_EQ(testing::error_of([] {
              make_schedule({ScheduleKind::DualPipeV, 4, 6, 2});
            }),
            "DualPipeV needs micro-batches (6) of at least 2 x pp (4)");
  EXPECT_EQ(testing::error_of([] {
              make_schedule({ScheduleKind::DualPipeV, 2, 8, 3});
            }),
            "DualPipeV holds 2 model chunks per stage, not 3");
  EXPECT_EQ(schedule_kind_from_name("zb"), ScheduleKind::ZeroBubbleH1);
  EXPECT_NE(testing::error_of([] { make_schedule({ScheduleKind::GPipe, 0, 8, 1}); }), "(no error)");
}

}  // namespace
}  // namespace parallm::pipeline
