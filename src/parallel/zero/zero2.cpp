#include "parallel/zero/zero2.h"

#include "parallel/zero/shard_sync.h"

namespace parallm {

Zero2::Zero2(Transformer& model, comm::Communicator* dp, const DpOptions& opts,
             const OptimizerConfig& optim, Allocator& alloc)
    : DataParallel(model, dp, opts) {
  norm_begin_ = update_begin_ = shards_.begin(dp_rank());
  norm_end_ = update_end_ = shards_.end(dp_rank());
  opt_ = make_optimizer(optim, model.params(), alloc, update_begin_, update_end_,
                        shards_.shard_size(), model.tp(), dp_);
  shard_reducer_ = std::make_unique<GradShardReducer>(*dp_, model, shards_, opts.overlap, alloc);
  model_.set_grad_ready_hook([this](int s) { shard_reducer_->on_segment_ready(s); });
  model_.set_unit_hook([this](Transformer::UnitPass p, int s) { on_unit(p, s); });
}

void Zero2::begin_step() {
  DataParallel::begin_step();
  shard_reducer_->zero_shard();
}

// Units run embedding (L+1), blocks (L..1), tail (0) forward, then 0..L+1
// backward; the embedding's gradients stay in pinned buffers.
void Zero2::on_unit(Transformer::UnitPass pass, int segment) {
  const int last = static_cast<int>(model_.grad_segments().size()) - 1;
  if (pass == Transformer::UnitPass::Forward || segment == last) return;
  if (segment == 0) shard_reducer_->prepare(last);  // a tied head writes it first
  shard_reducer_->prepare(segment);
}

void Zero2::update(double lr, float* grads) {
  const ParameterSet& ps = model_.params();
  opt_->step_range(ps, lr, ps.flat_values().data<float>() + update_begin_, grads);
  all_gather_shards(*dp_, ps.flat_values().data<float>(), shards_);
}

}  // namespace parallm
