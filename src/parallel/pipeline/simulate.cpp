// Discrete-event simulation of a schedule. Stages advance in turn as far as
// their next action allows; a full pass without progress is a deadlock.
#include "parallel/pipeline/simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace parallm::pipeline {
namespace {

// A message in flight: (send kind, micro-batch, chunk, from, to).
using MessageKey = std::tuple<ActionKind, int, int, int, int>;

}  // namespace

CostModel default_costs(int virtual_stages) {
  CostModel c;
  const double v = virtual_stages;
  c.forward /= v;
  c.backward /= v;
  c.backward_input /= v;
  c.backward_weight /= v;
  return c;
}

double compute_cost(ActionKind k, const CostModel& c) {
  switch (k) {
    case ActionKind::Forward:
      return c.forward;
    case ActionKind::Backward:
      return c.backward;
    case ActionKind::BackwardInput:
      return c.backward_input;
    case ActionKind::BackwardWeight:
      return c.backward_weight;
    default:
      return 0;
  }
}

Simulation simulate(const Schedule& schedule, const CostModel& costs) {
  const int pp = static_cast<int>(schedule.stages.size());
  Simulation sim;
  sim.stages.resize(pp);
  std::vector<size_t> next(pp, 0);
  std::vector<double> clock(pp, 0.0);
  std::map<MessageKey, double> arrived;  // eager sends: when the data is there

  auto done = [&](int s) { return next[s] >= schedule.stages[s].size(); };
  auto record = [&](int s, double start, double end) {
    sim.stages[s].push_back({schedule.stages[s][next[s]], start, end});
    clock[s] = end;
    ++next[s];
  };
  // Tries to run stage s's next action; true when it ran.
  auto step = [&](int s) -> bool {
    const Action& a = schedule.stages[s][next[s]];
    if (is_compute(a.kind)) {
      const double cost = costs.per_action ? costs.per_action(s, a) : compute_cost(a.kind, costs);
      record(s, clock[s], clock[s] + cost);
      return true;
    }
    if (costs.mode == SendMode::Eager) {
      if (is_send(a.kind)) {
        const double end = clock[s] + costs.transfer;
        arrived[{a.kind, a.micro_batch, a.chunk, s, a.peer}] = end + costs.latency;
        record(s, clock[s], end);
        return true;
      }
      auto it = arrived.find({matching_transfer(a.kind), a.micro_batch, a.chunk, a.peer, s});
      if (it == arrived.end()) return false;
      record(s, clock[s], std::max(clock[s], it->second) + costs.transfer);
      arrived.erase(it);
      return true;
    }
    // Rendezvous: the send runs together with the peer's matching receive.
    if (!is_send(a.kind)) return false;  // a receive waits for its sender's turn
    const int r = a.peer;
    if (r < 0 || r >= pp || done(r)) return false;
    const Action& b = schedule.stages[r][next[r]];
    if (b.kind != matching_transfer(a.kind) || b.micro_batch != a.micro_batch ||
        b.chunk != a.chunk || b.peer != s)
      return false;
    const double start = std::max(clock[s], clock[r]);
    const double end = start + costs.transfer + costs.latency;
    record(s, start, end);
    record(r, start, end);
    return true;
  };

  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < pp; ++s)
      while (!done(s) && step(s)) progress = true;
  }

  double busy = 0;
  for (int s = 0; s < pp; ++s) {
    if (!done(s)) {
      sim.deadlocked = true;
      sim.deadlock +=
          fmt::format("{}stage {} stuck at action {} ({})", sim.deadlock.empty() ? "" : "; ", s,
                      next[s], format_action(schedule.stages[s][next[s]], true));
    }
    for (const TimedAction& t : sim.stages[s]) {
      sim.step_time = std::max(sim.step_time, t.end);
      if (is_compute(t.action.kind)) busy += t.end - t.start;
    }
  }
  if (sim.step_time > 0) sim.bubble_fraction = 1.0 - busy / (pp * sim.step_time);
  return sim;
}

}  // namespace parallm::pipeline
