// Entry of the data-parallel MPI test binary (label dist): one MpiRuntime,
// a token shard per rank, gtest output from rank 0 plus every rank's
// failures prefixed with its rank; exits non-zero when any rank failed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "comm/mpi/mpi_runtime.h"
#include "data/byte_tokenizer.h"
#include "data/token_shard.h"
#include "dp_env.h"
#include "kernels/cpu/threads.h"
#include "model/transformer.h"
#include "train/trainer.h"
#include "../common/rank_failure_printer.h"

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

namespace {
using testing::RankFailurePrinter;

std::string write_shard() {
  std::string text;
  for (int i = 0; i < 30; ++i)
    text += "it was the best of times, it was the worst of times; " + std::to_string(i * 7919) +
            " the age of wisdom, the age of foolishness. ";
  std::vector<int32_t> tokens = ByteTokenizer::encode(text);
  for (size_t i = 0; i < tokens.size(); ++i)  // spread ids over the 1000-token vocabulary
    tokens[i] = static_cast<int32_t>((tokens[i] * 7 + i % 3 * 256) % 1000);
  auto p = std::filesystem::temp_directory_path() /
           ("parallm_dp_" + std::to_string(getpid()) + ".bin");
  write_token_shard(p.string(), tokens);
  return p.string();
}
}  // namespace

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
    e.shard = dp_test::write_shard();
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    if (world->rank() != 0) {
      delete listeners.Release(listeners.default_result_printer());
      listeners.Append(new dp_test::RankFailurePrinter(world->rank()));
    }
    int failed = RUN_ALL_TESTS();
    world->all_reduce(&failed, 1, DType::I32, comm::ReduceOp::Max);
    std::filesystem::remove(e.shard);
    e.world = nullptr;
    return failed;
  });
}
