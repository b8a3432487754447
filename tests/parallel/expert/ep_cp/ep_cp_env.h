// Shared state of the MoE context-parallel and expert-tp MPI test binary
// (ep_cp_main.cpp): the world, a token shard, and a helper that trains one
// layout tp x cp x dp (ep folding dp x cp, experts whole or split over tp)
// and returns its trajectory in the form
// the expert-parallel checks compare (../ep_cases.h), every parameter
// assembled whole (tp shards gathered over tp, experts over ep).
#pragma once
#include <string>

#include "../ep_env.h"
#include "comm/communicator.h"
#include "model/config.h"

namespace parallm::ep_cp_test {

struct EpCpTestEnv {
  comm::Communicator* world = nullptr;  // check_collectives on, 60 s timeout
  std::string shard;
};
EpCpTestEnv& env();

struct CpMoeLayout {
  int cp = 1, ep = 1, tp = 1, dp = 1;  // all 1: the one-process run
  std::string comm = "ring";           // --cp-comm
  bool sp = false;
  int expert_tp = 1;  // --expert-tp: 1 or tp
  int zero = 0;       // ZeRO stage over dp (expert state over expert-dp)
  int micro = 2;      // micro-batch size (sequences)
  int global = 8;     // global batch (sequences): 4 micro-batches at dp 1
  std::string name() const;
};

// 20 steps of common/trajectory_config.h at the layout's batch; the layout
// must use the whole world (or be 1 x 1 x 1: every rank runs it alone).
ep_test::RunResult train_cp_layout(const ModelConfig& model, const CpMoeLayout& l, int steps = 20);

}  // namespace parallm::ep_cp_test
