// Micro-batches of one server step for the pipeline: the step's spans split
// into at most `groups` groups with about equal token counts, so that stage s
// can run one group while stage s+1 runs the group before. Invariant: every
// span lies in exactly one group whole (a sequence's span is never split),
// each group lists its spans in the step's order, the groups are ordered by
// their first span, and none is empty. Splitting only regroups rows; each
// span still sees its own cached keys and values, so it may run in any group.
#pragma once
#include <cstdint>
#include <vector>

#include "model/paged_kv_cache.h"

namespace parallm::serve {

struct MicroBatch {
  std::vector<size_t> spans;  // indices into the step's spans, ascending
  int64_t tokens = 0;         // sum of their counts
};

// groups >= 1; the result has min(groups, spans.size()) micro-batches.
// Largest spans first, each to the group with the fewest tokens so far.
std::vector<MicroBatch> split_micro_batches(const std::vector<PagedSpan>& spans, int groups);

}  // namespace parallm::serve
