// A whole training job as the CLI runs it: validate the run, build the model
// (random init from the seed, or an HF directory), train with progress
// output, evaluate, save. Everything is checked before memory is allocated.
#pragma once
#include <ostream>
#include <string>

#include "base/env.h"
#include "train/train_config.h"

namespace parallm {

struct TrainJobOptions {
  RunConfig run;
  std::string save_dtype = "F32";  // F32 or BF16
  int threads = 0;                 // 0: OpenMP default
};

// Returns the final training loss. Progress goes to `log`.
double run_train_job(const TrainJobOptions& opts, const LaunchEnv& env, std::ostream& log);

}  // namespace parallm
