#include "parallel/zero/zero1.h"

#include "optim/span_optimizer.h"
#include "parallel/zero/shard_sync.h"

namespace parallm {

Zero1::Zero1(TrainableModel& model, comm::Communicator* dp, const DpOptions& opts,
             const OptimizerConfig& optim, Allocator& alloc, comm::Communicator* edp)
    : Ddp(model, dp, opts, optim, alloc,
          model.ep().active() ? Optimizing::OwnSpans : Optimizing::OwnShard) {
  if (!model.ep().active()) return;
  edp_ = edp;
  expert_shards_.emplace(shards_, expert_ranges_, edp ? edp->size() : 1);
  // The norm counts the dp shard (experts left out, counted per expert-dp
  // group: DataParallel::finish_step); unscale and clip see every gradient.
  norm_begin_ = shards_.begin(dp_rank());
  norm_end_ = shards_.end(dp_rank());
  update_begin_ = 0;
  update_end_ = model.params().total_numel();
  opt_ = std::make_unique<SpanOptimizer>(optim, model.params(), alloc,
                                         expert_shards_->owned(dp_rank(), edp_rank()));
}

void Zero1::update(double lr, float* grads) {
  opt_->step(model_.params(), lr);  // the optimizer's range is this rank's shard
  float* v = model_.params().flat_values().data<float>();
  if (expert_shards_)
    expert_shards_->sync(*dp_, edp_, v);
  else
    all_gather_shards(*dp_, v, shards_);
}

}  // namespace parallm
