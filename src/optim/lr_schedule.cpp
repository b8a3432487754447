#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "base/error.h"

namespace parallm {

WarmupStyle warmup_style_from_name(const std::string& s) {
  if (s == "llmc") return WarmupStyle::LlmC;
  if (s == "linear") return WarmupStyle::Linear;
  if (s == "log") return WarmupStyle::Log;
  PX_FAIL("unknown warmup style '{}' (expected llmc, linear or log)", s);
}

DecayStyle decay_style_from_name(const std::string& s) {
  if (s == "cosine") return DecayStyle::Cosine;
  if (s == "linear") return DecayStyle::Linear;
  if (s == "constant") return DecayStyle::Constant;
  PX_FAIL("unknown lr decay style '{}' (expected cosine, linear or constant)", s);
}

void LrScheduleConfig::validate() const {
  PX_CHECK(warmup >= 0, "warmup must be >= 0, got {}", warmup);
  PX_CHECK(min_lr_ratio >= 0 && min_lr_ratio <= 1, "min_lr_ratio must be in [0, 1], got {}",
           min_lr_ratio);
  PX_CHECK(warmup_start_ratio >= 0 && warmup_start_ratio <= 1,
           "warmup_start_ratio must be in [0, 1], got {}", warmup_start_ratio);
  PX_CHECK(decay_steps >= 0, "decay_steps must be >= 0 (0: the run's steps), got {}", decay_steps);
  PX_CHECK(warmup_style != WarmupStyle::Log || warmup >= 2,
           "a log warmup needs at least 2 warmup steps (log(warmup) divides), got {}", warmup);
}

double LrSchedule::at(int64_t step) const {
  const double s = static_cast<double>(step), w = static_cast<double>(warmup);
  if (step < warmup) {
    if (warmup_style == WarmupStyle::LlmC) return lr * (s + 1) / w;
    const double g = warmup_style == WarmupStyle::Log ? std::log(s + 1) / std::log(w) : s / w;
    return lr * (warmup_start_ratio + (1 - warmup_start_ratio) * g);
  }
  const double min_lr = lr * min_lr_ratio;
  double progress = (s - w) / static_cast<double>(std::max<int64_t>(1, total_steps - warmup));
  progress = std::min(progress, 1.0);
  switch (decay_style) {
    case DecayStyle::Constant:
      return lr;
    case DecayStyle::Linear:
      return min_lr + (lr - min_lr) * (1.0 - progress);
    case DecayStyle::Cosine:
      break;
  }
  return min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
}

}  // namespace parallm
