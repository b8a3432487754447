#include "comm/comm_counters.h"

namespace parallm::comm {

OpTally& OpTally::operator+=(const OpTally& o) {
  ops += o.ops;
  bytes += o.bytes;
  blocked_ns += o.blocked_ns;
  peer_wait_ns += o.peer_wait_ns;
  poll_ns += o.poll_ns;
  return *this;
}

OpTally OpTally::operator-(const OpTally& o) const {
  return {ops - o.ops, bytes - o.bytes, blocked_ns - o.blocked_ns,
          peer_wait_ns - o.peer_wait_ns, poll_ns - o.poll_ns};
}

OpTally CommCounters::total() const {
  OpTally t;
  for (const OpTally& k : by_kind_) t += k;
  return t;
}

CommCounters CommCounters::operator-(const CommCounters& earlier) const {
  CommCounters d;
  for (size_t k = 0; k < kNumOpKinds; ++k) d.by_kind_[k] = by_kind_[k] - earlier.by_kind_[k];
  return d;
}

CommCounters& CommCounters::operator+=(const CommCounters& o) {
  for (size_t k = 0; k < kNumOpKinds; ++k) by_kind_[k] += o.by_kind_[k];
  return *this;
}

void CommCounters::add_op(OpKind k, int64_t bytes) {
  OpTally& t = by_kind_[static_cast<size_t>(k)];
  ++t.ops;
  t.bytes += bytes;
}

}  // namespace parallm::comm
