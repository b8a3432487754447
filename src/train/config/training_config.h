// TrainingConfig: the [training] table: how long the run is, the shape of
// a step's batch (global batch = micro-batches x accumulation x dp), the
// seed behind initialisation, data order and dropout, the gradient clip and
// activation recomputation. Clipping lives here, not in the optimizer: the
// step's gradient finalisation applies it to the global norm over every
// group before any optimizer runs, the same for all of them.
#pragma once
#include <cstdint>

#include "plan/memory_model.h"  // Recompute

namespace parallm {

struct TrainingConfig {
  int64_t steps = 100;
  int64_t micro_batch_size = 4;
  int64_t global_batch_size = 4;
  int64_t seq_len = 128;
  uint64_t seed = 1234;
  double clip_grad = 1.0;  // global gradient-norm clip (0: off)
  Recompute recompute = Recompute::None;

  void validate() const;
};

}  // namespace parallm
