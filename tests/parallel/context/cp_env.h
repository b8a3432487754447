// Shared state of the context-parallel MPI test binary (cp_dist_main.cpp):
// the world, a token shard, and a helper that trains one layout cp x tp x dp
// (common/trajectory_config.h) and returns its losses, grad norms, cp
// traffic and every parameter assembled whole, by name.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "common/test_models.h"
#include "model/config.h"
#include "nn/precision.h"
#include "nn/recompute.h"
#include "train/config/train_config.h"

namespace parallm::cp_test {

struct CpTestEnv {
  comm::Communicator* world = nullptr;  // check_collectives on, 60 s timeout
  std::string shard;
};
CpTestEnv& env();

struct CpLayout {
  int cp = 1, tp = 1, dp = 1, pp = 1;
  std::string comm = "ring";  // --cp-comm
  int ulysses = 0;            // --ulysses-degree (a2a+ring)
  bool sp = false;
  int zero = 0;
  int64_t seq_len = 16;
  // Micro-batch 2: 4 micro-batches per step at dp 1 (accumulation), few
  // enough that 4 oversubscribed ranks finish 20 steps in seconds.
  int64_t global_batch = 8;
  Recompute recompute = Recompute::None;
  // Packed documents: --reset-attention-mask --reset-position-ids
  // --eod-mask-loss with EOD kPackedEod.
  bool packed = false;
  Precision precision = Precision::FP32;  // bf16 / fp16 GEMMs (default loss scaling)
  std::string schedule = "1f1b";          // under pp: gpipe, 1f1b, interleaved, zb
  int virtual_stages = 1;                 // interleaved
  std::string name() const;
};

// The test shard's most frequent token (about one in 13): as the EOD it
// cuts every 16-token window into one to three documents.
constexpr int32_t kPackedEod = 480;

struct CpRunResult {
  std::vector<double> losses, grad_norms, cp_comm_ms;
  double val_loss = 0.0;  // evaluate() after the run, on 2 validation batches
  std::vector<int64_t> cp_bytes;
  std::vector<double> loss_scales;                   // per step (fp16)
  std::vector<bool> skipped;                         // per step
  std::map<std::string, std::vector<float>> params;  // name -> full tensor (a stage's under pp)
  TrainConfig config;                                // the run's settings
};

// Runs on the ranks [0, pp*dp*cp*tp) of the world (others return an empty
// result); a 1 x 1 x 1 layout runs on every rank without communication.
CpRunResult cp_train_run(const ModelConfig& model, const CpLayout& layout, int steps = 20);

}  // namespace parallm::cp_test
