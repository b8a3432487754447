// Learning-rate schedule: linear warmup then cosine decay to min_lr (llm.c
// convention: step s < warmup gets lr * (s + 1) / warmup).
#pragma once
#include <cstdint>

namespace parallm {

struct LrSchedule {
  double lr = 6e-4;
  int64_t warmup = 0;
  int64_t total_steps = 1;
  double min_lr_ratio = 0.1;  // min_lr = lr * min_lr_ratio

  double at(int64_t step) const;  // 0-based step
};

}  // namespace parallm
