// SamplingParams::validate: the accepted ranges (see sampling_params.h).
#include "infer/sampling_params.h"

#include <cmath>

#include "base/error.h"

namespace parallm {

void SamplingParams::validate() const {
  PX_CHECK(std::isfinite(temperature) && temperature >= 0.0,
           "temperature must be >= 0 (0: greedy), got {}", temperature);
  PX_CHECK(top_k >= 0, "top_k must be >= 0 (0: off), got {}", top_k);
  PX_CHECK(std::isfinite(top_p) && top_p > 0.0 && top_p <= 1.0,
           "top_p must be in (0, 1] (1: off), got {}", top_p);
  PX_CHECK(std::isfinite(min_p) && min_p >= 0.0 && min_p <= 1.0,
           "min_p must be in [0, 1] (0: off), got {}", min_p);
  PX_CHECK(std::isfinite(repetition_penalty) && repetition_penalty > 0.0,
           "repetition_penalty must be > 0 (1: off), got {}", repetition_penalty);
  PX_CHECK(std::isfinite(presence_penalty) && presence_penalty >= -2.0 && presence_penalty <= 2.0,
           "presence_penalty must be in [-2, 2] (0: off), got {}", presence_penalty);
  PX_CHECK(
      std::isfinite(frequency_penalty) && frequency_penalty >= -2.0 && frequency_penalty <= 2.0,
      "frequency_penalty must be in [-2, 2] (0: off), got {}", frequency_penalty);
  PX_CHECK(logprobs >= 0 && logprobs <= 20, "logprobs must be in [0, 20], got {}", logprobs);
}

}  // namespace parallm
