// The simulator's timed actions as a trace::Timeline, so the ideal schedule
// is drawn by the same SVG and Chrome trace writers as a measured run.
// One simulated time unit (a forward with default costs) is us_per_unit
// microseconds. Invariant: one event per action, on the row of its stage.
#pragma once
#include "parallel/pipeline/simulate.h"
#include "trace/timeline.h"

namespace parallm::pipeline {

// The timeline kind of an action (sends and receives of both directions
// map to kSend / kRecv).
trace::EventKind event_kind(ActionKind k);

trace::Timeline simulation_timeline(const Simulation& sim, int virtual_stages,
                                    double us_per_unit = 1000.0);

}  // namespace parallm::pipeline
