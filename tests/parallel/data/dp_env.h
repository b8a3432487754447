// Shared state of the data-parallel MPI test binary (dp_dist_main.cpp): the
// world communicator (every rank is a dp rank), and helpers that run a short
// training job on the tiny test models, once as one process and once over
// the world, so tests compare the two.
#pragma once
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "model/config.h"
#include "parallel/data/dp_options.h"
#include "train/config/train_config.h"

namespace parallm::dp_test {

struct DpTestEnv {
  comm::Communicator* world = nullptr;  // check_collectives on, 60 s timeout
  std::string shard;                    // this rank's copy of the token shard
};
DpTestEnv& env();

struct RunResult {
  std::vector<double> losses;       // per step
  std::vector<double> grad_norms;   // per step
  std::vector<float> params;        // final flat parameters
  std::vector<double> exposed_ms;   // per step
  std::vector<int64_t> comm_bytes;  // per step
  TrainConfig config;               // the run's settings
};

// 20 steps, global batch 24 x 16 tokens, micro-batch 2: with dp ranks each
// rank accumulates 12 / dp micro-batches. group: null for one process.
// optimizer: --optimizer's name (SGD and momentum run at lr 0.1, so they move).
RunResult train_run(const ModelConfig& model, const DpOptions& dp, comm::Communicator* group,
                    int steps = 20, const std::string& optimizer = "adamw");

// One data-parallel layout over the world.
struct Layout {
  int zero;
  DpMode mode;
  bool overlap;
  std::string name() const;
};

// SGD runs 8 steps (at lr 0.1): a wrong gradient scale shows from the first
// update on, and the suite stays short; the others 20.
int steps_for(const std::string& optimizer);
// The one-process run of "gpt2" or "llama" under `optimizer`, computed once
// per binary.
const RunResult& reference_run(const std::string& family, const std::string& optimizer);
// got against the one-process ref, tensor by tensor (docs/testing.md).
void expect_dp_trajectory(const ModelConfig& m, const RunResult& ref, const RunResult& got,
                          const std::string& what);
// `layout` over the world (small buckets, so several overlap backward)
// follows reference_run(family, optimizer); with several ranks every step
// moved bytes.
void expect_layout_matches_one_process(const std::string& family, const Layout& layout,
                                       const std::string& optimizer = "adamw");

}  // namespace parallm::dp_test
