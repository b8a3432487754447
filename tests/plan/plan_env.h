// Shared state of the plan MPI test binary (plan_dist_main.cpp): the world
// communicator and this rank's copy of the token shard the memory-model
// layouts train on.
#pragma once
#include <string>

#include "comm/communicator.h"

namespace parallm::plan_test {

struct PlanTestEnv {
  comm::Communicator* world = nullptr;  // check_collectives on, 60 s timeout
  std::string shard;
};
PlanTestEnv& env();

}  // namespace parallm::plan_test
