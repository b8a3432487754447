// Checks of a schedule's lists that need no timing: each (micro-batch, chunk)
// is run forward once and backward once on each stage, in that order (and B
// before W), and every transfer has its match on the peer stage; plus the
// number of micro-batches whose activations a stage holds at once.
// Invariant: a schedule from make_schedule has no problems.
#pragma once
#include <string>
#include <vector>

#include "parallel/pipeline/schedule.h"

namespace parallm::pipeline {

// Every problem found, as sentences naming stage and action; empty when sound.
std::vector<std::string> schedule_problems(const Schedule& s);

// Peak over the list of (forwards run) - (units released), per stage, in
// (micro-batch, chunk) units. A unit is released by its backward (or B), or,
// with release_at_weight, by its W: what the zero-bubble split holds longer.
std::vector<int> peak_in_flight(const Schedule& s, bool release_at_weight = false);

}  // namespace parallm::pipeline
