#include "parallel/zero/param_gatherer.h"

#include <algorithm>

#include "base/error.h"
#include "ops/copy.h"

namespace parallm {

ParamGatherer::ParamGatherer(comm::Communicator& dp, TrainableModel& model, ShardLayout shards,
                             Allocator& alloc)
    // Equal, padded shards, as the plain optimizer and gradient shard have.
    : ParamGatherer(plain_owners(dp, shards), model, alloc, shards.shard_size()) {}

ParamGatherer::ParamGatherer(std::vector<SpanOwners> owners, TrainableModel& model, Allocator& alloc,
                             int64_t min_shard)
    : owners_(std::move(owners)),
      params_(model.params()),
      mine_(pack_owned(owners_)),
      slots_(model.grad_segments(), alloc) {
  shard_ = Tensor::zeros(alloc, {std::max({int64_t{1}, min_shard, mine_.numel})}, DType::F32,
                         MemTag::Parameter);
  const float* v = params_.flat_values().data<float>();
  for (size_t i = 0; i < mine_.spans.size(); ++i)
    ops::copy(params_.stream(), shard() + mine_.offsets[i], v + mine_.spans[i].begin,
              static_cast<size_t>(mine_.spans[i].size()) * sizeof(float));
  params_.release_flat_values();
}

void ParamGatherer::start_gather(UnitSlot& s, int segment) {
  for (auto& w : s.works) w.wait();  // a prefetch that was not used
  s.works.clear();
  const auto& seg = slots_.segment(segment);
  s.segment = segment;
  bool first_piece = true;
  for (const SpanOwners& o : owners_) {
    for (int r = 0; r < o.size(); ++r) {
      for (const FlatSpan& span : o.spans[static_cast<size_t>(r)]) {
        const int64_t lo = std::max(seg.begin, span.begin);
        const int64_t hi = std::min(seg.end, span.end);
        if (hi <= lo) continue;
        // A bug verify's tests may plant: the unit's first piece lands late.
        const int64_t shift =
            piece_shift_ && first_piece ? std::min(piece_shift_(segment), hi - lo - 1) : 0;
        first_piece = false;
        float* p = s.data() + (lo - seg.begin) + shift;
        const auto n = static_cast<size_t>(hi - lo - shift);
        if (r == o.rank())
          ops::copy(params_.stream(), p, shard() + mine_.offset_of(lo), n * sizeof(float));
        if (o.shared()) s.works.push_back(o.group->broadcast_async(p, p, n, DType::F32, r));
      }
    }
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
  std::vector<float> out(static_cast<size_t>(params_.total_numel()));
  for (size_t i = 0; i < mine_.spans.size(); ++i)
    ops::copy_to_host(params_.stream(), out.data() + mine_.spans[i].begin,
                      shard() + mine_.offsets[i],
                      static_cast<size_t>(mine_.spans[i].size()) * sizeof(float));
  for (const SpanOwners& o : owners_) {
    if (!o.shared()) continue;
    for (int r = 0; r < o.size(); ++r)
      for (const FlatSpan& span : o.spans[static_cast<size_t>(r)])
        o.group->broadcast(out.data() + span.begin, static_cast<size_t>(span.size()), DType::F32,
                           r);
  }
  return out;
}

}  // namespace parallm
