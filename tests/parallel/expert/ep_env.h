// Shared state of the expert-parallel MPI test binary (ep_dist_main.cpp):
// the world (every rank a dp rank), a token shard, the tiny MoE models, and a
// helper that trains one layout and returns its trajectory with the
// parameters assembled whole (experts gathered over ep), by name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "model/config.h"
#include "nn/precision.h"
#include "train/config/train_config.h"

namespace parallm::ep_test {

struct EpTestEnv {
  comm::Communicator* world = nullptr;  // check_collectives on, 60 s timeout
  std::string shard;
};
EpTestEnv& env();

struct RunResult {
  std::vector<double> losses, grad_norms, aux_losses, z_losses, dropped;
  std::vector<double> ep_comm_ms;  // blocked in the ep all-to-alls (0 on one process)
  std::vector<std::vector<double>> expert_loads;
  std::vector<float> params;  // the one-process flat layout
  // Under pp: which elements of `params` this rank's stage holds (1) and
  // how many elements no stage of its pipeline holds (must be 0). Empty /
  // 0 without pp (every element held).
  std::vector<uint8_t> held;
  int64_t unheld_by_pipeline = 0;
  std::vector<float> expert_bias;  // (L, E) after the last step (empty: no expert bias)
  ModelConfig model;               // what ran
  TrainConfig config;
};

// A layout of the world: tp x dp = world ranks, ep folding dp.
struct Layout {
  int ep = 1;
  int zero = 0;     // ZeRO stage over dp (expert state over expert-dp)
  int tp = 1;       // experts whole on every tp rank (expert tp 1)
  bool sp = false;  // sequence parallelism (with tp > 1)
  int micro = 0;    // micro-batch size (0: the trajectory config's 2)
  int global = 0;   // global batch in sequences (0: the trajectory config's 24)
  int pp = 1;       // pipeline stages (1F1B); tp * pp * dp = world ranks
  Precision precision = Precision::FP32;  // of the GEMMs (--precision)
};

// 20 steps of common/trajectory_config.h (global batch 24 x 16, micro 2).
// ep 0: one process (no group); else dp = world, ep as given, ZeRO stage
// `zero` over dp (expert state over expert-dp).
RunResult train_run(const ModelConfig& model, int ep, int steps = 20, int zero = 0);
// The same on the layout given; tp * pp * dp must be the world size.
RunResult train_layout(const ModelConfig& model, const Layout& layout, int steps = 20);

}  // namespace parallm::ep_test
