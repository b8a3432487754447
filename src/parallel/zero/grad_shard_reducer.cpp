#include "parallel/zero/grad_shard_reducer.h"

#include <algorithm>

#include "base/error.h"

namespace parallm {

GradShardReducer::GradShardReducer(comm::Communicator& dp, Transformer& model, ShardLayout shards,
                                   bool overlap, Allocator& alloc)
    : dp_(dp),
      params_(model.params()),
      shards_(shards),
      overlap_(overlap),
      slots_(model.grad_segments(), alloc) {
  PX_CHECK(shards_.dp == dp_.size(), "gradient shards are laid out for dp {} but the group has {}",
           shards_.dp, dp_.size());
  shard_ = Tensor::zeros(alloc, {shards_.shard_size()}, DType::F32, MemTag::Gradient);
  params_.release_flat_grads();
}

void GradShardReducer::prepare(int segment) {
  UnitSlot& s = slots_.pick(segment, nullptr);
  complete(s);
  const auto& seg = slots_.segment(segment);
  s.buf.zero_();
  s.segment = segment;
  params_.bind_grads(seg.first_param, seg.end_param, s.data());
}

void GradShardReducer::on_segment_ready(int segment) {
  UnitSlot* s = slots_.find(segment);
  PX_CHECK(s != nullptr && s->works.empty(), "gradients of unit {} were not prepared", segment);
  const auto& seg = slots_.segment(segment);
  for (int r = 0; r < shards_.dp; ++r) {
    const int64_t lo = std::max(seg.begin, shards_.begin(r));
    const int64_t hi = std::min(seg.end, shards_.end(r));
    if (hi <= lo) continue;
    float* p = s->data() + (lo - seg.begin);
    s->works.push_back(
        dp_.reduce_async(p, p, static_cast<size_t>(hi - lo), DType::F32, comm::ReduceOp::Sum, r));
  }
  if (!overlap_) complete(*s);
}

void GradShardReducer::complete(UnitSlot& s) {
  if (s.segment < 0 || s.works.empty()) return;
  for (auto& w : s.works) w.wait();
  s.works.clear();
  const auto& seg = slots_.segment(s.segment);
  const int me = dp_.rank();
  const int64_t lo = std::max(seg.begin, shards_.begin(me));
  const int64_t hi = std::min(seg.end, shards_.end(me));
  float* dst = shard() + (lo - shards_.begin(me));
  const float* src = s.data() + (lo - seg.begin);
  for (int64_t k = 0; k < hi - lo; ++k) dst[k] += src[k];
}

void GradShardReducer::finish() {
  for (auto& s : slots_.all()) complete(s);
}

}  // namespace parallm
