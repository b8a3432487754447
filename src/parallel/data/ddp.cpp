#include "parallel/data/ddp.h"

#include "parallel/data/bucket_plan.h"

namespace parallm {

Ddp::Ddp(TrainableModel& model, comm::Communicator* dp, const DpOptions& opts,
         const OptimizerConfig& optim, Allocator& alloc)
    : Ddp(model, dp, opts, optim, alloc, Optimizing::Everything) {}

Ddp::Ddp(TrainableModel& model, comm::Communicator* dp, const DpOptions& opts,
         const OptimizerConfig& optim, Allocator& alloc, Optimizing what)
    : DataParallel(model, dp, opts) {
  const ParameterSet& ps = model.params();
  const int64_t total = ps.total_numel();
  norm_begin_ = shards_.begin(dp_rank());
  norm_end_ = shards_.end(dp_rank());
  if (what == Optimizing::OwnSpans) {  // ranges and optimizer: the subclass
  } else if (what == Optimizing::OwnShard) {
    update_begin_ = norm_begin_;
    update_end_ = norm_end_;
    opt_ = make_optimizer(optim, ps, alloc, update_begin_, update_end_, shards_.shard_size(),
                          model.tp(), dp_);
  } else {
    update_end_ = total;
    opt_ = make_optimizer(optim, ps, alloc, 0, total, total, model.tp());
  }
  if (!multi()) return;
  reducer_ = std::make_unique<GradReducer>(
      *dp_, ps.flat_grads().data<float>(), plan_buckets(model.grad_segments(), opts.bucket_elems()),
      GradTarget::AllRanks, shards_, opts.overlap, expert_ranges_);
  model_.set_grad_ready_hook([this](int s) { reducer_->on_segment_ready(s); });
}

void Ddp::begin_micro_batch(bool last) {
  if (last && reducer_) reducer_->arm();
}

void Ddp::finish_reduction() {
  if (reducer_) reducer_->finish();
  reduce_expert_grads();
}

void Ddp::update(double lr, float* grads) { opt_->step(model_.params(), lr); }

}  // namespace parallm
