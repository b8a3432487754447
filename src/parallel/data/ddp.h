// Ddp: PyTorch DistributedDataParallel's technique. Every rank holds the
// whole model, its gradients and a replicated optimizer; gradients are summed
// over dp in buckets (bucket_plan.h) that start all-reducing as backward
// completes them (grad_reducer.h), and every rank applies the same update,
// so no parameter sync follows. With dp == 1 it is the one-process step.
#pragma once
#include <memory>

#include "parallel/data/data_parallel.h"
#include "parallel/data/grad_reducer.h"

namespace parallm {

class Ddp : public DataParallel {
 public:
  Ddp(TrainableModel& model, comm::Communicator* dp, const DpOptions& opts,
      const OptimizerConfig& optim, Allocator& alloc);
  void begin_micro_batch(bool last) override;

 protected:
  // ZeRO-1 shares the reduction and keeps the optimizer on its shard
  // (OwnSpans: the subclass builds it, ZeRO-1 under expert parallelism).
  enum class Optimizing { Everything, OwnShard, OwnSpans };
  Ddp(TrainableModel& model, comm::Communicator* dp, const DpOptions& opts,
      const OptimizerConfig& optim, Allocator& alloc, Optimizing what);
  void finish_reduction() override;
  void update(double lr, float* grads) override;

 private:
  std::unique_ptr<GradReducer> reducer_;  // null with dp == 1
};

}  // namespace parallm
