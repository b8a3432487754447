// A whole training job as the CLI runs it: validate the run, build the model
// (random init from the seed, or an HF directory), resume from a checkpoint
// (--load / --resume, any layout), train with progress output and
// checkpoints, evaluate, save an HF directory (--save-hf). Everything is
// checked before memory is allocated.
#pragma once
#include <functional>
#include <ostream>
#include <string>

#include "base/env.h"
#include "comm/communicator.h"
#include "tensor/memory_resource.h"
#include "train/train_config.h"

namespace parallm {

struct TrainJobOptions {
  RunConfig run;
  std::string save_dtype = "F32";  // F32 or BF16
  int threads = 0;                 // 0: OpenMP default
  // Fault tests: called on each rank after it wrote its checkpoint shard.
  std::function<void(int rank, const std::string& shard_path)> checkpoint_shard_hook;
};

// Returns the final training loss (NaN when a resumed run was already at
// its last step: nothing is trained). Progress goes to `log` (rank 0 only).
// world: every rank of the job, or null for a one-process run.
// The model's device when it has memory and kernels of its own (a GPU,
// train/cuda/cuda_train_job.h): its memory, whose allocator finds the
// device's stream (ops/stream.h), its name, and its datasheet peak for MFU
// (0: none known, --peak-tflops or the measured steps stand in).
struct JobDevice {
  MemoryResource* memory = nullptr;
  std::string name;
  double peak_flops = 0.0;
};

// world: the job's ranks (null: one process); on a device, a group that
// moves device buffers (NCCL). device: null for --device cpu or test.
double run_train_job(const TrainJobOptions& opts, const LaunchEnv& env, std::ostream& log,
                     comm::Communicator* world = nullptr, const JobDevice* device = nullptr);

// The checks that need no model or memory (config, dp layout against the
// world size); run on every rank before MPI starts.
RunConfig checked_run_config(const TrainJobOptions& opts, int world_size);

// The checkpoint a run resumes from: --load DIR, or --save DIR under
// --resume when it holds a checkpoint; empty: a fresh start.
std::string resume_source(const CheckpointConfig& c);

}  // namespace parallm
