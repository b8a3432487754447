// Entry of the data-parallel MPI test binary (label dist): one MpiRuntime,
// a token shard per rank, gtest output from rank 0 plus every rank's
// failures prefixed with its rank; exits non-zero when any rank failed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "comm/mpi/mpi_runtime.h"
#include "common/mpi_gtest.h"
#include "common/trajectory_config.h"
#include "dp_env.h"
#include "kernels/cpu/threads.h"
#include "model/transformer.h"
#include "train/trainer.h"

namespace parallm::dp_test {

DpTestEnv& env() {
  static DpTestEnv e;
  return e;
}

RunResult train_run(const ModelConfig& model, const DpOptions& dp, comm::Communicator* group,
                    int steps, const std::string& optimizer) {
  TrainConfig t = testing::trajectory_config(env().shard, steps, optimizer,
                                             1e-6);  // eps: see
                                                     // layout_invariance_dist.cpp
  t.parallelism.dp = dp;
  Allocator alloc;
  Transformer m(model, alloc);
  m.params().init_random(7);
  Trainer tr(m, t, alloc, 0.0, group);
  RunResult r;
  tr.run([&](const StepStats& s) {
    r.losses.push_back(s.loss);
    r.grad_norms.push_back(s.grad_norm);
    r.exposed_ms.push_back(s.exposed_comm_ms);
    r.comm_bytes.push_back(s.comm_bytes);
  });
  r.params = tr.data_parallel().full_parameters();
  r.config = t;
  return r;
}
}  // namespace parallm::dp_test

int main(int argc, char** argv) {
  return parallm::testing::run_training_dist_tests(argc, argv, parallm::dp_test::env(), "dp");
}
