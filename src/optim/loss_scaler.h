// Dynamic loss scaling for fp16 training, with Megatron-LM's rule
// (DynamicGradScaler): the loss gradient is multiplied by scale() so small
// gradients survive fp16; a step whose gradients hold Inf/NaN is skipped and
// counts against the hysteresis, and once `hysteresis` such steps have been
// seen the scale is multiplied by the backoff factor (never below the
// minimum); after `window` consecutive clean steps it grows by the growth
// factor and the hysteresis is restored. Pure state machine, no I/O.
#pragma once
#include <cstdint>

namespace parallm {

struct LossScalerConfig {
  double initial_scale = 65536.0;  // 2^16 (Megatron's default is 2^32)
  double min_scale = 1.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t window = 1000;   // --loss-scale-window: clean steps before growing
  int64_t hysteresis = 2;  // --hysteresis: overflowing steps tolerated before backing off
  void validate() const;
};

// What a checkpoint keeps of a LossScaler to continue it exactly.
struct LossScalerState {
  double scale = 1.0;
  int64_t growth_tracker = 0;
  int64_t hysteresis_tracker = 1;
};

class LossScaler {
 public:
  LossScaler() = default;
  explicit LossScaler(const LossScalerConfig& cfg);
  double scale() const { return scale_; }
  // After a step: found_inf says its gradients held Inf or NaN (the step was skipped).
  void update(bool found_inf);
  int64_t growth_tracker() const { return growth_tracker_; }
  int64_t hysteresis_tracker() const { return hysteresis_tracker_; }
  LossScalerState state() const { return {scale_, growth_tracker_, hysteresis_tracker_}; }
  void restore(const LossScalerState& s) {
    scale_ = s.scale;
    growth_tracker_ = s.growth_tracker;
    hysteresis_tracker_ = s.hysteresis_tracker;
  }

 private:
  LossScalerConfig cfg_;
  double scale_ = 1.0;
  int64_t growth_tracker_ = 0;
  int64_t hysteresis_tracker_ = 1;
};

}  // namespace parallm
