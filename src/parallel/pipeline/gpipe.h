// GPipe (Huang et al. 2019): every stage runs all m forwards, then all m
// backwards (in micro-batch order). Invariant: a stage holds the
// activations of all m micro-batches at the turn, so memory grows with m.
#pragma once
#include <vector>

#include "parallel/pipeline/action.h"

namespace parallm::pipeline {

// Compute actions per stage (transfers are added by with_transfers).
std::vector<std::vector<Action>> gpipe_compute(int pp, int micro_batches);

}  // namespace parallm::pipeline
