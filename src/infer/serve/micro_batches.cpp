// split_micro_batches (see micro_batches.h): greedy longest-first balance,
// deterministic (ties go to the earlier span and the earlier group), so
// every rank that splits the same step gets the same groups.
#include "infer/serve/micro_batches.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"

namespace parallm::serve {

std::vector<MicroBatch> split_micro_batches(const std::vector<PagedSpan>& spans, int groups,
                                            int64_t min_tokens) {
  PX_CHECK(groups >= 1, "a step splits into at least one micro-batch, asked for {}", groups);
  PX_CHECK(min_tokens >= 1, "a micro-batch needs a floor of at least one token, got {}",
           min_tokens);
  int64_t total = 0;
  for (const PagedSpan& s : spans) total += s.count;
  const size_t worth = static_cast<size_t>(std::max<int64_t>(1, total / min_tokens));
  const size_t n = std::min({static_cast<size_t>(groups), spans.size(), worth});
  std::vector<MicroBatch> out(n);
  std::vector<size_t> order(spans.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return spans[a].count > spans[b].count; });
  for (size_t i : order) {
    PX_CHECK(spans[i].count >= 1, "span {} of the step has {} tokens; each needs at least one", i,
             spans[i].count);
    auto lightest = std::min_element(
        out.begin(), out.end(), [](const auto& a, const auto& b) { return a.tokens < b.tokens; });
    lightest->spans.push_back(i);
    lightest->tokens += spans[i].count;
  }
  for (MicroBatch& m : out) std::sort(m.spans.begin(), m.spans.end());
  std::sort(out.begin(), out.end(),
            [](const MicroBatch& a, const MicroBatch& b) { return a.spans[0] < b.spans[0]; });
  return out;
}

}  // namespace parallm::serve
