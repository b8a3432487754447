// TrainingConfig: the [training] table: how long the run is, the shape of
// a step's batch (global batch = micro-batches x accumulation x dp), the
// seed behind initialisation, data order and dropout, the gradient clip and
// activation recomputation. Clipping lives here, not in the optimizer: the
// step's gradient finalisation applies it to the global norm over every
// group before any optimizer runs, the same for all of them.
#pragma once
#include <cstdint>

#include <string>

#include "nn/recompute.h"
#include "nn/verify_hooks.h"    // InjectedFault
#include "plan/memory_model.h"
#include "tensor/dtype.h"       // Device

namespace parallm {

struct TrainingConfig {
  int64_t steps = 100;
  int64_t micro_batch_size = 4;
  int64_t global_batch_size = 4;
  int64_t seq_len = 128;
  uint64_t seed = 1234;
  double clip_grad = 1.0;  // global gradient-norm clip (0: off)
  Recompute recompute = Recompute::None;
  // Where the model trains (--device): the CPU, or one GPU per process
  // (docs/cuda.md; one process and the GPT-2 family so far).
  Device device = Device::CPU;
  // `parallm verify` only (docs/verify.md), never saved with a run: a
  // directory each rank writes its layer outputs to (--dump-ops), and a
  // planted bug that exists only to test verify (--inject-fault).
  std::string dump_ops_dir;
  InjectedFault inject_fault = InjectedFault::None;

  void validate() const;
};

// "cpu" / "cuda"; anything else throws naming the choices.

}  // namespace parallm
