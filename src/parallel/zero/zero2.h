// Zero2: ZeRO stage 2, optimizer states and gradients sharded. Each unit's
// gradients are reduced to their owners as backward completes them
// (grad_shard_reducer.h), so a rank keeps only its 1/dp gradient shard; it
// updates that shard and all-gathers the parameters (shard_sync.h). Under
// expert parallelism a rank owns the dense elements of its dp shard and its
// expert-dp shard of the expert elements (expert_shards.h): dense gradients
// are reduced over dp, expert gradients over expert-dp, the optimizer owns
// the scattered spans, and each owner broadcasts its spans after the update.
#pragma once
#include <memory>
#include <optional>

#include "parallel/data/data_parallel.h"
#include "parallel/zero/expert_shards.h"
#include "parallel/zero/grad_shard_reducer.h"

namespace parallm {

class Zero2 : public DataParallel {
 public:
  // dp: at least two ranks. edp: the expert-dp group of an expert-parallel
  // model (null: size 1).
  Zero2(TrainableModel& model, comm::Communicator* dp, const DpOptions& opts,
        const OptimizerConfig& optim, Allocator& alloc, comm::Communicator* edp = nullptr);
  void begin_step() override;
  int64_t unit_buffer_bytes() const override { return shard_reducer_->staging_bytes(); }

 protected:
  void finish_reduction() override { shard_reducer_->finish(); }
  float* norm_grads() const override { return shard_reducer_->shard(); }
  float* update_grads() const override { return shard_reducer_->shard(); }
  void update(double lr, float* grads) override;
  int64_t update_count() const override;
  double grad_norm(const float* gn, const GradNormGroups& groups,
                   std::span<double> also_summed) override;
  int64_t first_nonfinite_local(const float* gn) const override;
  // Called before each unit's forward and backward (TrainableModel::set_unit_hook).
  virtual void on_unit(UnitPass pass, int segment);

  std::unique_ptr<GradShardReducer> shard_reducer_;
  std::optional<ExpertShards> expert_shards_;  // set under expert parallelism
  std::vector<SpanOwners> owners_;             // its ownership tables (else empty)
};

}  // namespace parallm
