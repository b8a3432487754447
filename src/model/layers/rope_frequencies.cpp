// RopeFrequencies (rope_frequencies.h). Everything in double: the unscaled
// table stays bit-identical to the kernel's former pow(theta, -2i/D), and
// transformers' float32 tables agree to float32 rounding (about 1e-6
// relative), far inside the 1e-5 loss tolerance of the reference checks.
#include "model/layers/rope_frequencies.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "base/error.h"

namespace parallm {
namespace {

std::vector<double> plain_table(double base, int64_t D) {
  std::vector<double> f(static_cast<size_t>(D / 2));
  for (int64_t i = 0; i < D / 2; ++i)
    f[i] = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(D));
  return f;
}

// Llama 3.1: frequencies whose wavelength is longer than the original
// context / low_freq_factor are divided by factor, those shorter than
// original / high_freq_factor kept, and the ones between blended linearly in
// original / wavelength.
void apply_llama3(std::vector<double>& f, const RopeScaling& r) {
  const double original = static_cast<double>(r.original_max_positions);
  const double low_wavelen = original / r.low_freq_factor;
  const double high_wavelen = original / r.high_freq_factor;
  for (double& x : f) {
    const double wavelen = 2.0 * std::numbers::pi / x;
    if (wavelen > low_wavelen) {
      x /= r.factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth =
          (original / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
      x = (1.0 - smooth) * x / r.factor + smooth * x;
    }
  }
}

}  // namespace

RopeFrequencies::RopeFrequencies(const ModelConfig& cfg)
    : theta_(cfg.rope_theta),
      head_dim_(cfg.head_dim),
      max_positions_(cfg.max_positions),
      scaling_(cfg.rope_scaling) {
  PX_CHECK(head_dim_ > 0 && head_dim_ % 2 == 0, "rotary embeddings need an even head_dim, got {}",
           head_dim_);
  PX_CHECK(theta_ > 0, "rope_theta must be positive, got {}", theta_);
  PX_CHECK(scaling_.type != RopeScalingType::Dynamic || head_dim_ > 2,
           "dynamic NTK rope scaling raises the base to D / (D - 2): head_dim {} must be > 2",
           head_dim_);
  PX_CHECK(scaling_.type != RopeScalingType::Llama3 || scaling_.low_freq_factor > 0,
           "llama3 rope scaling needs low_freq_factor > 0, got {}", scaling_.low_freq_factor);
  fixed_ = plain_table(theta_, head_dim_);
  if (scaling_.type == RopeScalingType::Linear)
    for (double& x : fixed_) x /= scaling_.factor;
  if (scaling_.type == RopeScalingType::Llama3) apply_llama3(fixed_, scaling_);
}

std::vector<double> RopeFrequencies::at_length(int64_t length) const {
  if (!depends_on_length() || length <= max_positions_) return fixed_;
  const double D = static_cast<double>(head_dim_);
  const double stretch =
      scaling_.factor * static_cast<double>(length) / static_cast<double>(max_positions_) -
      (scaling_.factor - 1.0);
  return plain_table(theta_ * std::pow(stretch, D / (D - 2.0)), head_dim_);
}

int64_t rope_context_limit(const ModelConfig& cfg) {
  if (cfg.arch == Arch::LLaMA && cfg.rope_scaling.type == RopeScalingType::Dynamic)
    return std::numeric_limits<int64_t>::max();
  return cfg.max_positions;
}

}  // namespace parallm
