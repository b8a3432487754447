// Learning-rate schedule: linear warmup then cosine decay to min_lr (llm.c
// convention: step s < warmup gets lr * (s + 1) / warmup). Its shape is the
// [lr_schedule] table (LrScheduleConfig); the peak is the optimizer's lr
// and the length the run's steps, so neither is stored twice.
#pragma once
#include <cstdint>

namespace parallm {

struct LrScheduleConfig {
  int64_t warmup = 10;        // --warmup: linear warmup steps
  double min_lr_ratio = 0.1;  // --min-lr-ratio: the final lr as a fraction of the peak

  void validate() const;
};

struct LrSchedule {
  double lr = 6e-4;
  int64_t warmup = 0;
  int64_t total_steps = 1;
  double min_lr_ratio = 0.1;  // min_lr = lr * min_lr_ratio

  double at(int64_t step) const;  // 0-based step
};

}  // namespace parallm
