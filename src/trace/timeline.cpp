// Event kinds and the bubble fraction of a timeline.
#include "trace/timeline.h"

#include <algorithm>
#include <limits>

namespace parallm::trace {

std::string event_kind_name(EventKind k) {
  switch (k) {
    case EventKind::kForward: return "forward";
    case EventKind::kBackward: return "backward";
    case EventKind::kBackwardInput: return "backward_input";
    case EventKind::kBackwardWeight: return "backward_weight";
    case EventKind::kSend: return "send";
    case EventKind::kRecv: return "recv";
    case EventKind::kCollective: return "collective";
    case EventKind::kOther: return "other";
  }
  return "other";
}

bool is_compute(EventKind k) {
  return k == EventKind::kForward || k == EventKind::kBackward ||
         k == EventKind::kBackwardInput || k == EventKind::kBackwardWeight;
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
