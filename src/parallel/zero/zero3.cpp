#include "parallel/zero/zero3.h"

#include "base/error.h"
#include "optim/span_optimizer.h"

namespace parallm {

Zero3::Zero3(TrainableModel& model, comm::Communicator* dp, const DpOptions& opts,
             const OptimizerConfig& optim, Allocator& alloc, comm::Communicator* edp)
    : Zero2(model, dp, opts, optim, alloc, edp) {
  if (!expert_shards_) {
    gatherer_ = std::make_unique<ParamGatherer>(*dp_, model, shards_, alloc);
  } else {
    gatherer_ = std::make_unique<ParamGatherer>(owners_, model, alloc);
    PX_CHECK(gatherer_->offsets() == shard_reducer_->offsets(),
             "ZeRO-3 value and gradient shards pack {} and {} spans differently",
             gatherer_->owned().size(), shard_reducer_->owned().size());
  }
  if (const FaultHooks* f = model.fault_hooks(); f != nullptr && f->zero3_piece_shift)
    gatherer_->set_piece_shift(f->zero3_piece_shift);
}

std::optional<std::vector<ValueSpan>> Zero3::owned_values() const {
  if (!expert_shards_) return std::nullopt;
  std::vector<ValueSpan> out;
  for (size_t i = 0; i < gatherer_->owned().size(); ++i)
    out.push_back({gatherer_->owned()[i], gatherer_->shard() + gatherer_->offsets()[i]});
  return out;
}

int64_t Zero3::unit_buffer_bytes() const {
  return Zero2::unit_buffer_bytes() + gatherer_->buffer_bytes();
}

// Gathers the unit about to run and prefetches the next in the same pass:
// forward walks L+1 .. 0, backward 0 .. L+1 (the embedding stays pinned).
void Zero3::on_unit(UnitPass pass, int segment) {
  const int last = static_cast<int>(model_.grad_segments().size()) - 1;
  int next = -1;
  if (pass == UnitPass::Forward)
    next = segment > 0 ? segment - 1 : -1;
  else if (segment < last - 1)
    next = segment + 1;
  gatherer_->acquire(segment, next);
  Zero2::on_unit(pass, segment);
}

void Zero3::update(double lr, float* grads) {
  if (!expert_shards_) {
    opt_->step_range(model_.params(), lr, gatherer_->shard(), grads);
  } else {  // both shards pack the owned spans alike
    std::vector<float*> values;
    std::vector<const float*> per_span;
    for (int64_t at : gatherer_->offsets()) {
      values.push_back(gatherer_->shard() + at);
      per_span.push_back(grads + at);
    }
    static_cast<SpanOptimizer&>(*opt_).step_spans(model_.params(), lr, values, per_span);
  }
  gatherer_->invalidate();
}

}  // namespace parallm
