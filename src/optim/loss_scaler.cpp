#include "optim/loss_scaler.h"

#include <algorithm>

#include "base/error.h"

namespace parallm {

void LossScalerConfig::validate() const {
  PX_CHECK(initial_scale > 0, "--initial-loss-scale must be positive, got {}", initial_scale);
  PX_CHECK(min_scale > 0 && min_scale <= initial_scale,
           "--min-loss-scale ({}) must be positive and at most --initial-loss-scale ({})",
           min_scale, initial_scale);
  PX_CHECK(window >= 1, "--loss-scale-window must be >= 1, got {}", window);
  PX_CHECK(hysteresis >= 1, "--hysteresis must be >= 1, got {}", hysteresis);
  PX_CHECK(growth_factor > 1 && backoff_factor > 0 && backoff_factor < 1,
           "loss scale growth factor ({}) must be > 1 and backoff ({}) in (0, 1)", growth_factor,
           backoff_factor);
}

LossScaler::LossScaler(const LossScalerConfig& cfg)
    : cfg_(cfg), scale_(cfg.initial_scale), hysteresis_tracker_(cfg.hysteresis) {
  cfg_.validate();
}

void LossScaler::update(bool found_inf) {
  if (found_inf) {
    growth_tracker_ = 0;
    hysteresis_tracker_ -= 1;
    if (hysteresis_tracker_ <= 0) scale_ = std::max(scale_ * cfg_.backoff_factor, cfg_.min_scale);
    return;
  }
  growth_tracker_ += 1;
  if (growth_tracker_ == cfg_.window) {
    growth_tracker_ = 0;
    hysteresis_tracker_ = cfg_.hysteresis;
    scale_ *= cfg_.growth_factor;
  }
}

}  // namespace parallm
