#include "train/comm_meter.h"

#include "parallel/tensor/tp_group.h"

namespace parallm {

namespace {
void add(GroupComm& g, const comm::OpTally& t) {
  g.bytes += t.bytes;
  g.ops += t.ops;
  g.blocked_ms += t.blocked_ms();
  g.peer_wait_ms += t.peer_wait_ms();
  g.poll_ms += t.poll_ms();
}
void add(GroupComm& g, const comm::CommCounters& d) {
  add(g, d.total());
  g.send_ms += d.of(comm::OpKind::Send).blocked_ms();
}
}  // namespace

CommMeter::CommMeter(const std::vector<Group>& groups) {
  for (const Group& g : groups)
    if (g.comm != nullptr) groups_.push_back(g);
}

void CommMeter::start() {
  at_start_.clear();
  for (const Group& g : groups_) at_start_.push_back(g.comm->counters());
}

CommByGroup CommMeter::since_start() const {
  CommByGroup out;
  for (size_t i = 0; i < groups_.size(); ++i) {
    const comm::CommCounters d = groups_[i].comm->counters() - at_start_[i];
    const std::string kind(group_kind_name(groups_[i].kind));
    if (groups_[i].kind == GroupKind::Tp) {
      const TpTraffic t = tp_traffic(d);
      add(out["tp"], t.tp);
      add(out["sp"], t.sp);
    } else {
      add(out[kind], d);
    }
  }
  return out;
}

}  // namespace parallm
