// Zero3: ZeRO stage 3, parameters sharded too. Beyond Zero2, a rank keeps
// only the values it owns; each unit's parameters are gathered just before
// its forward and its backward, the next unit's prefetched
// (param_gatherer.h). The update writes the shard in place, so no sync
// follows: units are gathered again on demand. Under expert parallelism
// values are owned as ZeRO-2 owns gradients (expert_shards.h): dense spans
// over dp, expert spans over expert-dp, so a unit's dense pieces are
// gathered over dp and its expert pieces over expert-dp (none at size 1).
// Invariant: the value shard and the gradient shard pack the same spans.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "parallel/zero/param_gatherer.h"
#include "parallel/zero/zero2.h"

namespace parallm {

class Zero3 : public Zero2 {
 public:
  // edp: the expert-dp group of an expert-parallel model (null: size 1).
  Zero3(TrainableModel& model, comm::Communicator* dp, const DpOptions& opts,
        const OptimizerConfig& optim, Allocator& alloc, comm::Communicator* edp = nullptr);
  // Without ep: flat elements [shards().begin(dp_rank()), end). Under ep
  // the shard packs scattered spans: owned_values() says which.
  const float* shard_values() const override { return gatherer_->shard(); }
  std::optional<std::vector<ValueSpan>> owned_values() const override;
  int64_t unit_buffer_bytes() const override;
  std::vector<float> full_parameters() override { return gatherer_->full_values(); }

 protected:
  void update(double lr, float* grads) override;
  void on_unit(UnitPass pass, int segment) override;

 private:
  std::unique_ptr<ParamGatherer> gatherer_;
};

}  // namespace parallm
