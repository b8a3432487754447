// Delayed and current FP8 scaling (see fp8_scaling.h).
#include "nn/fp8_scaling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"

namespace parallm {
namespace {

float scaled_max(Fp8Format f, int margin) { return std::ldexp(fp8_max(f), -margin); }

// fp8_max 2^-margin / amax, held finite: an amax below ~1e-36 would give
// infinity (and a zero scale_inv), so the largest float stands in, as
// Transformer Engine clamps it.
float scale_from_amax(float amax, Fp8Format f, int margin) {
  return std::min(scaled_max(f, margin) / amax, std::numeric_limits<float>::max());
}

}  // namespace

AmaxAlgo amax_algo_from_name(const std::string& s) {
  if (s == "max") return AmaxAlgo::Max;
  if (s == "most_recent") return AmaxAlgo::MostRecent;
  PX_FAIL("unknown fp8 amax algorithm '{}' (expected max or most_recent)", s);
}

void DelayedScalingConfig::validate() const {
  PX_CHECK(history_len >= 1, "fp8 amax history length must be at least 1, got {}", history_len);
  PX_CHECK(margin >= 0, "fp8 margin must be non-negative, got {}", margin);
}

DelayedScale::DelayedScale(const DelayedScalingConfig& cfg)
    : cfg_(cfg), history_(static_cast<size_t>(std::max(cfg.history_len, 1)), 0.0f) {
  cfg_.validate();
}

void DelayedScale::record(float amax) {
  float& now = history_[0];
  // NaN wins, so that update() sees it and keeps the scale.
  if (std::isnan(amax) || std::isnan(now))
    now = NAN;
  else
    now = std::max(now, std::fabs(amax));
}

void DelayedScale::update() {
  const float last = history_[0];
  float window = last;
  for (size_t i = 1; i < history_.size(); ++i)
    window = std::isnan(window) || std::isnan(history_[i]) ? NAN : std::max(window, history_[i]);
  // Roll: slots 2.. shift down one (slot 1, the oldest, is dropped), the
  // step's amax goes last, slot 0 restarts at 0.
  std::rotate(history_.begin(), history_.begin() + 1, history_.end());
  history_[0] = 0.0f;
  const float amax = cfg_.algo == AmaxAlgo::MostRecent ? last : window;
  if (std::isfinite(amax) && amax > 0.0f) scale_ = scale_from_amax(amax, cfg_.format, cfg_.margin);
}

void DelayedScale::restore(std::vector<float> history, float scale) {
  PX_CHECK(history.size() == history_.size(),
           "fp8 amax history of {} steps restored into one of {}", history.size(),
           history_.size());
  PX_CHECK(std::isfinite(scale) && scale > 0.0f, "fp8 scale {} is not a positive number", scale);
  history_ = std::move(history);
  scale_ = scale;
}

float current_scale(float amax, Fp8Format f, int margin) {
  if (!(std::isfinite(amax) && amax > 0.0f)) return 1.0f;
  return scale_from_amax(amax, f, margin);
}

}  // namespace parallm
