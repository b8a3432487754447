// Interleaved 1F1B (Narayanan et al. 2021, Megatron-LM): each stage holds V
// model chunks (chunk c of stage s is virtual stage c * pp + s), and runs
// 1F1B over the m * V (micro-batch, chunk) units. Forwards visit the units
// in groups of pp micro-batches, chunk 0 first; backwards the same groups
// with the chunks reversed. Stage s warms up with (pp - s - 1) * 2 +
// (V - 1) * pp forwards (capped at m V). Needs m % pp == 0, as Megatron does.
// Bubble (p - 1) / (V m) of the ideal time: V times smaller than 1F1B, for V
// times the point-to-point traffic.
#pragma once
#include <vector>

#include "parallel/pipeline/action.h"

namespace parallm::pipeline {

int interleaved_warmup(int pp, int stage, int micro_batches, int virtual_stages);

std::vector<std::vector<Action>> interleaved_compute(int pp, int micro_batches, int virtual_stages);

}  // namespace parallm::pipeline
