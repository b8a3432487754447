#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace parallm {

double LrSchedule::at(int64_t step) const {
  if (step < warmup) return lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  double min_lr = lr * min_lr_ratio;
  double progress = static_cast<double>(step - warmup) /
                    static_cast<double>(std::max<int64_t>(1, total_steps - warmup));
  progress = std::min(progress, 1.0);
  return min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
}

}  // namespace parallm
