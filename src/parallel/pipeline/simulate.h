// A discrete-event simulator of a schedule: each stage runs its list in
// order; compute takes its cost; a receive waits until the matching send
// has happened. Gives every action's start and end, the step time and the
// bubble fraction, or reports a deadlock (no stage can take its next action)
// naming where each stage is stuck. Invariant: the result depends only on the
// lists and the costs, not on the order in which stages are visited.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "parallel/pipeline/schedule.h"

namespace parallm::pipeline {

enum class SendMode {
  Eager,       // isend: a send never waits; the data is there after `latency`
  Rendezvous,  // blocking send: sender and receiver both wait for the pair
};

struct CostModel {
  double forward = 1, backward = 2, backward_input = 1, backward_weight = 1;
  double transfer = 0;  // time a stage spends issuing a send or finishing a receive
  double latency = 0;   // from the end of a send until its data can be received
  SendMode mode = SendMode::Eager;
  // When set, the cost of compute action a on stage s (measured replays).
  std::function<double(int s, const Action& a)> per_action;
};

// F = 1 and B = 2 (a backward is about twice a forward), or B = W = 1 for
// the zero-bubble split: equal work per micro-batch for every schedule.
// With V model chunks a chunk holds 1/V of the stage, so its costs are
// divided by V and step times compare across schedules.
CostModel default_costs(int virtual_stages = 1);

struct TimedAction {
  Action action;
  double start = 0, end = 0;
};

struct Simulation {
  std::vector<std::vector<TimedAction>> stages;  // as the schedule, with times
  double step_time = 0;                          // latest end over all stages
  double bubble_fraction = 0;                    // 1 - compute time / (stages x step_time)
  bool deadlocked = false;
  std::string deadlock;  // where each unfinished stage is stuck
};

Simulation simulate(const Schedule& schedule, const CostModel& costs = default_costs());

// Cost of one compute action (0 for transfers).
double compute_cost(ActionKind k, const CostModel& costs);

}  // namespace parallm::pipeline
