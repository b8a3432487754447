#include "parallel/data/parameter_server.h"

#include "parallel/data/bucket_plan.h"

namespace parallm {

ParameterServer::ParameterServer(TrainableModel& model, comm::Communicator* dp, const DpOptions& opts,
                                 const OptimizerConfig& optim, Allocator& alloc)
    : DataParallel(model, dp, opts) {
  const ParameterSet& ps = model.params();
  const int64_t total = ps.total_numel();
  // The server alone holds the reduced gradients: it counts and updates all.
  norm_end_ = update_end_ = is_server() ? total : 0;
  if (is_server()) opt_ = make_optimizer(optim, ps, alloc, 0, total, total, model.tp());
  reducer_ = std::make_unique<GradReducer>(*dp_, ps.flat_grads().data<float>(),
                                           plan_buckets(model.grad_segments(), opts.bucket_elems()),
                                           GradTarget::Root, shards_, opts.overlap);
  model_.set_grad_ready_hook([this](int s) { reducer_->on_segment_ready(s); });
}

void ParameterServer::begin_micro_batch(bool last) {
  if (last) reducer_->arm();
}

void ParameterServer::finish_reduction() { reducer_->finish(); }

void ParameterServer::update(double lr, float* grads) {
  if (opt_) opt_->step(model_.params(), lr);
  float* v = model_.params().flat_values().data<float>();
  dp_->broadcast(v, static_cast<size_t>(shards_.total), DType::F32, 0);
}

}  // namespace parallm
