// Tests of the discrete-event simulator: times of a hand-checked schedule,
// deadlock detection naming where each stage is stuck, and the reason the
// runtime's sends must not wait for their receiver.
#include <gtest/gtest.h>

#include "parallel/pipeline/schedule.h"
#include "parallel/pipeline/schedule_checks.h"
#include "parallel/pipeline/simulate.h"

namespace parallm::pipeline {
namespace {

TEST(PipelineSimulate, GPipeTwoStagesByHand) {
  const Simulation sim = simulate(make_schedule({ScheduleKind::GPipe, 2, 2, 1}));
  ASSERT_FALSE(sim.deadlocked);
  // stage 1: F0 [1,2] F1 [2,3] B0 [3,5] B1 [5,7]; stage 0: B0 [5,7] B1 [7,9]
  EXPECT_DOUBLE_EQ(sim.step_time, 9);
  EXPECT_NEAR(sim.bubble_fraction, 1.0 / 3.0, 1e-12);
  double f1_start = -1;
  for (const TimedAction& t : sim.stages[1])
    if (t.action.kind == ActionKind::Forward && t.action.micro_batch == 1) f1_start = t.start;
  EXPECT_DOUBLE_EQ(f1_start, 2);
}

TEST(PipelineSimulate, LatencyDelaysTheReceiver) {
  CostModel c;
  c.latency = 0.5;
  const Simulation sim = simulate(make_schedule({ScheduleKind::GPipe, 2, 1, 1}), c);
  // F0 [0,1] -> +0.5 -> F0 [1.5,2.5] B0 [2.5,4.5] -> +0.5 -> B0 [5,7]
  EXPECT_DOUBLE_EQ(sim.step_time, 7);
}

TEST(PipelineSimulate, DetectsADeadlockAndNamesIt) {
  // Each stage waits for the other's data before sending its own.
  Schedule s;
  s.spec = {ScheduleKind::GPipe, 2, 1, 1};
  s.stages = {{{ActionKind::RecvGrad, 0, 0, 1},
               {ActionKind::Forward, 0, 0, -1},
               {ActionKind::SendActivation, 0, 0, 1},
               {ActionKind::Backward, 0, 0, -1}},
              {{ActionKind::RecvActivation, 0, 0, 0},
               {ActionKind::Forward, 0, 0, -1},
               {ActionKind::Backward, 0, 0, -1},
               {ActionKind::SendGrad, 0, 0, 0}}};
  EXPECT_TRUE(schedule_problems(s).empty());  // every transfer matched, yet the order deadlocks
  const Simulation sim = simulate(s);
  EXPECT_TRUE(sim.deadlocked);
  EXPECT_EQ(sim.deadlock,
            "stage 0 stuck at action 0 (RG0c0<1); stage 1 stuck at action 0 (RA0c0<0)");
}

TEST(PipelineSimulate, UnmatchedTransferIsFound) {
  Schedule s = make_schedule({ScheduleKind::OneFOneB, 2, 2, 1});
  s.stages[1].erase(s.stages[1].begin());  // drop stage 1's first receive
  const auto problems = schedule_problems(s);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "SA0c0>1 from stage 0 to stage 1: 1 send(s) unmatched");
}

TEST(PipelineSimulate, BlockingSendsDeadlock1F1BSoTheRuntimeMustIsend) {
  CostModel c;
  c.mode = SendMode::Rendezvous;
  // GPipe never has neighbours sending to each other at once ...
  EXPECT_FALSE(simulate(make_schedule({ScheduleKind::GPipe, 4, 8, 1}), c).deadlocked);
  // ... 1F1B does: stage 0 sends activation 1 while stage 1 sends gradient 0.
  const Simulation sim = simulate(make_schedule({ScheduleKind::OneFOneB, 2, 4, 1}), c);
  EXPECT_TRUE(sim.deadlocked);
  EXPECT_EQ(sim.deadlock,
            "stage 0 stuck at action 3 (SA1c0>1); stage 1 stuck at action 3 (SG0c0>0)");
}

}  // namespace
}  // namespace parallm::pipeline
