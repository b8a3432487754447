// CommCounters: what went through one Communicator on this rank, per op
// kind, counted by the Communicator itself (so every backend gets them and no
// caller has to remember). Callers snapshot counters() at the start of a
// period and subtract. Definitions (docs/comm.md, "Accounting"):
//   bytes: the payload this rank hands to the op, send_elems() x dtype size
//          (op_spec.h), not the wire traffic of the algorithm underneath;
//   ops: calls issued; blocked: wall time inside run(), start() and Work::wait;
//   peer_wait: the part of blocked a caller has shown was spent before the
//          peer posted its side (Communicator::note_peer_wait), i.e. skew
//          between ranks rather than bytes moving;
//   poll: wall time inside Work::test. Without a progress thread (MPI over
//          shared memory) bytes move inside these polls, so this is the
//          transfer work done from inside the caller's compute.
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
  int64_t peer_wait_ns = 0;  // of blocked_ns
  int64_t poll_ns = 0;

  double blocked_ms() const { return static_cast<double>(blocked_ns) * 1e-6; }
  double peer_wait_ms() const { return static_cast<double>(peer_wait_ns) * 1e-6; }
  double poll_ms() const { return static_cast<double>(poll_ns) * 1e-6; }
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
  void add_peer_wait(OpKind k, int64_t ns) {
    by_kind_[static_cast<size_t>(k)].peer_wait_ns += ns;
  }
  void add_poll(OpKind k, int64_t ns) { by_kind_[static_cast<size_t>(k)].poll_ns += ns; }

 private:
  std::array<OpTally, kNumOpKinds> by_kind_{};
};

}  // namespace parallm::comm
