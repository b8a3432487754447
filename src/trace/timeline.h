// A timeline: timed events per rank (compute passes, transfers, collectives),
// from the schedule simulator now and from measured runs later. The Chrome
// trace writer and the SVG picture both draw from it. Times are microseconds
// from an arbitrary origin. Invariant: start_us <= end_us for every event.
#pragma once
#include <string>
#include <vector>

namespace parallm::trace {

enum class EventKind {
  Forward,
  Backward,
  BackwardInput,
  BackwardWeight,
  Send,
  Recv,
  Collective,
  Other
};

std::string event_kind_name(EventKind k);  // "forward", "backward", ...
bool is_compute(EventKind k);              // the four passes

struct Event {
  int rank = 0;
  EventKind kind = EventKind::Other;
  std::string name;  // shown in the trace, e.g. "F3"
  double start_us = 0, end_us = 0;
  int micro_batch = -1;  // -1 when not about one micro-batch
  int chunk = -1;        // model chunk, -1 when not chunked
};

struct Timeline {
  std::vector<std::string> rank_names;  // one per row/process, e.g. "stage 0"
  std::vector<Event> events;
};

// 1 - (compute time) / (ranks x (last end - first start)): the share of the
// step the ranks spend not computing. 0 for an empty timeline.
double bubble_fraction(const Timeline& t);

}  // namespace parallm::trace
