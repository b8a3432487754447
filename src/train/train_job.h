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
#include "device/job_device.h"
#include "checkpoint/checkpoint_save.h"
#include "train/config/train_config.h"

namespace parallm {

struct TrainJobOptions {
  RunConfig run;
  std::string save_dtype = "F32";  // F32 or BF16
  int threads = 0;                 // 0: OpenMP default
  // Fault tests: called on each rank after it wrote its checkpoint shard.
  CheckpointSaveOptions::ShardHook checkpoint_shard_hook;
};

// Returns the final training loss (NaN when a resumed run was already at
// its last step: nothing is trained). Progress goes to `log` (rank 0 only).
// world: every rank of the job, or null for a one-process run. device: where
// the model lives (device/cuda/open_job_device.h), its world replacing
// `world`; null: the host or the test device as --device says (a GPU is
// opened by the caller).
double run_train_job(const TrainJobOptions& opts, const LaunchEnv& env, std::ostream& log,
                     comm::Communicator* world = nullptr, JobDevice* device = nullptr);

// The checks that need no model or memory (config, dp layout against the
// world size); run on every rank before MPI starts.
RunConfig checked_run_config(const TrainJobOptions& opts, int world_size);

// The checkpoint a run resumes from: --load DIR, or --save DIR under
// --resume when it holds a checkpoint; empty: a fresh start.
std::string resume_source(const CheckpointConfig& c);

}  // namespace parallm
