#include "parallel/data/bucket_plan.h"

#include "base/error.h"

namespace parallm {

std::vector<GradBucket> plan_buckets(const std::vector<GradSegment>& segments,
                                     int64_t max_elems) {
  PX_CHECK(max_elems > 0, "bucket size must be positive, got {} elements", max_elems);
  std::vector<GradBucket> out;
  GradBucket cur{0, 0, -1};  // open bucket; empty while ready_after < 0
  auto close = [&] {
    if (cur.ready_after >= 0 && cur.end > cur.begin) out.push_back(cur);
    cur.ready_after = -1;
  };
  for (int s = 0; s < static_cast<int>(segments.size()); ++s) {
    const auto& seg = segments[s];
    PX_CHECK(cur.ready_after < 0 || seg.end == cur.begin,
             "gradient segment {} [{}, {}) does not end where the previous one begins ({})", s,
             seg.begin, seg.end, cur.begin);
    if (seg.end - seg.begin > max_elems) {  // oversized: split, highest offsets first
      close();
      for (int64_t e = seg.end; e > seg.begin; e -= max_elems)
        out.push_back({std::max(seg.begin, e - max_elems), e, s});
      continue;
    }
    if (cur.ready_after >= 0 && cur.end - seg.begin > max_elems) close();
    if (cur.ready_after < 0) cur = {seg.begin, seg.end, s};
    cur.begin = seg.begin;
    cur.ready_after = s;
  }
  close();
  return out;
}

}  // namespace parallm
