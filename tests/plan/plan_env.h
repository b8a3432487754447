// Shared state of the plan MPI test binary (plan_dist_main.cpp): the world
// communicator, this rank's copy of the token shard the memory-model
// layouts train on, and the batch geometry and memory-model query those
// layouts share (memory_model_dist.cpp, moe_memory_dist.cpp).
#pragma once
#include <string>

#include "comm/communicator.h"
#include "optim/optimizer_config.h"
#include "plan/memory_model.h"

namespace parallm::plan_test {

struct PlanTestEnv {
  comm::Communicator* world = nullptr;  // check_collectives on, 60 s timeout
  std::string shard;
};
PlanTestEnv& env();

inline constexpr int64_t kSeq = 16, kMicro = 2, kAccum = 2;

// The memory-model query for a layout trained at that geometry (this
// implementation's activations). c: a test case with tp, dp, sp, zero,
// precision, recompute and optimizer (name); ep is the case's or 1.
template <class Case>
MemoryQuery layout_query(const Case& c, const ModelConfig& model, int ep = 1) {
  MemoryQuery q;
  q.model = model;
  q.seq_len = kSeq;
  q.micro_batch = kMicro;
  q.micro_batches = kAccum;
  q.tp = c.tp;
  q.dp = c.dp;
  q.ep = ep;
  q.sequence_parallel = c.sp;
  q.zero = c.zero;
  q.precision = c.precision;
  q.recompute = c.recompute;
  q.optimizer = optimizer_from_name(c.optimizer);
  q.activation_model = ActivationModel::Parallm;
  return q;
}

// What the memory model predicts for that layout.
template <class Case>
MemoryBreakdown predict_layout(const Case& c, const ModelConfig& model, int ep = 1) {
  return estimate_memory(layout_query(c, model, ep));
}

}  // namespace parallm::plan_test
