#include "train/comm_meter.h"

#include <algorithm>

#include "parallel/tensor/tp_group.h"

namespace parallm {

namespace {
void add(GroupComm& g, const comm::OpTally& t) {
  g.bytes += t.bytes;
  g.ops += t.ops;
  g.blocked_ms += t.blocked_ms();
}
}  // namespace

CommMeter::CommMeter(const std::vector<comm::Communicator*>& groups) {
  for (comm::Communicator* c : groups)
    if (c != nullptr && std::find(groups_.begin(), groups_.end(), c) == groups_.end())
      groups_.push_back(c);
}

void CommMeter::start() {
  at_start_.clear();
  for (const comm::Communicator* c : groups_) at_start_.push_back(c->counters());
}

CommByGroup CommMeter::since_start() const {
  CommByGroup out;
  for (size_t i = 0; i < groups_.size(); ++i) {
    const comm::CommCounters d = groups_[i]->counters() - at_start_[i];
    const std::string kind(groups_[i]->kind());
    if (kind == "tp") {
      const TpTraffic t = tp_traffic(d);
      add(out["tp"], t.tp);
      add(out["sp"], t.sp);
    } else {
      add(out[kind], d.total());
    }
  }
  return out;
}

}  // namespace parallm
