// The one-process training loop: global batch -> micro-batches (gradient
// accumulation) -> forward/backward -> global-norm clip -> AdamW with the
// warmup+cosine schedule -> metrics. The loss is normalised by the global
// token count so accumulation and (later) data parallelism give the same
// gradients as one big batch.
#pragma once
#include <functional>
#include <memory>

#include "data/data_loader.h"
#include "model/transformer.h"
#include "optim/adamw.h"
#include "optim/lr_schedule.h"
#include "train/metrics.h"
#include "train/train_config.h"

namespace parallm {

struct StepStats {
  int64_t step = 0;
  double loss = 0.0;
  double lr = 0.0;
  double grad_norm = 0.0;
  double step_seconds = 0.0;
  double tokens_per_s = 0.0;
  double tflops = 0.0;
  double mfu = 0.0;
};

class Trainer {
 public:
  // The model must already hold its initial parameters.
  Trainer(Transformer& model, const TrainConfig& cfg, Allocator& alloc, double peak_flops);
  StepStats train_step(int64_t step);
  // Mean loss over eval_batches micro-batches of the validation files.
  double evaluate();
  // Runs cfg.steps steps; on_step is called after each (progress, logging).
  void run(const std::function<void(const StepStats&)>& on_step);
  const AdamW& optimizer() const { return opt_; }

 private:
  Transformer& model_;
  TrainConfig cfg_;
  Allocator& alloc_;
  double peak_flops_;
  double flops_per_token_;
  DataLoader train_data_;
  std::unique_ptr<DataLoader> val_data_;
  AdamW opt_;
  LrSchedule sched_;
  MetricsWriter metrics_;
};

}  // namespace parallm
