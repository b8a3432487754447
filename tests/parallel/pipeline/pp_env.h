// Shared state of the pipeline-parallel MPI test binary (pp_dist_main.cpp):
// the world, a token shard, tiny 8-layer models (so pp 4 with 2 virtual
// stages still has a layer per chunk; vocabulary 1003, odd, so tp 2 pads it)
// and a helper that trains one layout pp x tp x dp with a schedule and m
// micro-batches of four 16-token sequences per dp rank, returning per-step
// losses and norms, this rank's parameters (gathered over tp) by name, and
// the pipeline measurements of the logging rank.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "model/config.h"
#include "nn/recompute.h"
#include "plan/memory_model.h"  // Precision
#include "train/config/train_config.h"

namespace parallm::pp_test {

struct PpTestEnv {
  comm::Communicator* world = nullptr;  // check_collectives on, 60 s timeout
  std::string shard;
};
PpTestEnv& env();

ModelConfig pp_gpt2();   // 4 heads, hidden 32, tied embeddings
ModelConfig pp_llama();  // 4 query heads, 2 key/value groups, untied head

struct PpLayout {
  int pp = 1, tp = 1, dp = 1;
  bool sp = false;
  int zero = 0;
  std::string schedule = "1f1b";
  int virtual_stages = 1;
  int micro_batches = 1;
  int64_t micro_batch_size = 4;
  int64_t seq_len = 16;
  std::string pp_layers;
  std::string shard;  // token shard (empty: env().shard)
  // Composition with the other features (pp_compose_dist.cpp).
  std::string optimizer = "adamw";
  Precision precision = Precision::FP32;
  Recompute recompute = Recompute::None;
  std::string name() const;
};

struct PpRunResult {
  bool ran = false;  // false on ranks outside the layout
  std::vector<double> losses, grad_norms;
  double val_loss = 0;  // after training, 2 micro-batches of the same shard
  std::map<std::string, std::vector<float>> params;  // this rank's, whole over tp
  // Logging rank only: per step.
  std::vector<double> bubble, bubble_replayed;
  std::vector<std::vector<int64_t>> peak_activation;  // [step][stage]
  TrainConfig config;                                 // the run's settings
};

// Runs on ranks [0, pp*tp*dp) of the world; pp == tp == dp == 1 runs the
// one-process model (forward_backward) on every rank without communication.
PpRunResult pp_train_run(const ModelConfig& model, const PpLayout& layout, int steps = 10);

}  // namespace parallm::pp_test
