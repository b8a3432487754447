// Shared pieces of the MPI test binaries: running the gtest suite on every
// rank (rank 0 prints the report, the others only their failures, the result
// is the worst over ranks) and the small token shard the data- and
// tensor-parallel tests train on.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/mpi/mpi_runtime.h"
#include "data/byte_tokenizer.h"
#include "data/token_shard.h"
#include "kernels/cpu/threads.h"
#include "rank_failure_printer.h"

namespace parallm::testing {

inline int run_all_tests_on_every_rank(comm::Communicator& world) {
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (world.rank() != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(world.rank()));
  }
  int failed = RUN_ALL_TESTS();
  world.all_reduce(&failed, 1, DType::I32, comm::ReduceOp::Max);
  return failed;
}

// English text with token ids spread over a 1000-token vocabulary; every
// rank writes its own copy (named by tag and pid) and removes it after.
inline std::string write_test_shard(const std::string& tag) {
  std::string text;
  for (int i = 0; i < 30; ++i)
    text += "it was the best of times, it was the worst of times; " + std::to_string(i * 7919) +
            " the age of wisdom, the age of foolishness. ";
  std::vector<int32_t> tokens = ByteTokenizer::encode(text);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<int32_t>((tokens[i] * 7 + i % 3 * 256) % 1000);
  auto p = std::filesystem::temp_directory_path() /
           ("parallm_" + tag + "_" + std::to_string(getpid()) + ".bin");
  write_token_shard(p.string(), tokens);
  return p.string();
}

// main() of the dp and tp test binaries: one thread per rank, a checking
// world communicator, the training shard in env.shard, the suite on every
// rank. Env has `comm::Communicator* world` and `std::string shard`.
template <class Env>
int run_training_dist_tests(int argc, char** argv, Env& env, const std::string& tag) {
  ::testing::InitGoogleTest(&argc, argv);
  cpu::set_num_threads(1);
  return comm::run_mpi_job([&](comm::MpiRuntime& rt) {
    comm::CommOptions opts;
    opts.check_collectives = true;
    opts.timeout = std::chrono::seconds(60);
    auto world = rt.world(opts);
    env.world = world.get();
    env.shard = write_test_shard(tag);
    int failed = run_all_tests_on_every_rank(*world);
    std::filesystem::remove(env.shard);
    env.world = nullptr;
    return failed;
  });
}

}  // namespace parallm::testing
