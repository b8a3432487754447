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
                    int steps) {
  TrainConfig t;
  t.train_files = {env().shard};
  t.seq_len = 16;
  t.micro_batch_size = 2;
  t.global_batch_size = 24;
  t.steps = steps;
  t.lr = 3e-3;
  t.warmup = 3;
  t.eps = 1e-6;  // see layout_invariance_dist.cpp
  t.clip_grad = 0.5;  // low enough that clipping is active in early steps
  t.dp = dp;
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
  using namespace parallm;
  ::testing::InitGoogleTest(&argc, argv);
  cpu::set_num_threads(1);
  return comm::run_mpi_job([&](comm::MpiRuntime& rt) {
    comm::CommOptions opts;
    opts.check_collectives = true;
    opts.timeout = std::chrono::seconds(60);
    auto world = rt.world(opts);
    auto& e = dp_test::env();
    e.world = world.get();
    e.shard = parallm::testing::write_test_shard("dp");
    int failed = parallm::testing::run_all_tests_on_every_rank(*world);
    std::filesystem::remove(e.shard);
    e.world = nullptr;
    return failed;
  });
}
