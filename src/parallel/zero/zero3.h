// Zero3: ZeRO stage 3, parameters sharded too. Beyond Zero2, a rank keeps
// only its 1/dp shard of the values; each unit's parameters are all-gathered
// just before its forward and its backward, the next unit's prefetched
// (param_gatherer.h). The update writes the shard in place, so no sync
// follows: units are gathered again on demand.
#pragma once
#include <memory>

#include "parallel/zero/param_gatherer.h"
#include "parallel/zero/zero2.h"

namespace parallm {

class Zero3 : public Zero2 {
 public:
  Zero3(Transformer& model, comm::Communicator* dp, const DpOptions& opts,
        const OptimizerConfig& optim, Allocator& alloc);
  const float* shard_values() const override { return gatherer_->shard(); }
  int64_t unit_buffer_bytes() const override;
  std::vector<float> full_parameters() override { return gatherer_->full_values(); }

 protected:
  void update(double lr, float* grads) override;
  void on_unit(Transformer::UnitPass pass, int segment) override;

 private:
  std::unique_ptr<ParamGatherer> gatherer_;
};

}  // namespace parallm
