#include "parallel/zero/zero2.h"

#include <algorithm>

#include "optim/nonfinite.h"
#include "optim/span_optimizer.h"
#include "parallel/zero/shard_sync.h"

namespace parallm {

Zero2::Zero2(TrainableModel& model, comm::Communicator* dp, const DpOptions& opts,
             const OptimizerConfig& optim, Allocator& alloc, comm::Communicator* edp)
    : DataParallel(model, dp, opts) {
  if (!model.ep().active()) {
    norm_begin_ = update_begin_ = shards_.begin(dp_rank());
    norm_end_ = update_end_ = shards_.end(dp_rank());
    opt_ = make_optimizer(optim, model.params(), alloc, update_begin_, update_end_,
                          shards_.shard_size(), model.tp(), dp_);
    shard_reducer_ = std::make_unique<GradShardReducer>(*dp_, model, shards_, opts.overlap, alloc);
  } else {
    edp_ = edp;
    const int edp_size = edp ? edp->size() : 1;
    expert_shards_.emplace(shards_, expert_ranges_, edp_size);
    owners_ = expert_shards_->owner_tables(*dp_, edp);
    shard_reducer_ = std::make_unique<GradShardReducer>(owners_, model, opts.overlap, alloc);
    opt_ = std::make_unique<SpanOptimizer>(optim, model.params(), alloc, shard_reducer_->owned());
  }
  model_.set_grad_ready_hook([this](int s) { shard_reducer_->on_segment_ready(s); });
  model_.set_unit_hook([this](UnitPass p, int s) { on_unit(p, s); });
}

void Zero2::begin_step() {
  DataParallel::begin_step();
  shard_reducer_->zero_shard();
}

// Units run embedding (L+1), blocks (L..1), tail (0) forward, then 0..L+1
// backward; the embedding's gradients stay in pinned buffers.
void Zero2::on_unit(UnitPass pass, int segment) {
  const int last = static_cast<int>(model_.grad_segments().size()) - 1;
  if (pass == UnitPass::Forward || segment == last) return;
  if (segment == 0) shard_reducer_->prepare(last);  // a tied head writes it first
  shard_reducer_->prepare(segment);
}

int64_t Zero2::update_count() const {
  if (!expert_shards_) return DataParallel::update_count();
  const auto& spans = shard_reducer_->owned();
  return spans.empty() ? 0 : shard_reducer_->offsets().back() + spans.back().size();
}

double Zero2::grad_norm(const float* gn, const GradNormGroups& groups,
                        std::span<double> also_summed) {
  if (!expert_shards_) return DataParallel::grad_norm(gn, groups, also_summed);
  // Over the dp group every dense element has one owner, and so has every
  // expert element (its ep rank's expert-dp owner): the owned squares sum
  // to the whole model's.
  std::vector<GradSpan> spans;
  const auto& owned = shard_reducer_->owned();
  for (size_t i = 0; i < owned.size(); ++i)
    spans.push_back({owned[i], gn + shard_reducer_->offsets()[i]});
  return global_grad_norm(model_.params(), spans, groups, also_summed);
}

int64_t Zero2::first_nonfinite_local(const float* gn) const {
  if (!expert_shards_) return DataParallel::first_nonfinite_local(gn);
  int64_t key = kNoNonfinite;
  const auto& owned = shard_reducer_->owned();
  for (size_t i = 0; i < owned.size(); ++i)
    key = std::min(key, first_nonfinite_grad(model_, gn + shard_reducer_->offsets()[i],
                                             owned[i].begin, owned[i].end));
  return key;
}

void Zero2::update(double lr, float* grads) {
  ParameterSet& ps = model_.params();
  float* values = ps.flat_values().data<float>();
  if (!expert_shards_) {
    opt_->step_range(ps, lr, values + update_begin_, grads);
    all_gather_shards(*dp_, values, shards_);
    return;
  }
  std::vector<const float*> per_span;
  for (int64_t at : shard_reducer_->offsets()) per_span.push_back(grads + at);
  static_cast<SpanOptimizer&>(*opt_).step_spans(ps, lr, values, per_span);
  expert_shards_->sync(*dp_, edp_, values);
}

}  // namespace parallm
