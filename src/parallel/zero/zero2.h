// Zero2: ZeRO stage 2, optimizer states and gradients sharded. Each unit's
// gradients are reduce-scattered as backward completes them
// (grad_shard_reducer.h), so a rank keeps only its 1/dp gradient shard; it
// updates that shard and all-gathers the parameters (shard_sync.h).
#pragma once
#include <memory>

#include "parallel/data/data_parallel.h"
#include "parallel/zero/grad_shard_reducer.h"

namespace parallm {

class Zero2 : public DataParallel {
 public:
  // dp: at least two ranks.
  Zero2(Transformer& model, comm::Communicator* dp, const DpOptions& opts,
        const OptimizerConfig& optim, Allocator& alloc);
  void begin_step() override;
  int64_t unit_buffer_bytes() const override { return shard_reducer_->staging_bytes(); }

 protected:
  void finish_reduction() override { shard_reducer_->finish(); }
  float* norm_grads() const override { return shard_reducer_->shard(); }
  float* update_grads() const override { return shard_reducer_->shard(); }
  void update(double lr, float* grads) override;
  // Called before each unit's forward and backward (Transformer::set_unit_hook).
  virtual void on_unit(Transformer::UnitPass pass, int segment);

  std::unique_ptr<GradShardReducer> shard_reducer_;
};

}  // namespace parallm
