#include "parallel/zero/grad_shard_reducer.h"

#include <algorithm>

#include "base/error.h"
#include "ops/activation.h"

namespace parallm {

GradShardReducer::GradShardReducer(comm::Communicator& dp, TrainableModel& model, ShardLayout shards,
                                   bool overlap, Allocator& alloc)
    // Plain ZeRO's optimizer and ZeRO-3's gatherer see equal, padded shards.
    : GradShardReducer(plain_owners(dp, shards), model, overlap, alloc, shards.shard_size()) {}

GradShardReducer::GradShardReducer(std::vector<SpanOwners> owners, TrainableModel& model, bool overlap,
                                   Allocator& alloc, int64_t min_shard)
    : owners_(std::move(owners)),
      params_(model.params()),
      overlap_(overlap),
      mine_(pack_owned(owners_)),
      slots_(model.grad_segments(), alloc) {
  shard_ = Tensor::zeros(alloc, {std::max({int64_t{1}, min_shard, mine_.numel})}, DType::F32,
                         MemTag::Gradient);
  params_.release_flat_grads();
}

void GradShardReducer::prepare(int segment) {
  UnitSlot& s = slots_.pick(segment, nullptr);
  complete(s);
  const auto& seg = slots_.segment(segment);
  s.buf.zero_();
  s.segment = segment;
  s.reduced = false;
  params_.bind_grads(seg.first_param, seg.end_param, s.data());
}

void GradShardReducer::on_segment_ready(int segment) {
  UnitSlot* s = slots_.find(segment);
  PX_CHECK(s != nullptr && s->works.empty(), "gradients of unit {} were not prepared", segment);
  const auto& seg = slots_.segment(segment);
  for (const SpanOwners& o : owners_) {
    if (!o.shared()) continue;  // nothing to sum
    for (int r = 0; r < o.size(); ++r) {
      for (const FlatSpan& span : o.spans[static_cast<size_t>(r)]) {
        const int64_t lo = std::max(seg.begin, span.begin);
        const int64_t hi = std::min(seg.end, span.end);
        if (hi <= lo) continue;
        float* p = s->data() + (lo - seg.begin);
        s->works.push_back(o.group->reduce_async(p, p, static_cast<size_t>(hi - lo), DType::F32,
                                                 comm::ReduceOp::Sum, r));
      }
    }
  }
  s->reduced = true;
  if (!overlap_) complete(*s);
}

void GradShardReducer::complete(UnitSlot& s) {
  if (s.segment < 0 || !s.reduced) return;  // empty, or its backward still runs
  for (auto& w : s.works) w.wait();
  s.works.clear();
  const auto& seg = slots_.segment(s.segment);
  for (size_t i = 0; i < mine_.spans.size(); ++i) {
    const FlatSpan& span = mine_.spans[i];
    const int64_t lo = std::max(seg.begin, span.begin);
    const int64_t hi = std::min(seg.end, span.end);
    if (hi <= lo) continue;
    float* dst = shard() + mine_.offsets[i] + (lo - span.begin);
    const float* src = s.data() + (lo - seg.begin);
    ops::add_inplace(params_.stream(), dst, src, hi - lo);
  }
  s.reduced = false;  // added once
}

void GradShardReducer::finish() {
  for (auto& s : slots_.all()) complete(s);
}

}  // namespace parallm
