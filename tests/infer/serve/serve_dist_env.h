// The serving MPI tests' shared state: the world communicator (set by
// serve_dist_main.cpp for the run of the suite). shard: a token file that
// run_training_dist_tests writes; these tests do not read it.
#pragma once
#include <string>

#include "comm/communicator.h"

namespace parallm::serve {

struct ServeDistEnv {
  comm::Communicator* world = nullptr;
  std::string shard;
};

ServeDistEnv& dist_env();

}  // namespace parallm::serve
