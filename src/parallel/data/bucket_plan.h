// Gradient buckets: contiguous flat ranges of the gradient buffer, each the
// union of consecutive gradient segments in backward-completion order (the
// model's grad_segments(): reverse layer order), closed once it reaches the
// byte budget. A bucket is ready when its last segment (the lowest offsets)
// completes, so buckets become ready in order and the first one can reduce
// while the rest of backward runs. A segment larger than the budget is split
// into several buckets that become ready together.
#pragma once
#include <cstdint>
#include <vector>

#include "model/contract/model_contract.h"

namespace parallm {

struct GradBucket {
  int64_t begin = 0, end = 0;  // flat element range
  int ready_after = 0;         // index of the segment whose completion makes it ready
};

// segments: flat ranges in completion order; max_elems: bucket budget.
std::vector<GradBucket> plan_buckets(const std::vector<GradSegment>& segments,
                                     int64_t max_elems);

}  // namespace parallm
