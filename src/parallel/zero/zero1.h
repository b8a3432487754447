// Zero1: ZeRO stage 1 (Rajbhandari et al. 2020), optimizer states sharded.
// Gradients are all-reduced exactly as under Ddp (bucketed, overlapped with
// backward), but each dp rank keeps optimizer state for, and updates, only
// its 1/dp shard of the flat parameters; an all-gather of the updated shards
// then gives every rank the whole model (shard_sync.h).
#pragma once
#include "parallel/data/ddp.h"

namespace parallm {

class Zero1 : public Ddp {
 public:
  Zero1(Transformer& model, comm::Communicator* dp, const DpOptions& opts,
        const OptimizerConfig& optim, Allocator& alloc);

 protected:
  void update(double lr, float* grads) override;
};

}  // namespace parallm
