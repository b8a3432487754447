#include "parallel/zero/span_owners.h"

#include <algorithm>

#include "base/error.h"

namespace parallm {

std::vector<SpanOwners> plain_owners(comm::Communicator& dp, ShardLayout shards) {
  PX_CHECK(shards.dp == dp.size(), "shards are laid out for dp {} but the group has {}", shards.dp,
           dp.size());
  SpanOwners o{&dp, {}};
  for (int r = 0; r < shards.dp; ++r) {
    o.spans.emplace_back();
    if (shards.end(r) > shards.begin(r)) o.spans.back().push_back({shards.begin(r), shards.end(r)});
  }
  return {o};
}

PackedSpans pack_owned(const std::vector<SpanOwners>& owners) {
  PackedSpans p;
  for (const SpanOwners& o : owners) {
    PX_CHECK(static_cast<int>(o.spans.size()) == o.size(), "{} owner lists for a group of {} ranks",
             o.spans.size(), o.size());
    for (const FlatSpan& s : o.spans[static_cast<size_t>(o.rank())]) p.spans.push_back(s);
  }
  std::sort(p.spans.begin(), p.spans.end(),
            [](const FlatSpan& a, const FlatSpan& b) { return a.begin < b.begin; });
  for (const FlatSpan& s : p.spans) {
    p.offsets.push_back(p.numel);
    p.numel += s.size();
  }
  return p;
}

int64_t PackedSpans::offset_of(int64_t flat) const {
  // The last span beginning at or before `flat`.
  auto it = std::upper_bound(spans.begin(), spans.end(), flat,
                             [](int64_t f, const FlatSpan& s) { return f < s.begin; });
  PX_CHECK(it != spans.begin() && flat < std::prev(it)->end,
           "flat element {} is not owned by this rank", flat);
  const auto i = static_cast<size_t>(std::prev(it) - spans.begin());
  return offsets[i] + (flat - spans[i].begin);
}

}  // namespace parallm
