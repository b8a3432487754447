// Entry of the serving MPI test binary (label dist): one thread per rank, a
// checking world communicator, the suite on every rank (rank 0 reports),
// exit non-zero when any rank failed.
#include "common/mpi_gtest.h"
#include "serve_dist_env.h"

namespace parallm::serve {

ServeDistEnv& dist_env() {
  static ServeDistEnv e;
  return e;
}

}  // namespace parallm::serve

int main(int argc, char** argv) {
  return parallm::testing::run_training_dist_tests(argc, argv, parallm::serve::dist_env(), "serve");
}
