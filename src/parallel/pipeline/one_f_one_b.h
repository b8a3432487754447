// 1F1B, the PipeDream-flush schedule (Narayanan et al. 2021): stage s runs
// min(pp - s - 1, m) warm-up forwards, then alternates one forward with one
// backward, then drains the remaining backwards. Invariant: stage s holds at
// most min(pp - s, m) micro-batches of activations (pp on stage 0), whatever m.
#pragma once
#include <vector>

#include "parallel/pipeline/action.h"

namespace parallm::pipeline {

// Warm-up forwards of stage s: min(pp - s - 1, m).
int one_f_one_b_warmup(int pp, int stage, int micro_batches);

// Compute actions per stage; `backward` is kBackward, or kBackwardInput when
// the zero-bubble schedule reuses this order and adds its W passes.
std::vector<std::vector<Action>> one_f_one_b_compute(int pp, int micro_batches,
                                                     ActionKind backward = ActionKind::Backward);

}  // namespace parallm::pipeline
