// Shared state of the tensor-parallel MPI test binary (tp_dist_main.cpp):
// the world, a token shard, the tp test models (common/test_models.h) and a
// helper that trains one layout (common/trajectory_config.h) and returns its
// losses and its parameters assembled whole, by name.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "common/test_models.h"
#include "model/config.h"
#include "nn/recompute.h"
#include "optim/loss_scaler.h"
#include "parallel/data/dp_options.h"
#include "plan/memory_model.h"
#include "train/config/train_config.h"

namespace parallm::tp_test {

struct TpTestEnv {
  comm::Communicator* world = nullptr;  // check_collectives on, 60 s timeout
  std::string shard;
};
TpTestEnv& env();

using testing::tp_gpt2;
using testing::tp_llama;

struct TpLayout {
  int tp = 1, dp = 1;
  bool sp = false;
  int zero = 0;
  std::string optimizer = "adamw";        // --optimizer (SGD and momentum run at lr 0.1)
  Precision precision = Precision::FP32;  // mixed precision (tests/precision too)
  Recompute recompute = Recompute::None;
  LossScalerConfig loss_scale;  // fp16 only
  std::string name() const;
};

struct TpRunResult {
  std::vector<double> losses, grad_norms;
  std::vector<int64_t> tp_bytes, sp_bytes;           // per step
  std::vector<double> tp_comm_ms;                    // per step, measured
  std::vector<double> loss_scales;                   // per step (fp16)
  std::vector<bool> skipped;                         // per step
  std::map<std::string, std::vector<float>> params;  // name -> full tensor
  TrainConfig config;                                // the run's settings
};

// Runs on the ranks [0, tp*dp) of the world (others return an empty result);
// a 1 x 1 layout runs on every rank without communication.
TpRunResult tp_train_run(const ModelConfig& model, const TpLayout& layout, int steps = 20);

}  // namespace parallm::tp_test
