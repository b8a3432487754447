// Zero-bubble ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism"):
// backward is split into B (gradient w.r.t. the stage input, on the critical
// path to the previous stage) and W (parameter gradients, needed only by the
// optimizer). F and B follow 1F1B's order; stage s defers its W passes by s
// micro-batches, so the later stages, which 1F1B leaves idle at the end, fill
// their cool-down with W while the B passes race back to stage 0.
// Invariant: at most pp micro-batches are in flight (F done, W not) on any
// stage, 1F1B's peak; bubble (p-1)(F+B-W) instead of (p-1)(F+B+W).
#pragma once
#include <vector>

#include "parallel/pipeline/action.h"

namespace parallm::pipeline {

// How many B passes stage s runs ahead of its W passes.
int zero_bubble_w_lag(int pp, int stage, int micro_batches);

std::vector<std::vector<Action>> zero_bubble_h1_compute(int pp, int micro_batches);

}  // namespace parallm::pipeline
