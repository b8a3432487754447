// Simulation -> timeline events.
#include "parallel/pipeline/sim_timeline.h"

#include <fmt/format.h>

namespace parallm::pipeline {

trace::EventKind event_kind(ActionKind k) {
  switch (k) {
    case ActionKind::kForward: return trace::EventKind::kForward;
    case ActionKind::kBackward: return trace::EventKind::kBackward;
    case ActionKind::kBackwardInput: return trace::EventKind::kBackwardInput;
    case ActionKind::kBackwardWeight: return trace::EventKind::kBackwardWeight;
    case ActionKind::kSendActivation:
    case ActionKind::kSendGrad: return trace::EventKind::kSend;
    case ActionKind::kRecvActivation:
    case ActionKind::kRecvGrad: return trace::EventKind::kRecv;
  }
  return trace::EventKind::kOther;
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
