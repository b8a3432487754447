#include "parallel/zero/zero1.h"

#include "parallel/zero/shard_sync.h"

namespace parallm {

Zero1::Zero1(Transformer& model, comm::Communicator* dp, const DpOptions& opts,
             const OptimizerConfig& optim, Allocator& alloc)
    : Ddp(model, dp, opts, optim, alloc, Optimizing::OwnShard) {}

void Zero1::update(double lr, float* grads) {
  opt_->step(model_.params(), lr);  // the optimizer's range is this rank's shard
  all_gather_shards(*dp_, model_.params().flat_values().data<float>(), shards_);
}

}  // namespace parallm
