// Simulation -> timeline events.
#include "parallel/pipeline/sim_timeline.h"

#include <fmt/format.h>

namespace parallm::pipeline {

trace::EventKind event_kind(ActionKind k) {
  switch (k) {
    case ActionKind::Forward:
      return trace::EventKind::Forward;
    case ActionKind::Backward:
      return trace::EventKind::Backward;
    case ActionKind::BackwardInput:
      return trace::EventKind::BackwardInput;
    case ActionKind::BackwardWeight:
      return trace::EventKind::BackwardWeight;
    case ActionKind::SendActivation:
    case ActionKind::SendGrad:
      return trace::EventKind::Send;
    case ActionKind::RecvActivation:
    case ActionKind::RecvGrad:
      return trace::EventKind::Recv;
  }
  return trace::EventKind::Other;
}

trace::Timeline simulation_timeline(const Simulation& sim, int virtual_stages, double us_per_unit) {
  trace::Timeline t;
  for (size_t s = 0; s < sim.stages.size(); ++s) {
    t.rank_names.push_back(fmt::format("stage {}", s));
    for (const TimedAction& a : sim.stages[s]) {
      trace::Event e;
      e.rank = static_cast<int>(s);
      e.kind = event_kind(a.action.kind);
      e.name = format_action(a.action, virtual_stages > 1);
      e.start_us = a.start * us_per_unit;
      e.end_us = a.end * us_per_unit;
      e.micro_batch = a.action.micro_batch;
      e.chunk = virtual_stages > 1 ? a.action.chunk : -1;
      t.events.push_back(e);
    }
  }
  return t;
}

}  // namespace parallm::pipeline
