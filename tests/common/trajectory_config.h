// The training run the layout tests follow, one process and every layout
// alike: 16-token sequences, micro-batch 2, global batch 24 (so every layout
// accumulates gradients), warmup 3, clipping at 0.5 (active in the early
// steps). SGD and momentum run at lr 0.1 so that a gradient off by a
// constant factor moves the weights visibly (Adam would hide it).
#pragma once
#include <string>

#include "train/config/train_config.h"

namespace parallm::testing {

// adam_eps: Adam's epsilon; the tp and pp tests raise it (tp_dist_main.cpp says why).
inline TrainConfig trajectory_config(const std::string& shard, int steps,
                                     const std::string& optimizer, double adam_eps) {
  TrainConfig t;
  t.data.train = {shard};
  t.training.seq_len = 16;
  t.training.micro_batch_size = 2;
  t.training.global_batch_size = 24;
  t.training.steps = steps;
  t.training.clip_grad = 0.5;
  t.lr_schedule.warmup = 3;
  t.optimizer.kind = optimizer_from_name(optimizer);
  t.optimizer.lr = optimizer == "sgd" || optimizer == "momentum" ? 0.1 : 3e-3;
  t.optimizer.eps = adam_eps;
  return t;
}

}  // namespace parallm::testing
