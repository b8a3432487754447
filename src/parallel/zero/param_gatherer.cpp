#include "parallel/zero/param_gatherer.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace parallm {

ParamGatherer::ParamGatherer(comm::Communicator& dp, Transformer& model, ShardLayout shards,
                             Allocator& alloc)
    : dp_(dp), params_(model.params()), shards_(shards), slots_(model.grad_segments(), alloc) {
  PX_CHECK(shards_.dp == dp_.size(), "parameter shards are laid out for dp {} but the group has {}",
           shards_.dp, dp_.size());
  shard_ = Tensor::zeros(alloc, {shards_.shard_size()}, DType::F32, MemTag::Parameter);
  const int me = dp_.rank();
  const float* v = params_.flat_values().data<float>();
  std::memcpy(shard(), v + shards_.begin(me),
              static_cast<size_t>(shards_.end(me) - shards_.begin(me)) * sizeof(float));
  params_.release_flat_values();
}

void ParamGatherer::start_gather(UnitSlot& s, int segment) {
  for (auto& w : s.works) w.wait();  // a prefetch that was not used
  s.works.clear();
  const auto& seg = slots_.segment(segment);
  const int me = dp_.rank();
  s.segment = segment;
  bool first_piece = true;
  for (int r = 0; r < shards_.dp; ++r) {
    const int64_t lo = std::max(seg.begin, shards_.begin(r));
    const int64_t hi = std::min(seg.end, shards_.end(r));
    if (hi <= lo) continue;
    // verify's planted bug: the unit's first piece lands one element late.
    const int64_t shift = segment == fault_segment_ && first_piece && hi - lo > 1 ? 1 : 0;
    first_piece = false;
    float* p = s.data() + (lo - seg.begin) + shift;
    const auto n = static_cast<size_t>(hi - lo - shift);
    if (r == me) std::memcpy(p, shard() + (lo - shards_.begin(me)), n * 4);
    s.works.push_back(dp_.broadcast_async(p, p, n, DType::F32, r));
  }
}

void ParamGatherer::acquire(int segment, int next) {
  UnitSlot* s = slots_.find(segment);
  if (s == nullptr) {
    s = &slots_.pick(segment, current_);
    start_gather(*s, segment);
  } else {
    slots_.pick(segment, nullptr);  // refresh its age
  }
  for (auto& w : s->works) w.wait();
  s->works.clear();
  const auto& seg = slots_.segment(segment);
  params_.bind_values(seg.first_param, seg.end_param, s->data());
  if (segment != slots_.pinned_segment()) current_ = s;
  if (next >= 0 && slots_.find(next) == nullptr) {
    UnitSlot& n = slots_.pick(next, current_);
    if (n.works.empty()) start_gather(n, next);
  }
}

void ParamGatherer::invalidate() {
  for (auto& s : slots_.all()) {
    for (auto& w : s.works) w.wait();
    s.works.clear();
    s.segment = -1;
  }
  current_ = nullptr;
}

std::vector<float> ParamGatherer::full_values() {
  std::vector<float> out(static_cast<size_t>(shards_.total));
  const int me = dp_.rank();
  std::memcpy(out.data() + shards_.begin(me), shard(),
              static_cast<size_t>(shards_.end(me) - shards_.begin(me)) * sizeof(float));
  for (int r = 0; r < shards_.dp; ++r) {
    const int64_t n = shards_.end(r) - shards_.begin(r);
    if (n > 0) dp_.broadcast(out.data() + shards_.begin(r), static_cast<size_t>(n), DType::F32, r);
  }
  return out;
}

}  // namespace parallm
