// Entry of the plan MPI test binary (label dist): the memory model held
// against the allocator on real layouts; gtest output from rank 0 plus
// every rank's failures; exits non-zero when any rank failed.
#include "common/mpi_gtest.h"
#include "plan_env.h"

namespace parallm::plan_test {

PlanTestEnv& env() {
  static PlanTestEnv e;
  return e;
}

}  // namespace parallm::plan_test

int main(int argc, char** argv) {
  return parallm::testing::run_training_dist_tests(argc, argv, parallm::plan_test::env(), "plan");
}
