#include "parallel/zero/zero3.h"

namespace parallm {

Zero3::Zero3(Transformer& model, comm::Communicator* dp, const DpOptions& opts,
             const OptimizerConfig& optim, Allocator& alloc)
    : Zero2(model, dp, opts, optim, alloc),
      gatherer_(std::make_unique<ParamGatherer>(*dp_, model, shards_, alloc)) {
  if (model.injected_fault() == InjectedFault::Zero3ShardOffset)
    gatherer_->set_fault_segment(model.block_segment(kFaultLayer));
}

int64_t Zero3::unit_buffer_bytes() const {
  return Zero2::unit_buffer_bytes() + gatherer_->buffer_bytes();
}

// Gathers the unit about to run and prefetches the next in the same pass:
// forward walks L+1 .. 0, backward 0 .. L+1 (the embedding stays pinned).
void Zero3::on_unit(Transformer::UnitPass pass, int segment) {
  const int last = static_cast<int>(model_.grad_segments().size()) - 1;
  int next = -1;
  if (pass == Transformer::UnitPass::Forward)
    next = segment > 0 ? segment - 1 : -1;
  else if (segment < last - 1)
    next = segment + 1;
  gatherer_->acquire(segment, next);
  Zero2::on_unit(pass, segment);
}

void Zero3::update(double lr, float* grads) {
  opt_->step_range(model_.params(), lr, gatherer_->shard(), grads);
  gatherer_->invalidate();
}

}  // namespace parallm
