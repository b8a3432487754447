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

#include "model/kv_cache/paged_kv_cache.h"

namespace parallm::serve {

struct MicroBatch {
  std::vector<size_t> spans;  // indices into the step's spans, ascending
  int64_t tokens = 0;         // sum of their counts
};

// groups >= 1; the result has min(groups, spans.size(), max(1, tokens /
// min_tokens)) micro-batches: a micro-batch under min_tokens rows is not
// worth its own stage pass (a pass of a few decode rows costs about what one
// of all the rows costs: it is bound by reading the weights).
// Largest spans first, each to the group with the fewest tokens so far.
std::vector<MicroBatch> split_micro_batches(const std::vector<PagedSpan>& spans, int groups,
                                            int64_t min_tokens = 1);

// The default floor of min_tokens for `parallm serve` (no --pp-microbatches):
// above the skinny GEMM's 8 rows, where a pass starts to cost in proportion
// to its rows (docs/serving.md, "pp 2 micro-batches").
inline constexpr int64_t kMinMicroBatchTokens = 16;

}  // namespace parallm::serve
