#include "parallel/zero/grad_shard_reducer.h"

#include <algorithm>

#include "base/error.h"

namespace parallm {
namespace {

int rank_in(const SpanOwners& o) { return o.group ? o.group->rank() : 0; }

std::vector<SpanOwners> plain_owners(comm::Communicator& dp, ShardLayout shards) {
  PX_CHECK(shards.dp == dp.size(), "gradient shards are laid out for dp {} but the group has {}",
           shards.dp, dp.size());
  SpanOwners o{&dp, {}};
  for (int r = 0; r < shards.dp; ++r) {
    o.spans.emplace_back();
    if (shards.end(r) > shards.begin(r)) o.spans.back().push_back({shards.begin(r), shards.end(r)});
  }
  return {o};
}

}  // namespace

GradShardReducer::GradShardReducer(comm::Communicator& dp, Transformer& model, ShardLayout shards,
                                   bool overlap, Allocator& alloc)
    // Plain ZeRO's optimizer and ZeRO-3's gatherer see equal, padded shards.
    : GradShardReducer(plain_owners(dp, shards), model, overlap, alloc, shards.shard_size()) {}

GradShardReducer::GradShardReducer(std::vector<SpanOwners> owners, Transformer& model, bool overlap,
                                   Allocator& alloc, int64_t min_shard)
    : owners_(std::move(owners)),
      params_(model.params()),
      overlap_(overlap),
      slots_(model.grad_segments(), alloc) {
  for (const SpanOwners& o : owners_) {
    const int n = o.group ? o.group->size() : 1;
    PX_CHECK(static_cast<int>(o.spans.size()) == n, "{} owner lists for a group of {} ranks",
             o.spans.size(), n);
    for (const FlatSpan& s : o.spans[static_cast<size_t>(rank_in(o))]) mine_.push_back(s);
  }
  std::sort(mine_.begin(), mine_.end(),
            [](const FlatSpan& a, const FlatSpan& b) { return a.begin < b.begin; });
  for (const FlatSpan& s : mine_) {
    at_.push_back(owned_numel_);
    owned_numel_ += s.size();
  }
  shard_ = Tensor::zeros(alloc, {std::max({int64_t{1}, min_shard, owned_numel_})}, DType::F32,
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
    if (o.group == nullptr || o.group->size() == 1) continue;  // nothing to sum
    for (int r = 0; r < o.group->size(); ++r) {
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
  for (size_t i = 0; i < mine_.size(); ++i) {
    const int64_t lo = std::max(seg.begin, mine_[i].begin);
    const int64_t hi = std::min(seg.end, mine_[i].end);
    if (hi <= lo) continue;
    float* dst = shard() + at_[i] + (lo - mine_[i].begin);
    const float* src = s.data() + (lo - seg.begin);
    for (int64_t k = 0; k < hi - lo; ++k) dst[k] += src[k];
  }
  s.reduced = false;  // added once
}

void GradShardReducer::finish() {
  for (auto& s : slots_.all()) complete(s);
}

}  // namespace parallm
