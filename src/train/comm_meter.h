// One step's communication by group kind, read from the counters every
// Communicator keeps (comm/comm_counters.h): a snapshot of each group the
// step uses at its start, the differences at its end. Keys are the groups'
// kinds ("dp", "pp", "embedding"), the tp kind split into "tp" and "sp" by
// op kind (tp_traffic, parallel/tensor/tp_group.h). Nothing is counted by hand.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace parallm {

struct GroupComm {
  int64_t bytes = 0;  // payload this rank handed to the group's ops
  int64_t ops = 0;
  double blocked_ms = 0.0;  // inside blocking calls and Work::wait: exposed
};
using CommByGroup = std::map<std::string, GroupComm>;

class CommMeter {
 public:
  CommMeter() = default;
  // The groups a step communicates on; nulls and repeats are dropped.
  explicit CommMeter(const std::vector<comm::Communicator*>& groups);
  void start();
  CommByGroup since_start() const;

 private:
  std::vector<comm::Communicator*> groups_;
  std::vector<comm::CommCounters> at_start_;
};

}  // namespace parallm
