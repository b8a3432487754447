// One step's communication by group kind, read from the counters every
// Communicator keeps (comm/comm_counters.h): a snapshot of each group at the
// step's start, the differences at its end. The kind of a group is the role
// it was handed over in (the Trainer's dp group, the model's tp group, ...),
// keyed by the grid's GroupKind name; the tp group is split into "tp" and
// "sp" by op kind (tp_traffic, parallel/tensor/tp_group.h).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "grid/group_kind.h"

namespace parallm {

struct GroupComm {
  int64_t bytes = 0;  // payload this rank handed to the group's ops
  int64_t ops = 0;
  double blocked_ms = 0.0;  // inside blocking calls and Work::wait: exposed
  double peer_wait_ms = 0.0;  // of blocked_ms, before the peer had posted (skew)
  double send_ms = 0.0;       // of blocked_ms, in sends (waiting for the receiver to take them)
  double poll_ms = 0.0;       // inside Work::test, from within compute
};
using CommByGroup = std::map<std::string, GroupComm>;

class CommMeter {
 public:
  CommMeter() = default;
  struct Group {
    GroupKind kind;
    comm::Communicator* comm;  // null: not used by this run
  };
  // The groups a step communicates on; null ones are dropped.
  explicit CommMeter(const std::vector<Group>& groups);
  void start();
  CommByGroup since_start() const;

 private:
  std::vector<Group> groups_;
  std::vector<comm::CommCounters> at_start_;
};

}  // namespace parallm
