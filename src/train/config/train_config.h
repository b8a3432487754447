// The run configuration tree, one struct per concern, each validating its
// own values; the TOML tables and the flags map onto it one to one:
//   [model] ModelConfig (model/config.h)    [data] DataConfig
//   [training] TrainingConfig               [optimizer] OptimizerConfig
//   [lr_schedule] LrScheduleConfig          [parallelism] ParallelismConfig
//   [checkpoint] CheckpointConfig           [precision] PrecisionConfig
//   [logging] LoggingConfig                 [resilience] ResilienceConfig
// TrainConfig::validate adds the checks that relate two concerns (or the
// model), all before any allocation, naming the values.
#pragma once
#include <string>

#include "model/config.h"
#include "optim/lr_schedule.h"
#include "optim/optimizer_config.h"
#include "train/config/checkpoint_config.h"
#include "train/config/data_config.h"
#include "train/config/logging_config.h"
#include "train/config/parallelism_config.h"
#include "train/config/precision_config.h"
#include "train/config/resilience_config.h"
#include "train/config/training_config.h"

namespace parallm {

// Everything a training run needs besides the model's shape.
struct TrainConfig {
  DataConfig data;
  TrainingConfig training;
  OptimizerConfig optimizer;
  LrScheduleConfig lr_schedule;
  ParallelismConfig parallelism;
  CheckpointConfig checkpoint;
  PrecisionConfig precision;
  LoggingConfig logging;
  ResilienceConfig resilience;

  // Micro-batches per optimizer step on each data-parallel rank.
  int64_t grad_accum_steps() const {
    return training.global_batch_size / (training.micro_batch_size * parallelism.dp.dp);
  }
  // The schedule the run follows: peak lr from [optimizer], shape from [lr_schedule].
  LrSchedule schedule() const {
    const LrScheduleConfig& c = lr_schedule;
    return {optimizer.lr,        c.warmup,       c.decay_steps > 0 ? c.decay_steps : training.steps,
            c.min_lr_ratio,      c.warmup_style, c.decay_style,
            c.warmup_start_ratio};
  }
  // Every part, then how the parts meet the model and each other. world_size:
  // the ranks the job runs on (0: the layout's own pp x dp x tp).
  void validate(const ModelConfig& m, int world_size = 0) const;
};

struct RunConfig {
  ModelConfig model;
  TrainConfig train;
};

// Reads a TOML run file (train/config/run_config_toml.cpp) over `base`: the
// keys the file gives replace the base's values, the others stay (a resume
// passes the checkpoint's run as the base). Unknown tables and keys are
// errors (they are usually typos).
RunConfig load_run_config(const std::string& path, const RunConfig& base = {});

}  // namespace parallm
