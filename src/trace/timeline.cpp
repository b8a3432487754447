// Event kinds and the bubble fraction of a timeline.
#include "trace/timeline.h"

#include <algorithm>
#include <limits>

namespace parallm::trace {

std::string event_kind_name(EventKind k) {
  switch (k) {
    case EventKind::Forward:
      return "forward";
    case EventKind::Backward:
      return "backward";
    case EventKind::BackwardInput:
      return "backward_input";
    case EventKind::BackwardWeight:
      return "backward_weight";
    case EventKind::Send:
      return "send";
    case EventKind::Recv:
      return "recv";
    case EventKind::Collective:
      return "collective";
    case EventKind::Other:
      return "other";
  }
  return "other";
}

bool is_compute(EventKind k) {
  return k == EventKind::Forward || k == EventKind::Backward || k == EventKind::BackwardInput ||
         k == EventKind::BackwardWeight;
}

double bubble_fraction(const Timeline& t) {
  if (t.events.empty() || t.rank_names.empty()) return 0;
  double lo = std::numeric_limits<double>::max(), hi = std::numeric_limits<double>::lowest();
  double busy = 0;
  for (const Event& e : t.events) {
    lo = std::min(lo, e.start_us);
    hi = std::max(hi, e.end_us);
    if (is_compute(e.kind)) busy += e.end_us - e.start_us;
  }
  const double span = hi - lo;
  if (span <= 0) return 0;
  return 1.0 - busy / (static_cast<double>(t.rank_names.size()) * span);
}

}  // namespace parallm::trace
