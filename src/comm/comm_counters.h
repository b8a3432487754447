// CommCounters: what went through one Communicator on this rank, per op
// kind, counted by the Communicator itself (so every backend gets them and no
// caller has to remember). Callers snapshot counters() at the start of a
// period and subtract. Definitions (docs/comm.md, "Accounting"):
//   bytes: the payload this rank hands to the op, send_elems() x dtype size
//          (op_spec.h), not the wire traffic of the algorithm underneath;
//   ops: calls issued; blocked: wall time inside run(), start() and Work::wait.
#pragma once
#include <array>
#include <cstdint>

#include "comm/op_spec.h"

namespace parallm::comm {

inline constexpr size_t kNumOpKinds = static_cast<size_t>(OpKind::Recv) + 1;

struct OpTally {
  int64_t ops = 0;
  int64_t bytes = 0;
  int64_t blocked_ns = 0;  // integral, so differences of snapshots are exact

  double blocked_ms() const { return static_cast<double>(blocked_ns) * 1e-6; }
  OpTally& operator+=(const OpTally& o);
  OpTally operator-(const OpTally& o) const;
  bool operator==(const OpTally&) const = default;
};

class CommCounters {
 public:
  const OpTally& of(OpKind k) const { return by_kind_[static_cast<size_t>(k)]; }
  OpTally total() const;
  // This minus an earlier snapshot of the same communicator.
  CommCounters operator-(const CommCounters& earlier) const;
  CommCounters& operator+=(const CommCounters& o);

  void add_op(OpKind k, int64_t bytes);
  void add_blocked(OpKind k, int64_t ns) { by_kind_[static_cast<size_t>(k)].blocked_ns += ns; }

 private:
  std::array<OpTally, kNumOpKinds> by_kind_{};
};

}  // namespace parallm::comm
