// Zero1: ZeRO stage 1 (Rajbhandari et al. 2020), optimizer states sharded.
// Gradients are all-reduced exactly as under Ddp (bucketed, overlapped with
// backward), but each dp rank keeps optimizer state for, and updates, only
// its 1/dp shard of the flat parameters; an all-gather of the updated shards
// then gives every rank the whole model (shard_sync.h). Under expert
// parallelism the expert parameters are sharded over expert-dp instead
// (expert_shards.h): the optimizer owns scattered spans, each owner
// broadcasts its spans over the group that replicates them, and unscaling
// and clipping run on the whole (replicated) gradient buffer.
#pragma once
#include <optional>

#include "parallel/data/ddp.h"
#include "parallel/zero/expert_shards.h"

namespace parallm {

class Zero1 : public Ddp {
 public:
  // edp: the expert-data-parallel group (null: size 1); used only when the
  // model is expert parallel.
  Zero1(TrainableModel& model, comm::Communicator* dp, const DpOptions& opts,
        const OptimizerConfig& optim, Allocator& alloc, comm::Communicator* edp = nullptr);

 protected:
  void update(double lr, float* grads) override;

 private:
  std::optional<ExpertShards> expert_shards_;  // set under expert parallelism
};

}  // namespace parallm
