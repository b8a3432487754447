// `parallm train --device cuda`: one process trains on one GPU with
// CudaTransformer (model/cuda), reading the same data in the same global
// order, with the same schedule, clipping, optimizer, progress lines and
// JSONL metrics as the CPU job, and --save-hf at the end. What the GPU path
// does not run yet (MoE, LoRA, parallel layouts, checkpoints, dropout,
// fp16, recompute) is refused before any memory is allocated. A build
// without nvcc links cuda_train_job_absent.cpp, which says so.
#pragma once
#include <ostream>

#include "base/env.h"
#include "train/train_job.h"

namespace parallm {

// Returns the final training loss.
double run_cuda_train_job(const TrainJobOptions& opts, const LaunchEnv& env, std::ostream& log);

}  // namespace parallm
