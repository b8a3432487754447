// Entry of the data-parallel MPI test binary (label dist): one MpiRuntime,
// a token shard per rank, gtest output from rank 0 plus every rank's
// failures prefixed with its rank; exits non-zero when any rank failed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "comm/mpi/mpi_runtime.h"
#include "dp_env.h"
#include "kernels/cpu/threads.h"
#include "model/transformer.h"
#include "train/trainer.h"
#include "../common/mpi_gtest.h"

namespace parallm::dp_test {

DpTestEnv& env() {
  static DpTestEnv e;
  return e;
}

RunResult train_run(const ModelConfig& model, const DpOptions& dp, comm::Communicator* group,
                    int steps, const std::string& optimizer) {
  TrainConfig t;
  t.data.train = {env().shard};
  t.training.seq_len = 16;
  t.training.micro_batch_size = 2;
  t.training.global_batch_size = 24;
  t.training.steps = steps;
  t.optimizer.lr = 3e-3;
  t.lr_schedule.warmup = 3;
  t.optimizer.eps = 1e-6;  // see layout_invariance_dist.cpp
  t.training.clip_grad = 0.5;  // low enough that clipping is active in early steps
  t.parallelism.dp = dp;
  t.optimizer.kind = optimizer_from_name(optimizer);
  if (optimizer == "sgd" || optimizer == "momentum") t.optimizer.lr = 0.1;
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
  return r;
}


}  // namespace parallm::dp_test

int main(int argc, char** argv) {
  return parallm::testing::run_training_dist_tests(argc, argv, parallm::dp_test::env(), "dp");
}
