// DualPipeV (DeepSeek's DualPipe cut in half, Sea AI Lab's "cut-in-half"):
// each stage holds two model chunks placed in a V (placement.h): chunk 0 of
// stage s is virtual stage s, chunk 1 is 2 pp - 1 - s, so micro-batches go
// down the stages in chunk 0 and come back up in chunk 1. Eight phases per
// stage: forwards of chunk 0 to fill the V, then pairs of a forward of one
// chunk with a backward of the other (DualPipe overlaps the pair's compute
// with its communication; a CPU rank runs them one after the other), with
// the backward split into B (input gradient) and a deferred W where that
// fills a bubble, ZB-H1's way. Needs micro-batches >= 2 pp.
// Invariant: per stage and chunk, F, B and W (or a whole backward) of every
// micro-batch once each, in micro-batch order; W's in the order of their B's.
#pragma once
#include <vector>

#include "parallel/pipeline/action.h"

namespace parallm::pipeline {

std::vector<std::vector<Action>> dual_pipe_v_compute(int pp, int micro_batches);

}  // namespace parallm::pipeline
